"""The shared governance step: measure → compact when due → apply atomically → project."""

from __future__ import annotations

import asyncio
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import (
    CompactPolicy,
    CompactResult,
    ConfigError,
    ContextProjector,
    FunctionCall,
    FunctionCallOutput,
    Governor,
    InMemoryMemory,
    LadderCompressor,
    MemorySnapshot,
    Message,
    Tool,
    counter_for,
    tokens_over,
)
from compactkit.budget import budget_for
from compactkit.governance import every_turns
from compactkit.governance.policy import usage_over
from compactkit.items import is_summary_message, item_text
from compactkit.memory import AgentMemory
from compactkit.runtime import (
    CompactionEvent,
    CompactionRequest,
    CompactionVetoed,
    GovernedStep,
    ProjectionEvent,
)

MODEL = "gpt-4"  # an 8,192-token window: a few dozen tool results overflow it
TOOLS = [Tool(name="read_file", description="Read a file.", parameters={"type": "object"})]


def fill(memory: AgentMemory, rounds: int, *, start: int = 0, size: int = 60) -> None:
    """A user turn, then ``rounds`` read_file calls each with a sizeable output."""
    memory.add_user_input("Fix the failing tests in src/")
    for n in range(start, start + rounds):
        call_id = f"call_{n}"
        memory.add_output_items(
            [FunctionCall(call_id=call_id, name="read_file", arguments=f'{{"path": "m{n}.py"}}')]
        )
        memory.add_tool_output(call_id, f"# module {n}\n" + f"value_{n} = {n}\n" * size)


def no_orphans(step: GovernedStep) -> None:
    calls = {i.call_id for i in step.items if isinstance(i, FunctionCall)}
    outputs = {i.call_id for i in step.items if isinstance(i, FunctionCallOutput)}
    assert calls == outputs


def test_a_small_memory_is_only_projected() -> None:
    governor = Governor.for_model(MODEL)
    memory = InMemoryMemory()
    fill(memory, 2)
    step = governor.step(memory, instructions="You are a coding agent.", tools=TOOLS)
    assert step.compaction is None and not step.compacted
    assert [e.kind for e in step.events] == ["projection"]
    assert step.items[0].type == "message" and step.items[0].role == "system"
    assert step.projection.tokens <= step.projection.budget == budget_for(MODEL).usable_input
    assert len(step.items) == 1 + len(memory.snapshot().items)


def test_over_the_trigger_it_compacts_applies_and_loses_nothing() -> None:
    seen: list[object] = []
    governor = Governor.for_model(MODEL, on_event=seen.append)
    memory = InMemoryMemory()
    fill(memory, 40)
    written = len(memory.history())
    budget = budget_for(MODEL)
    step = governor.step(memory, instructions="You are a coding agent.", tools=TOOLS)
    assert step.compacted
    assert step.compaction is not None and step.compaction.changed
    (event,) = [e for e in step.events if isinstance(e, CompactionEvent)]
    assert event.applied and event.outcome in ("compacted", "fallback")
    assert seen == list(step.events)  # the callback saw every event, in order
    after = governor.policy.measure(  # type: ignore[union-attr]
        memory.snapshot(), governor.counter, instructions="You are a coding agent.", tools=TOOLS
    )
    assert after.tokens <= budget.target_tokens  # the target left room for instructions+tools
    assert len(memory.history()) == written  # compaction archives, never deletes
    no_orphans(step)
    # the next step does not fire again (hysteresis)
    again = governor.step(memory, instructions="You are a coding agent.", tools=TOOLS)
    assert again.compaction is None


def test_force_compacts_when_the_policy_would_not() -> None:
    counter = counter_for(MODEL)
    policy = CompactPolicy(None, target=400, budget=budget_for(MODEL).usable_input)
    governor = Governor(ContextProjector.for_model(MODEL), policy=policy, counter=counter)
    memory = InMemoryMemory()
    fill(memory, 6)
    assert governor.step(memory).compaction is None
    step = governor.step(memory, force=True)
    (event,) = [e for e in step.events if isinstance(e, CompactionEvent)]
    assert event.forced and event.applied
    assert memory.summary  # the digest folded the old reads


def test_a_veto_leaves_the_memory_unchanged() -> None:
    asked: list[CompactionRequest] = []

    def hook(request: CompactionRequest) -> bool:
        asked.append(request)
        return False

    governor = Governor.for_model(MODEL, before_compaction=hook)
    memory = InMemoryMemory()
    fill(memory, 40)
    before = memory.snapshot()
    step = governor.step(memory, tools=TOOLS)
    assert memory.snapshot() == before
    assert [type(e) for e in step.events] == [CompactionVetoed, ProjectionEvent]
    assert asked[0].state.tokens > budget_for(MODEL).trigger_tokens and not asked[0].forced
    assert step.projection.tokens <= step.projection.budget  # still a prompt that fits


class Raising:
    name = "raising"

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        raise RuntimeError("summarizer exploded")


def test_a_raising_compressor_is_a_failed_event_and_the_step_still_projects() -> None:
    governor = Governor.for_model(MODEL, compressor=Raising())
    memory = InMemoryMemory()
    fill(memory, 40)
    before = memory.snapshot()
    step = governor.step(memory, tools=TOOLS)
    (event,) = [e for e in step.events if isinstance(e, CompactionEvent)]
    assert event.outcome == "failed" and not event.applied
    assert event.error is not None and "summarizer exploded" in event.error
    assert memory.snapshot() == before
    assert step.projection.tokens <= step.projection.budget


class WritesMeanwhile:
    """Compacts properly, but another writer changes the memory while it runs."""

    def __init__(self, memory: AgentMemory, write: str) -> None:
        self.memory, self.write = memory, write
        self.inner = LadderCompressor(target_tokens=2_000, counter=counter_for(MODEL))

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        if self.write == "pin":
            first = snapshot.items[0].seq
            assert first is not None
            self.memory.pin(first)
        else:
            self.memory.add_user_input("a message written while compacting")
        return self.inner.compress(snapshot)


def test_a_concurrent_change_refuses_the_stale_result_and_loses_nothing() -> None:
    memory = InMemoryMemory()
    governor = Governor.for_model(MODEL, compressor=WritesMeanwhile(memory, "pin"))
    fill(memory, 40)
    written = len(memory.history())
    step = governor.step(memory, tools=TOOLS)
    (event,) = [e for e in step.events if isinstance(e, CompactionEvent)]
    assert not event.applied and event.outcome != "failed"
    assert event.error is not None and "changed while compacting" in event.error
    assert memory.snapshot().items[0].pinned  # the concurrent write stands
    assert not memory.summary and len(memory.snapshot().items) == written
    assert step.projection.tokens <= step.projection.budget


def test_a_concurrent_append_is_kept_and_projected() -> None:
    memory = InMemoryMemory()
    governor = Governor.for_model(MODEL, compressor=WritesMeanwhile(memory, "append"))
    fill(memory, 40)
    step = governor.step(memory, tools=TOOLS)
    assert item_text(memory.snapshot().items[-1]) == "a message written while compacting"
    assert item_text(step.items[-1]) == "a message written while compacting"
    assert len(memory.history()) == 1 + 2 * 40 + 1


def test_reported_usage_fires_the_usage_trigger_and_calibrates() -> None:
    governor = Governor.for_model(MODEL)
    memory = InMemoryMemory()
    fill(memory, 4)
    first = governor.step(memory, tools=TOOLS)
    assert first.compaction is None
    # the provider counted far more than the local counter did (another tokenizer, images…)
    governor.observe_usage(first.projection.tokens * 3, first.projection)
    assert governor.calibration > 1.0
    second = governor.step(memory, tools=TOOLS)
    assert second.compacted
    assert second.state is not None and second.state.last_usage == first.projection.tokens * 3
    assert second.projection.budget < budget_for(MODEL).usable_input  # tightened


def test_usage_given_to_step_feeds_the_trigger_too() -> None:
    budget = budget_for(MODEL)
    governor = Governor.for_model(MODEL)
    memory = InMemoryMemory()
    fill(memory, 3)
    step = governor.step(memory, usage=budget.trigger_tokens + 1)
    assert step.state is not None and step.state.last_usage == budget.trigger_tokens + 1
    # only the usage trigger could fire: the local count is small
    assert step.compaction is not None


def test_one_governor_keeps_counters_per_memory() -> None:
    budget = budget_for(MODEL)
    policy = CompactPolicy(every_turns(3), target=budget.target_tokens, budget=budget.usable_input)
    governor = Governor(ContextProjector.for_model(MODEL), policy=policy)
    first, second = InMemoryMemory(), InMemoryMemory()
    fill(first, 1)
    fill(second, 1)
    for _ in range(2):
        governor.step(first)
        governor.step(second)
    assert governor.step(first).state.turns_since_compaction == 2  # type: ignore[union-attr]
    assert governor.step(second).state.turns_since_compaction == 2  # type: ignore[union-attr]


def test_compaction_off_is_explicit() -> None:
    governor = Governor.for_model(MODEL, compaction=False)
    assert governor.policy is None and governor.compressor is None
    memory = InMemoryMemory()
    fill(memory, 40)
    before = memory.snapshot()
    assert governor.step(memory).compaction is None
    forced = governor.step(memory, force=True)
    (event,) = [e for e in forced.events if isinstance(e, CompactionEvent)]
    assert event.outcome == "failed" and "compaction is off" in (event.error or "")
    assert memory.snapshot() == before
    with pytest.raises(ConfigError, match="compaction=False"):
        Governor.for_model(MODEL, compaction=False, policy=CompactPolicy.for_model(MODEL))


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="model"):
        Governor.for_model("")
    with pytest.raises(ConfigError, match="ContextProjector"):
        Governor("gpt-4")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="summary_role"):
        Governor.for_model(MODEL, projector=ContextProjector.for_model(MODEL), summary_role="user")
    governor = Governor.for_model(MODEL)
    with pytest.raises(ConfigError, match="AgentMemory"):
        governor.step(memory=[])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="prompt_tokens"):
        governor.observe_usage(-1, governor.step(InMemoryMemory()).projection)


def test_the_summary_role_reaches_the_prompt() -> None:
    governor = Governor.for_model(MODEL, summary_role="user")
    memory = InMemoryMemory()
    fill(memory, 40)
    step = governor.step(memory, tools=TOOLS)
    assert step.compacted
    (summary,) = [i for i in step.items if is_summary_message(i)]
    assert isinstance(summary, Message) and summary.role == "user"


def test_events_are_logged_under_the_compactkit_logger(caplog: pytest.LogCaptureFixture) -> None:
    governor = Governor.for_model(MODEL, compressor=Raising())
    memory = InMemoryMemory()
    fill(memory, 40)
    with caplog.at_level(logging.DEBUG, logger="compactkit"):
        governor.step(memory, tools=TOOLS)
    records = [r for r in caplog.records if r.name == "compactkit"]
    assert any(r.levelno == logging.WARNING and "summarizer exploded" in r.message for r in records)
    assert any(r.message.startswith("projection:") for r in records)


class AsyncOnly:
    """A compressor with an async path; the sync one must not be used by astep."""

    name = "async-ladder"

    def __init__(self) -> None:
        self.inner = LadderCompressor(target_tokens=2_000, counter=counter_for(MODEL))
        self.used: list[str] = []

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        self.used.append("sync")
        return self.inner.compress(snapshot)

    async def acompress(self, snapshot: MemorySnapshot) -> CompactResult:
        self.used.append("async")
        await asyncio.sleep(0)
        return self.inner.compress(snapshot)


def test_astep_uses_acompress_and_matches_step() -> None:
    compressor = AsyncOnly()
    governor = Governor.for_model(MODEL, compressor=compressor)
    memory = InMemoryMemory()
    fill(memory, 40)
    step = asyncio.run(governor.astep(memory, tools=TOOLS))
    assert compressor.used == ["async"] and step.compacted
    no_orphans(step)
    # a sync compressor runs in a worker thread under astep, with the same result as step
    a, b = InMemoryMemory(), InMemoryMemory()
    fill(a, 40)
    fill(b, 40)
    sync_step = Governor.for_model(MODEL).step(a, tools=TOOLS)
    async_step = asyncio.run(Governor.for_model(MODEL).astep(b, tools=TOOLS))
    assert [i.model_dump(exclude={"seq"}) for i in sync_step.items] == [
        i.model_dump(exclude={"seq"}) for i in async_step.items
    ]


def test_overflow_tightens_the_next_forced_step() -> None:
    governor = Governor.for_model(MODEL)
    memory = InMemoryMemory()
    fill(memory, 20)
    first = governor.step(memory, tools=TOOLS)
    governor.observe_overflow(
        first.projection, reported_tokens=budget_for(MODEL).profile.context_window
    )
    forced = governor.step(memory, tools=TOOLS, force=True)
    assert forced.compacted
    assert forced.projection.tokens < first.projection.tokens


@settings(max_examples=25, deadline=None)
@given(
    rounds=st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=12),
    size=st.integers(min_value=1, max_value=200),
)
def test_every_step_fits_and_nothing_is_lost(rounds: list[int], size: int) -> None:
    governor = Governor.for_model(
        MODEL,
        policy=CompactPolicy.for_model(
            MODEL, trigger=tokens_over(3_000) | usage_over(3_000), target=1_500
        ),
    )
    memory = InMemoryMemory()
    written = 0
    for turn, count in enumerate(rounds):
        fill(memory, count, start=turn * 10, size=size)
        written += 1 + 2 * count
        step = governor.step(memory, instructions="Be brief.", tools=TOOLS)
        assert step.projection.tokens <= step.projection.budget
        no_orphans(step)
        assert len(memory.history()) == written


def test_a_usage_observed_for_a_prompt_feeds_its_own_memorys_next_step() -> None:
    # The governor remembers which memory a prompt came from without keeping the prompt alive.
    governor = Governor.for_model(MODEL)
    memory, other = InMemoryMemory(), InMemoryMemory()
    for each in (memory, other):
        each.add_user_input("hello")
    step = governor.step(memory)
    governor.step(other)
    governor.observe_usage(10_000_000, step.projection)  # far over the trigger
    assert governor.step(other).compaction is None
    assert governor.step(memory).compaction is not None
