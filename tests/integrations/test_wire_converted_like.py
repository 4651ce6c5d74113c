"""``WireConverter.converted_like``: the messages of a list of items taken from the conversion of
a list just like it (a compaction's prompt and the history it returns) are those a conversion
from nothing gives, and the slot it fills resumes as if it had converted them itself."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.integrations import MessageCompactor
from compactkit.integrations._wire import WireConverter
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

# One position of the second list: the same object, an equal copy without a seq (a summary
# rendered again), an equal copy with its seq, or another item.
CHANGE = st.sampled_from(["same"] * 6 + ["copy", "copy_seq", "other"])


def _items(n: int, seq_from: int) -> list[Item]:
    """A conversation of ``n`` items: a summary-like message without a seq, then user turns and
    tool round trips, with seqs."""
    items: list[Item] = [Message(role="user", content="[summary] so far: nothing")]
    seq = seq_from
    while len(items) < n:
        k = len(items)
        if k % 3 == 1:
            items.append(Message(role="user", content=f"ask {k}", seq=seq))
        elif k % 3 == 2:
            items.append(FunctionCall(call_id=f"c{k}", name="read", arguments="{}", seq=seq))
        else:
            items.append(FunctionCallOutput(call_id=f"c{k - 1}", output=f"out {k}", seq=seq))
        seq += 1
    return items


def _changed(items: list[Item], changes: list[str]) -> list[Item]:
    out: list[Item] = []
    for item, change in zip(items, changes, strict=False):
        if change == "copy":
            out.append(item.model_copy(update={"seq": None}) if item.seq is None else item)
        elif change == "copy_seq":
            out.append(item.model_copy())
        elif change == "other" and isinstance(item, Message):
            out.append(item.model_copy(update={"content": f"{item.content} (edited)"}))
        else:
            out.append(item)
    return [*out, *items[len(out) :]]


def _originals(items: list[Item], every: int) -> dict[int, tuple[Any, ...]]:
    """Messages sent as given: each ``every``-th user message with a seq stands for itself."""
    return {
        item.seq: ({"role": "user", "content": f"as given {item.seq}"}, item)
        for k, item in enumerate(items)
        if isinstance(item, Message) and item.seq is not None and k % every == 0
    }


def _fresh(items: list[Item], originals: dict[int, tuple[Any, ...]]) -> list[Any]:
    return WireConverter("chat").from_items(items, originals)[1]


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 14),
    changes=st.lists(CHANGE, max_size=14),
    every=st.integers(1, 3),
    more=st.integers(0, 4),
)
def test_taken_like_converted_afresh(n: int, changes: list[str], every: int, more: int) -> None:
    items = _items(n, 1)
    other = _changed(items, changes)
    originals = _originals(items, every)
    converter = WireConverter("chat")
    sent = converter.from_items(items, originals)[1]
    assert sent == _fresh(items, originals)
    like = converter.converted_like(other, originals, like="send", slot="history")
    if like is not None:
        assert like == _fresh(other, originals)
        assert like is not sent
        # The messages it shares with ``sent`` are those converting ``other`` itself shares.
        reference = WireConverter("chat")
        shared = reference.from_items(items, originals)[1]
        converted = reference.from_items(other, originals, slot="history")[1]
        assert [a is b for a, b in zip(like, sent, strict=True)] == [
            a is b for a, b in zip(converted, shared, strict=True)
        ]
    else:  # (only a list that differs by more than equal seq-less copies is refused)
        assert any(
            a is not b and (a.seq is not None or a != b) for a, b in zip(items, other, strict=True)
        )
        converter.from_items(other, originals, slot="history")
    # Both slots resume: each grown list converts as it would from nothing.
    grown = _items(n + more, 1)[n:] if more else []
    grown = [item.model_copy(update={"seq": 100 + k}) for k, item in enumerate(grown)]
    for slot, base in (("history", other), ("send", items), ("history", other)):
        longer = [*base, *grown]
        assert converter.from_items(longer, originals, slot=slot)[1] == _fresh(longer, originals)
    # Taken again from a prompt that resumed an earlier one (its runs: the earlier ones kept).
    last = [*other, *grown[:-1]]
    converter.from_items([*items, *grown[:-1]], originals)
    fresh = WireConverter("chat")
    fresh.from_items([*items, *grown[:-1]], originals)
    assert converter._resumes["send"].runs == fresh._resumes["send"].runs  # (resumed: the same)
    again = converter.converted_like(last, originals, like="send", slot="history")
    assert again is None or again == _fresh(last, originals)


def test_refused_for_anthropic_and_other_originals() -> None:
    items = _items(6, 1)
    originals = _originals(items, 1)
    for format in ("anthropic",):
        converter = WireConverter(format)  # type: ignore[arg-type]
        converter.from_items(items, originals)
        assert converter.converted_like(items, originals, like="send", slot="history") is None
    converter = WireConverter("chat")
    converter.from_items(items, originals)
    assert converter.converted_like(items, dict(originals), like="send", slot="history") is None
    assert converter.converted_like(items, originals, like="send", slot="history") is not None


def _compacted_turn() -> tuple[MessageCompactor, Any, list[dict[str, Any]]]:
    """A compactor just after a compaction, its result, and the conversation so far."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    compactor = MessageCompactor("gpt-4o", budget=3000)
    for step in range(60):
        messages = [
            *messages,
            {"role": "user", "content": f"step {step}: " + "details " * 150},
            {"role": "assistant", "content": f"done {step}"},
        ]
        turn = compactor(messages)
        if turn.compacted:
            return compactor, turn, messages
        messages = list(turn.history)
    raise AssertionError("no compaction")


def test_a_history_edited_in_place_leaves_the_next_prompt_alone() -> None:
    compactor, turn, messages = _compacted_turn()
    mine = {id(message) for message in messages}
    sent = json.dumps(turn.send)
    for message in turn.history:  # the caller marks compactkit's messages of its history
        if id(message) not in mine and isinstance(message.get("content"), str):
            message["content"] = "EDITED " + message["content"]
    summary = next(m for m in json.loads(sent) if "compactkit_summary" in str(m["content"]))
    again = compactor([*turn.history, {"role": "user", "content": "next"}])
    assert summary in again.send  # as compactkit wrote it


def test_marks_added_to_the_prompt_stay_out_of_the_history() -> None:
    _, turn, messages = _compacted_turn()
    mine = {id(message) for message in messages}
    for message in turn.send:  # request-only marks on compactkit's messages
        if id(message) not in mine:
            message["cache_control"] = {"type": "ephemeral"}
    assert any(id(message) not in mine for message in turn.history)
    assert not any("cache_control" in message for message in turn.history)
