"""``plan_apply`` decides the usual compaction result (every item an active one, each once, no
pin dropped or taken off) in C loops (``_rules._kept_as_stored``). Held here to the general
walk on random results, valid and not: the same plan (the very item objects, in order, the
same archived items and seq counter) or the same refusal."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit.errors import ConfigError
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot
from compactkit.memory import _rules
from compactkit.memory._rules import ApplyPlan, plan_apply

# What becomes of each active item in the result: kept as it is, left out, replaced by an
# object with its seq (a masked output), kept twice, unpinned; or a new item (no seq), or an
# item with a seq that is not active.
FATE = st.sampled_from(
    ["keep"] * 8 + ["drop"] * 3 + ["replace", "twice", "unpin", "new", "stranger"]
)


def _active(pins: list[bool]) -> list[Item]:
    items: list[Item] = []
    for seq, pinned in enumerate(pins, 1):
        if seq % 3 == 1:
            items.append(Message(role="user", content=f"ask {seq}", seq=seq, pinned=pinned))
        elif seq % 3 == 2:
            items.append(
                FunctionCall(call_id=f"c{seq}", name="run", arguments="{}", seq=seq, pinned=pinned)
            )
        else:
            items.append(
                FunctionCallOutput(call_id=f"c{seq - 1}", output="x", seq=seq, pinned=pinned)
            )
    return items


def _result(active: list[Item], fates: list[str]) -> list[Item]:
    out: list[Item] = []
    for item, fate in zip(active, fates, strict=False):
        if fate == "drop":
            continue
        if fate == "replace":
            out.append(item.model_copy(update={"pinned": item.pinned}))
        elif fate == "twice":
            out.extend([item, item])
        elif fate == "unpin":
            out.append(item.model_copy(update={"pinned": False}))
        elif fate == "new":
            out.extend([item, Message(role="assistant", content="a note")])
        elif fate == "stranger":
            out.extend([item, Message(role="user", content="?", seq=10_000)])
        else:
            out.append(item)
    return [*out, *active[len(fates) :]]


def _plan(active: list[Item], result: list[Item], appended_from: int | None) -> Any:
    outcome = CompactResult(
        snapshot=MemorySnapshot(summary="s", items=tuple(result), version=1),
        outcome="compacted",
        stats=CompactStats(compressor="test", items_before=len(active), items_after=len(result)),
    )
    try:
        return plan_apply(active, outcome, 100, appended_from=appended_from)
    except ConfigError as exc:
        return str(exc)


def _same(fast: Any, general: Any) -> bool:
    if isinstance(fast, str) or isinstance(general, str):
        return fast == general
    assert isinstance(fast, ApplyPlan) and isinstance(general, ApplyPlan)
    return (
        len(fast.items) == len(general.items)
        and all(a is b or a == b for a, b in zip(fast.items, general.items, strict=True))
        and [id(i) for i in fast.archived] == [id(i) for i in general.archived]
        and fast.next_seq == general.next_seq
    )


@settings(max_examples=300, deadline=None)
@example(pins=[True, False, False], fates=["unpin"], appended=0)  # a pin taken off
@example(pins=[False, True, False], fates=["keep", "drop"], appended=0)  # a pin dropped
@given(
    pins=st.lists(st.integers(0, 7).map(lambda n: n == 0), min_size=1, max_size=12),
    fates=st.lists(FATE, max_size=12),
    appended=st.integers(0, 3),
)
def test_the_fast_plan_is_the_general_walks(
    pins: list[bool], fates: list[str], appended: int
) -> None:
    active = _active(pins)
    # A rebase over appends: the last ``appended`` active items came after the result's snapshot.
    cut = max(1, len(active) - appended)
    appended_from = active[cut].seq if cut < len(active) else None
    result = _result(active[:cut], fates)
    fast = _plan(active, result, appended_from)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(_rules, "_kept_as_stored", lambda *args: None)
        general = _plan(active, result, appended_from)
    assert _same(fast, general), (fast, general)


def test_the_usual_result_takes_the_fast_plan() -> None:
    active = _active([False, True, False, False, False, False])
    result = [active[0], active[1], active[4], active[5]]
    assert _rules._kept_as_stored(active, result, 100) is not None
