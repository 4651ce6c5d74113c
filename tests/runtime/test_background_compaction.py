"""Background compaction: soft start, apply over appends, discard, failure, cancellation, SQL."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from sql_support import sqlite_database

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors.window import WindowedCompressor
from compactkit.errors import ConfigError
from compactkit.governance.policy import CompactPolicy, tokens_over
from compactkit.governance.projector import ContextProjector
from compactkit.items import FunctionCall
from compactkit.items.snapshot import CompactResult, MemorySnapshot
from compactkit.memory.in_memory import InMemoryMemory
from compactkit.runtime.background import BackgroundCompaction
from compactkit.runtime.events import (
    BackgroundCompactionEvent,
    CompactionEvent,
    CompactionRequest,
    Event,
)
from compactkit.runtime.governor import Governor
from compactkit.sql.memory import SQLMemory

COUNTER = TiktokenCounter("o200k_base")
BUDGET, HARD, TARGET, SOFT = 6000, 4000, 1500, 2500


class Gated:
    """A compressor that folds like the window compressor, but only once ``gate`` opens."""

    def __init__(self, *, fail: bool = False) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.calls = 0
        self.fail = fail
        self.name = "gated-window"
        self._inner = WindowedCompressor(max_tokens=TARGET, counter=COUNTER)

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        self.calls += 1
        self.entered.set()
        if not self.gate.wait(timeout=60):  # a test that never opens the gate fails, not hangs
            raise RuntimeError("the gate was never opened")
        if self.fail:
            raise RuntimeError("the summarizer is down")
        return self._inner.compress(snapshot)


def governor(compressor: object, events: list[Event], **options: object) -> Governor:
    background = BackgroundCompaction(soft=SOFT, compressor=compressor)  # type: ignore[arg-type]
    return Governor(
        ContextProjector(COUNTER, budget=BUDGET),
        policy=CompactPolicy(tokens_over(HARD), target=TARGET, budget=BUDGET),
        compressor=WindowedCompressor(max_tokens=TARGET, counter=COUNTER),
        on_event=events.append,
        background=background,
        **options,  # type: ignore[arg-type]
    )


def tool_round(memory: object, n: int, tokens: int = 100) -> None:
    call = FunctionCall(call_id=f"c{n}", name="read_file", arguments="{}")
    memory.add_output_items([call])  # type: ignore[attr-defined]
    memory.add_tool_output(f"c{n}", " ".join(f"w{i % 9}" for i in range(tokens)))  # type: ignore[attr-defined]


def statuses(events: list[Event]) -> list[str]:
    return [e.status for e in events if isinstance(e, BackgroundCompactionEvent)]


def fill_to_soft(memory: InMemoryMemory, gov: Governor) -> int:
    """Append tool rounds, stepping after each, until the background compaction starts."""
    memory.add_user_input("fix the parser")
    n = 0
    assert gov.background is not None
    while not gov.background.running(memory):
        tool_round(memory, n)
        gov.step(memory)
        n += 1
    return n


def test_appends_during_a_background_summary_are_kept_and_the_result_applied() -> None:
    events: list[Event] = []
    gated = Gated()
    gov = governor(gated, events)
    memory = InMemoryMemory()
    n = fill_to_soft(memory, gov)
    assert statuses(events) == ["started"]
    before = memory.snapshot()
    for extra in range(n, n + 3):  # the agent goes on while the summary is written
        tool_round(memory, extra)
        step = gov.step(memory)
        assert not step.compacted
    assert memory.snapshot().items[: len(before.items)] == before.items
    appended = memory.snapshot().items[len(before.items) :]
    gated.gate.set()
    assert gov.background is not None and gov.background.join(memory)
    step = gov.step(memory)
    assert statuses(events) == ["started", "applied"]
    assert step.compacted and any(isinstance(e, CompactionEvent) and e.applied for e in step.events)
    after = memory.snapshot()
    assert after.items[-len(appended) :] == appended  # rebased: the new tail is kept as it was
    assert len(after.items) < len(before.items) + len(appended)
    assert gov.background.stats.applied == 1 and gov.background.stats.discarded == 0


def test_a_result_whose_span_another_compaction_folded_is_discarded() -> None:
    events: list[Event] = []
    gated = Gated()
    gov = governor(gated, events)
    memory = InMemoryMemory()
    fill_to_soft(memory, gov)
    memory.compact(WindowedCompressor(max_tokens=800, counter=COUNTER))  # someone else
    compacted = memory.snapshot()
    gated.gate.set()
    assert gov.background is not None and gov.background.join(memory)
    step = gov.step(memory)
    assert statuses(events) == ["started", "discarded"]
    assert not step.compacted
    assert memory.snapshot() == compacted  # untouched by the stale result
    assert gov.background.stats.discarded == 1


def test_a_failing_background_summarizer_leaves_the_memory_as_it_was() -> None:
    events: list[Event] = []
    gated = Gated(fail=True)
    gov = governor(gated, events)
    memory = InMemoryMemory()
    fill_to_soft(memory, gov)
    before = memory.snapshot()
    gated.gate.set()
    assert gov.background is not None and gov.background.join(memory)
    gov.step(memory)
    failed = [e for e in events if isinstance(e, BackgroundCompactionEvent)][-1]
    assert failed.status == "failed" and "the summarizer is down" in (failed.error or "")
    assert memory.snapshot() == before
    assert gov.background.stats.failed == 1
    gov.step(memory)  # the retry waits retry_after steps: no new background run at once
    assert gated.calls == 1


def test_cancel_and_close_never_apply_and_start_nothing_more() -> None:
    events: list[Event] = []
    gated = Gated()
    gov = governor(gated, events)
    memory = InMemoryMemory()
    fill_to_soft(memory, gov)
    assert gov.background is not None
    before = memory.snapshot()
    cancelled = gov.background.close()
    assert [e.status for e in cancelled] == ["cancelled"]
    gated.gate.set()  # the thread finishes on its own; its result is dropped
    gov.step(memory)
    gov.step(memory)
    assert memory.snapshot() == before
    assert statuses(events) == ["started", "cancelled"]
    assert not gov.background.running(memory)


def test_the_hard_threshold_waits_for_the_running_compaction() -> None:
    events: list[Event] = []
    gated = Gated()

    def release(request: CompactionRequest) -> bool:
        if request.state.tokens > HARD:  # asked when the policy fires: let the summary end
            gated.gate.set()
        return True

    gov = governor(gated, events, before_compaction=release)
    memory = InMemoryMemory()
    n = fill_to_soft(memory, gov)
    while not gov.step(memory).compacted:  # the agent goes on until the hard threshold
        tool_round(memory, n)
        n += 1
    assert gov.background is not None
    assert gov.background.stats.hard_waits == 1 and gov.background.stats.applied == 1
    applied = [e for e in events if isinstance(e, BackgroundCompactionEvent)][-1]
    assert applied.status == "applied" and applied.waited_s is not None
    assert gated.calls == 1  # no foreground compaction on top of it


def test_another_workers_sql_compaction_invalidates_the_background_result(tmp_path: Path) -> None:
    url = sqlite_database(tmp_path).url
    events: list[Event] = []
    gated = Gated()
    gov = governor(gated, events)
    ours = SQLMemory(url, "shared-session")
    ours.add_user_input("fix the parser")
    n = 0
    assert gov.background is not None
    while not gov.background.running(ours):
        tool_round(ours, n)
        gov.step(ours)
        n += 1
    assert gated.entered.wait(timeout=60)  # ours holds the compaction lease and is running
    theirs = SQLMemory(url, "shared-session")  # another worker on the same session, past the
    # (advisory) lease: apply's version check is what refuses the stale result
    theirs.apply(WindowedCompressor(max_tokens=800, counter=COUNTER).compress(theirs.snapshot()))
    compacted = theirs.snapshot()
    gated.gate.set()
    assert gov.background.join(ours)
    gov.step(ours)
    assert statuses(events) == ["started", "discarded"]
    assert ours.snapshot().items == compacted.items and ours.snapshot().summary == compacted.summary


def test_async_steps_run_the_summary_as_a_task_and_cancel_it() -> None:
    class AsyncGated(Gated):
        async def acompress(self, snapshot: MemorySnapshot) -> CompactResult:
            self.calls += 1
            await asyncio.Event().wait()  # never finishes on its own
            raise AssertionError("unreachable")

    async def run() -> None:
        events: list[Event] = []
        gated = AsyncGated()
        gov = governor(gated, events)
        memory = InMemoryMemory()
        memory.add_user_input("fix the parser")
        assert gov.background is not None
        n = 0
        while not gov.background.running(memory):
            tool_round(memory, n)
            await gov.astep(memory)
            n += 1
        before = memory.snapshot()
        gov.background.cancel(memory)
        await asyncio.sleep(0)  # let the task see its cancellation
        await gov.astep(memory)
        assert memory.snapshot() == before
        assert statuses(events) == ["started", "cancelled"]
        assert gov.background.stats.cancelled == 1

    asyncio.run(run())


def test_misconfiguration_is_refused() -> None:
    policy = CompactPolicy(tokens_over(HARD), target=TARGET, budget=BUDGET)
    projector = ContextProjector(COUNTER, budget=BUDGET)
    with pytest.raises(ConfigError, match="above the policy's target"):
        Governor(projector, policy=policy, background=BackgroundCompaction(soft=TARGET))
    with pytest.raises(ConfigError, match="needs a policy"):
        Governor(projector, background=BackgroundCompaction())
    with pytest.raises(ConfigError, match="soft"):
        BackgroundCompaction(soft=1.5)
    with pytest.raises(ConfigError, match="BackgroundCompaction"):
        Governor(projector, policy=policy, background=object())  # type: ignore[arg-type]
    default = BackgroundCompaction().soft_tokens(policy)
    assert TARGET < default < HARD
