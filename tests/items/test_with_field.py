"""``with_field`` (a frozen item copied with one field replaced, without pydantic's generic
copy; the SQL memory numbers every stored item with it and masking builds every placeholder
with it) makes exactly the item ``model_copy(update={name: value})`` makes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, with_field

TEXT = st.text(max_size=20)
COMMON = {
    "id": TEXT | st.none(),
    "seq": st.integers(0, 10**6) | st.none(),
    "pinned": st.booleans(),
}
ITEMS = st.one_of(
    st.builds(
        lambda fields: Message(**fields),
        st.fixed_dictionaries(
            {"role": st.sampled_from(["system", "user", "assistant"]), "content": TEXT},
            optional={**COMMON, "name": TEXT | st.none()},
        ),
    ),
    st.builds(
        lambda fields: FunctionCall(**fields),
        st.fixed_dictionaries({"call_id": TEXT, "name": TEXT, "arguments": TEXT}, optional=COMMON),
    ),
    st.builds(
        lambda fields: FunctionCallOutput(**fields),
        st.fixed_dictionaries({"call_id": TEXT, "output": TEXT}, optional=COMMON),
    ),
)


@settings(deadline=None, max_examples=300)
@given(item=ITEMS, seq=st.integers(0, 10**9))
def test_numbering_an_item_is_model_copy(item: Item, seq: int) -> None:
    ours, theirs = with_field(item, "seq", seq), item.model_copy(update={"seq": seq})
    assert type(ours) is type(theirs) and ours == theirs and ours.seq == seq
    assert list(ours.__dict__) == list(theirs.__dict__)  # the fields in the class's order
    assert ours.model_fields_set == theirs.model_fields_set
    assert ours.model_dump_json(exclude_unset=True) == theirs.model_dump_json(exclude_unset=True)
    assert hash(ours) == hash(theirs)
    assert item.seq != seq or item == ours  # the original is left as it was


@settings(deadline=None, max_examples=200)
@given(item=ITEMS, text=TEXT)
def test_a_field_already_set_is_replaced_as_model_copy_replaces_it(item: Item, text: str) -> None:
    name = "output" if isinstance(item, FunctionCallOutput) else "call_id"
    if isinstance(item, Message):
        name = "role" if "role" in item.model_fields_set else "content"
        text = "user" if name == "role" else text
    before = set(item.model_fields_set)
    ours, theirs = with_field(item, name, text), item.model_copy(update={name: text})
    assert ours == theirs and ours.model_fields_set == theirs.model_fields_set
    assert ours.model_dump_json(exclude_unset=True) == theirs.model_dump_json(exclude_unset=True)
    assert item.model_fields_set == before  # the original's set is left as it was


def test_a_model_that_is_not_frozen_gets_a_set_of_its_own() -> None:
    from pydantic import BaseModel

    class Loose(BaseModel):
        a: int = 0

    loose = Loose(a=1)
    copied = with_field(loose, "a", 2)
    assert copied.a == 2 and copied.model_fields_set == {"a"}
    assert copied.__pydantic_fields_set__ is not loose.__pydantic_fields_set__
