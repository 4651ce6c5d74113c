"""``with_seq`` (how a memory numbers the items it stores, sharing one fields-set per item
kind) makes exactly the item ``model_copy(update={"seq": ...})`` makes, and stays immutable."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from compactkit import FunctionCall, FunctionCallOutput, InMemoryMemory, Item, Message
from compactkit.errors import ConfigError
from compactkit.integrations import MessageCompactor
from compactkit.items import Reasoning
from compactkit.memory._inputs import number_in_place, with_seq

TEXT = st.text(max_size=30)
ITEMS = st.one_of(
    st.builds(Message, role=st.sampled_from(["user", "assistant"]), content=TEXT),
    st.builds(Message, role=st.just("user"), content=TEXT, name=TEXT, pinned=st.booleans()),
    st.builds(FunctionCall, call_id=TEXT, name=TEXT, arguments=TEXT),
    st.builds(FunctionCallOutput, call_id=TEXT, output=TEXT),
    st.builds(
        Reasoning,
        format=st.just("responses"),
        payload=st.dictionaries(st.sampled_from(["id", "summary"]), TEXT, max_size=2),
    ),
)


@settings(deadline=None, max_examples=300)
@given(item=ITEMS, seq=st.integers(0, 10**9))
def test_the_same_item_as_model_copy(item: Item, seq: int) -> None:
    ours, plain = with_seq(item, seq), item.model_copy(update={"seq": seq})
    assert type(ours) is type(plain)
    assert ours == plain and ours.seq == seq
    assert ours.model_fields_set == plain.model_fields_set
    assert ours.model_dump(exclude_unset=True) == plain.model_dump(exclude_unset=True)
    assert ours.model_dump_json() == plain.model_dump_json()


def test_stored_items_stay_frozen_and_copy_apart() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("first")
    memory.add_user_input("second")
    first, second = memory.snapshot().items
    with pytest.raises(ValidationError):
        first.content = "changed"  # type: ignore[misc]
    pinned = first.model_copy(update={"pinned": True})
    assert pinned.pinned and "pinned" in pinned.model_fields_set
    assert "pinned" not in second.model_fields_set  # the shared set was not changed
    assert "pinned" not in first.model_fields_set


@settings(deadline=None, max_examples=300)
@given(item=ITEMS, seq=st.integers(0, 10**9))
def test_numbering_in_place_makes_with_seqs_item(item: Item, seq: int) -> None:
    plain = with_seq(item, seq)
    owned = item.model_copy()  # an item its caller built and hands over
    number_in_place(owned, seq)
    assert type(owned) is type(plain)
    assert owned == plain and owned.seq == seq
    assert list(owned.__dict__) == list(plain.__dict__)
    assert owned.model_fields_set == plain.model_fields_set
    assert owned.__pydantic_fields_set__ is plain.__pydantic_fields_set__  # the shared set
    assert owned.model_dump_json() == plain.model_dump_json()
    assert item.seq is None or item.seq != seq or item == owned  # the original is untouched


def test_a_compactor_numbers_only_the_items_it_built() -> None:
    given = Message(role="user", content="an item object, not a dict")
    compactor = MessageCompactor("gpt-4o")
    compactor([given, {"role": "assistant", "content": "a dict"}])
    stored = compactor.governed_memory().snapshot().items
    assert [item.seq for item in stored] == [1, 2]
    assert given.seq is None and "seq" not in given.model_fields_set
    assert all(item is not given for item in stored)


def test_a_refused_write_leaves_the_fresh_items_unnumbered() -> None:
    memory = InMemoryMemory()
    memory.add_read_items([FunctionCall(call_id="c", name="f")])
    output = FunctionCallOutput(call_id="c", output="x")
    memory.add_read_items([output], fresh=True)
    again = FunctionCallOutput(call_id="c", output="twice")
    with pytest.raises(ConfigError):
        memory.add_read_items([again], fresh=True)
    assert again.seq is None and "seq" not in again.model_fields_set
