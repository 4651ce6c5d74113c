"""The ladder's window forgets what it drops: its result is kept only when it reaches the target,
and a ladder built with ``forget=False`` (a ``Governor``'s own) has no window at all."""

from __future__ import annotations

from compactkit import FunctionCall, FunctionCallOutput, Message
from compactkit.budget import TiktokenCounter
from compactkit.compressors import LadderCompressor
from compactkit.items import Item
from compactkit.items.snapshot import MemorySnapshot

COUNTER = TiktokenCounter("o200k_base")


def history() -> list[Item]:
    """A pinned note (with the round trip its turn started) and the newest tool round trip,
    both large, with a small round trip between them that neither masking nor the digest can
    make smaller."""
    return [
        Message(role="user", content="start"),
        Message(role="assistant", content="pinned note " * 400, pinned=True),
        FunctionCall(call_id="first", name="read", arguments="{}"),
        FunctionCallOutput(call_id="first", output="ok"),
        FunctionCall(call_id="small", name="read", arguments="{}"),
        FunctionCallOutput(call_id="small", output="ok"),
        FunctionCall(call_id="newest", name="read", arguments="{}"),
        FunctionCallOutput(call_id="newest", output="line of output\n" * 400),
    ]


def calls(snapshot: MemorySnapshot) -> list[str]:
    return [i.call_id for i in snapshot.items if isinstance(i, FunctionCall)]


def tokens(items: list[Item]) -> int:
    return COUNTER.count(items).tokens


def test_a_window_that_would_miss_the_target_forgets_nothing() -> None:
    items = history()
    small = tokens(items[4:6])
    target = tokens(items) - small - 50  # out of reach even with the small round trip gone
    result = LadderCompressor(target, counter=COUNTER).compress(MemorySnapshot.of(items))
    assert calls(result.snapshot) == ["first", "small", "newest"]
    window = next(s for s in result.stats.details["steps"] if s["step"] == "window")
    assert window["outcome"] == "not kept"


def test_a_window_that_reaches_the_target_still_drops_the_oldest_groups() -> None:
    items = history()
    target = tokens(items) - tokens(items[4:6]) + 5  # reached once the small round trip goes
    result = LadderCompressor(target, counter=COUNTER).compress(MemorySnapshot.of(items))
    assert result.outcome == "compacted" and calls(result.snapshot) == ["first", "newest"]


def test_a_ladder_that_does_not_forget_has_no_window() -> None:
    items = history()
    target = tokens(items) - tokens(items[4:6]) + 5
    ladder = LadderCompressor(target, counter=COUNTER, forget=False)
    result = ladder.compress(MemorySnapshot.of(items))
    assert "window" not in [getattr(step, "name", "") for step in ladder.rungs()]
    assert calls(result.snapshot) == ["first", "small", "newest"]
