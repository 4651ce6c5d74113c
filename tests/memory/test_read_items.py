"""How a memory stores the items a message compactor read: ``add_read_items`` with
``summaries_checked`` (the caller already looked for summary messages) stores what the full
checks store and refuses what they refuse, and ``number_in_place``'s look-up by the identity of
an item's fields set gives every item the shared set ``with_seq`` gives it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import FunctionCall, FunctionCallOutput, InMemoryMemory, Item, Message
from compactkit.errors import ConfigError
from compactkit.formats.chat import plain_chat_message_items
from compactkit.items.snapshot import summary_message
from compactkit.memory._inputs import number_in_place, with_seq

TEXT = st.text(max_size=20) | st.sampled_from(["", "a\udc80b", "done"])
CALL_ID = st.sampled_from(["c1", "c2", "c3"])

# Chat dicts a compactor reads (built by ``formats._chat_fast`` with one fields set per kind).
CHAT = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "system", "assistant"]), "content": TEXT}
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": CALL_ID, "content": TEXT}),
    st.builds(
        lambda call_id, arguments: {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "f", "arguments": arguments},
                }
            ],
        },
        CALL_ID,
        TEXT,
    ),
)
# Items with fields sets of their own, or one set shared across classes (the look-up must tell
# the classes apart).
_SHARED = {"call_id", "name"}


def _own(kind: int, text: str) -> Item:
    if kind == 0:
        return Message(role="user", content=text)
    if kind == 1:
        return FunctionCall(call_id="c9", name="g", arguments=text)
    item: Item = (
        FunctionCall(call_id="c9", name="g")
        if kind == 2
        else FunctionCallOutput(call_id="c9", output=text, name="g")
    )
    object.__setattr__(item, "__pydantic_fields_set__", _SHARED)  # (valid for both classes)
    return item


BUILT = st.one_of(
    CHAT.map(lambda message: plain_chat_message_items(message) or []),
    st.tuples(st.integers(0, 3), TEXT).map(lambda spec: [_own(*spec)]),
)


@settings(deadline=None, max_examples=200)
@given(batches=st.lists(BUILT, min_size=1, max_size=40))
def test_numbering_in_place_gives_with_seqs_shared_set(batches: list[list[Item]]) -> None:
    seq = 0
    for batch in batches:
        for item in batch:
            seq += 1
            expected = with_seq(item, seq)
            number_in_place(item, seq)
            assert item == expected and item.seq == seq
            assert item.__pydantic_fields_set__ is expected.__pydantic_fields_set__
            assert list(item.__dict__) == list(expected.__dict__)


def _stored(items: list[Item], checked: bool) -> Any:
    memory = InMemoryMemory(accept_unknown_call_ids=True)
    try:
        stored = memory.add_read_items(items, fresh=False, summaries_checked=checked)
    except ConfigError as exc:
        return "refused", str(exc)
    return [(item, item.seq, item.model_fields_set) for item in stored]


@settings(deadline=None, max_examples=200)
@given(messages=st.lists(CHAT, min_size=1, max_size=8))
def test_items_with_no_summary_are_stored_alike_checked_or_not(
    messages: list[dict[str, Any]],
) -> None:
    items = [item for message in messages for item in plain_chat_message_items(message) or []]
    assert _stored(items, checked=True) == _stored(items, checked=False)


def test_a_summary_message_is_refused_unless_the_caller_checked() -> None:
    memory = InMemoryMemory()
    with pytest.raises(ConfigError, match="rendered summary message"):
        memory.add_read_items([summary_message("- fixed the build", "user")])


@pytest.mark.parametrize("gap", [2, 10**6])  # the history a list by seq, or a sparse dict
def test_items_read_after_a_restore_are_kept_by_seq(gap: int) -> None:
    from compactkit.items.snapshot import MemorySnapshot

    memory = InMemoryMemory()
    old = [Message(role="user", content="a", seq=1), Message(role="user", content="b", seq=gap)]
    memory.restore(MemorySnapshot(items=tuple(old)))
    read = plain_chat_message_items({"role": "user", "content": "c"}) or []
    read += plain_chat_message_items({"role": "assistant", "content": "d"}) or []
    stored = memory.add_read_items(read, fresh=True, summaries_checked=True)
    assert [item.seq for item in stored] == [gap + 1, gap + 2]
    assert all(seq == item.seq for seq, item in memory._history.items())  # kept by its seq
    assert [(item.seq, item.content) for item in memory.history()] == [  # type: ignore[union-attr]
        (1, "a"),
        (gap, "b"),
        (gap + 1, "c"),
        (gap + 2, "d"),
    ]
