"""The two halves of ``Governor``'s step (moved out of governor.py, behaviour unchanged):
``prepare_step`` measures the memory and decides whether to compact it now, ``finish_step``
applies a compaction's result atomically and projects the prompt. A scheduler
(``compactkit.runtime.scheduling``) runs the compressor between them, through the governor's
public seam (``Governor.prepare`` / ``Governor.finish``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from compactkit.errors import ConcurrencyError
from compactkit.governance.policy import PolicyState
from compactkit.governance.projector import checked_tools
from compactkit.items import Tool
from compactkit.items.snapshot import CompactResult, MemorySnapshot
from compactkit.memory.base import AgentMemory
from compactkit.runtime._compaction import _compaction_event, _off_event
from compactkit.runtime._governor_setup import _require_memory
from compactkit.runtime._governor_track import (
    compacted,
    growth,
    measure_step,
    project_step,
    projection_event,
    step_budget,
)
from compactkit.runtime.events import CompactionRequest, CompactionVetoed, Event
from compactkit.runtime.scheduling import GovernedStep, Instructions, StepPlan

if TYPE_CHECKING:
    import threading

    from compactkit.budget import TokenCounter
    from compactkit.compressors import MemoryCompressor
    from compactkit.governance.policy import CompactPolicy
    from compactkit.governance.projector import ContextProjector
    from compactkit.governance.status import BudgetStatus
    from compactkit.runtime._governor_track import Track
    from compactkit.runtime._owners import ProjectionOwners


class StepParts(Protocol):
    """What the step reads of its ``Governor`` (a protocol: governor.py imports this module)."""

    projector: ContextProjector
    policy: CompactPolicy | None
    counter: TokenCounter
    compressor: MemoryCompressor | None
    before_compaction: Callable[[CompactionRequest], bool] | None
    clock: Callable[[], float]
    status: BudgetStatus | None
    _lock: threading.Lock
    _owners: ProjectionOwners[Track]

    def emit(self, event: Event) -> Event: ...

    def _track(self, memory: AgentMemory) -> Track: ...

    def _factor(self, track: Track) -> float: ...


__all__ = ["finish_step", "prepare_step"]


def prepare_step(
    governor: StepParts,
    memory: AgentMemory,
    instructions: Instructions,
    tools: Sequence[Tool],
    usage: int | None,
    force: bool,
) -> StepPlan:
    """``Governor.prepare``: measure ``memory`` and decide whether to compact it now."""
    _require_memory(memory)
    # Arguments are checked here, before the policy counts them, so a wrong one is named.
    tools = checked_tools(tools)
    governor.projector.check_instructions(instructions)
    track = governor._track(memory)
    if usage is not None:
        track.last_usage = usage
    events: list[Event] = []
    policy = governor.policy
    snapshot, state, due = _measured(governor, memory, track, instructions, tools, force)
    track.requested = False  # a request is for one step: it never repeats itself
    request = None
    if due:
        if state is None:
            state = PolicyState(tokens=0, items=len(snapshot.items), forced=True)
        request = CompactionRequest(
            snapshot=snapshot, state=state, forced=force, model=policy.model if policy else None
        )
        if governor.compressor is None:
            events.append(governor.emit(_off_event()))
            request = None
        elif governor.before_compaction is not None and not governor.before_compaction(request):
            events.append(governor.emit(CompactionVetoed(request)))
            request = None
    return StepPlan(snapshot, state, track, request, events)


def _measured(
    governor: StepParts,
    memory: AgentMemory,
    track: Track,
    instructions: Instructions,
    tools: Sequence[Tool],
    force: bool,
) -> tuple[MemorySnapshot, PolicyState | None, bool]:
    """The step's snapshot, the policy's measure of it and whether a compaction is due."""
    policy = governor.policy
    measured, track.measured = track.measured, None
    if policy is None:
        return memory.snapshot(), None, force or track.requested
    if measured is not None and not force and measured[0].version == memory.version:
        # The plain step measured this step (``measure_step``, which also took the track's
        # base) and found it due: its measure stands, so the trigger and the clock are not
        # asked twice.
        snapshot, state = measured
        return snapshot, state, True
    snapshot = memory.snapshot()
    state, due = measure_step(
        policy,
        snapshot,
        governor.counter,
        track,
        instructions,
        tools,
        force,
        governor.clock,
        governor._factor,
    )
    return snapshot, state, due


def finish_step(
    governor: StepParts,
    memory: AgentMemory,
    plan: StepPlan,
    result: CompactResult | None,
    instructions: Instructions,
    tools: Sequence[Tool],
) -> GovernedStep:
    """``Governor.finish``: apply ``result`` (if any) atomically and project the prompt."""
    snapshot, track, events = plan.snapshot, plan.track, plan.events
    applied = False
    if result is not None:
        applied, error = False, result.error
        if result.changed:
            try:
                applied = memory.apply(result)
            except ConcurrencyError as exc:
                error = f"not applied, the memory changed while compacting: {exc}"
        if applied:
            governor.projector.forget(snapshot)  # the compacted history is not projected again
            snapshot = memory.snapshot()
        assert plan.request is not None
        gained = growth(track, plan.request.state.tokens)
        if applied:
            compacted(
                track,
                governor.policy,
                governor.counter,
                snapshot,
                result,
                instructions,
                tools,
                governor._factor,
            )
        event = _compaction_event(result, applied, plan.request, error, governor.policy, gained)
        events.append(governor.emit(event))
        if not applied:
            snapshot = memory.snapshot()  # a concurrent write may have landed
    factor = governor._factor(track)
    budget = step_budget(governor.projector.budget, governor.policy, factor)
    # What a compaction request is judged by: this step's measure, unless it compacted.
    measured = track.floor if applied else plan.state.tokens if plan.state else None
    projection = project_step(
        governor.projector,
        governor.status,
        governor.counter,
        snapshot,
        instructions,
        tools,
        budget,
        measured,
        track,
        factor,
    )
    track.turn += 1
    track.since += 1
    track.last_step = governor.clock()
    events.append(governor.emit(projection_event(projection)))
    with governor._lock:
        governor._owners.remember(projection, track)
    return GovernedStep(projection, result, tuple(events), plan.state)
