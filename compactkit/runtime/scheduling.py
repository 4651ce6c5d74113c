"""The scheduling seam: where a governed step's compaction runs.

A governed step is always the same three parts, each a public method of the governor
(``StepSeam``):

1. ``prepare`` — measure the memory, ask the policy and the ``before_compaction`` hook; the
   ``StepPlan`` says whether a compaction is requested;
2. the compaction — *when* and *where* the compressor runs is the scheduler's choice;
3. ``finish`` — apply the result atomically and project the prompt.

Two schedulers implement ``CompactionScheduler``: ``ForegroundCompaction`` (the default) runs the
compressor inside the step; ``BackgroundCompaction`` starts it off the step at a soft threshold
and applies its result at a later step. Both use only ``StepSeam``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from compactkit.compressors.base import MemoryCompressor
from compactkit.governance.policy import CompactPolicy, PolicyState
from compactkit.governance.projector import Projection
from compactkit.items import Item, Message, Tool
from compactkit.items.snapshot import CompactResult, MemorySnapshot
from compactkit.memory.base import AgentMemory
from compactkit.memory.lease import CompactionHold, hold_compaction
from compactkit.runtime._compaction import _safe_acompress, _safe_compress
from compactkit.runtime.events import (
    CompactionEvent,
    CompactionRequest,
    CompactionSkipped,
    Event,
)

__all__ = [
    "CompactionScheduler",
    "ForegroundCompaction",
    "GovernedStep",
    "Instructions",
    "StepPlan",
    "StepSeam",
]

Instructions = str | Sequence[Message] | None
"""System instructions as a governance step takes them: text, messages, or none."""


@dataclass(frozen=True)
class GovernedStep:
    """What one governance step produced: the prompt to send and what happened on the way."""

    projection: Projection
    """The prompt: ``.items`` to send, ``.tokens``, ``.budget`` and the ``.report``."""
    compaction: CompactResult | None
    """The compaction result of this step (applied, failed or not applied), if one ran."""
    events: tuple[Event, ...]
    """``CompactionVetoed``/``CompactionSkipped``/``CompactionEvent`` (failures too), then the
    ``ProjectionEvent``."""
    state: PolicyState | None = None
    """The measurement the policy decided on (``None`` when compaction is off)."""

    @property
    def items(self) -> Sequence[Item]:
        """The prompt items to send (``projection.items``)."""
        return self.projection.items

    @property
    def compacted(self) -> bool:
        """Whether this step changed the memory by compacting it."""
        return any(isinstance(e, CompactionEvent) and e.applied for e in self.events)


@dataclass
class StepPlan:
    """What ``StepSeam.prepare`` measured and decided for one step."""

    snapshot: MemorySnapshot
    """The memory as the step read it."""
    state: PolicyState | None
    """The policy's measurement (``None`` when compaction is off)."""
    track: Any
    """The governor's counters for this memory (opaque to a scheduler: pass the plan back)."""
    request: CompactionRequest | None
    """The compaction to run, or ``None`` (not due, vetoed, or no compressor)."""
    events: list[Event]
    """Events so far; a scheduler may add its own in front (they are reported in order)."""


class StepSeam(Protocol):
    """What a scheduler may ask of the governor (``Governor`` implements it)."""

    policy: CompactPolicy | None
    before_compaction: Callable[[CompactionRequest], bool] | None

    def prepare(
        self,
        memory: AgentMemory,
        *,
        instructions: Instructions,
        tools: Sequence[Tool],
        usage: int | None,
        force: bool,
    ) -> StepPlan:
        """Measure ``memory`` and decide whether to compact it now."""
        ...

    def compressor_for(
        self, plan: StepPlan, *, instructions: Instructions, tools: Sequence[Tool]
    ) -> MemoryCompressor | None:
        """The compressor for this step (the default ladder is sized for it)."""
        ...

    def finish(
        self,
        memory: AgentMemory,
        plan: StepPlan,
        result: CompactResult | None,
        *,
        instructions: Instructions,
        tools: Sequence[Tool],
    ) -> GovernedStep:
        """Apply ``result`` (if any) atomically and project the prompt."""
        ...

    def record_compaction(self, memory: AgentMemory) -> None:
        """A compaction was applied to ``memory`` outside a step: reset its counters."""
        ...

    def emit(self, event: Event) -> Event:
        """Report ``event`` to the governor's ``on_event`` handler."""
        ...


class CompactionScheduler(Protocol):
    """Runs a governed step's compaction: in the step, or off it."""

    def step(
        self,
        governor: StepSeam,
        memory: AgentMemory,
        *,
        instructions: Instructions,
        tools: Sequence[Tool],
        usage: int | None,
        force: bool,
    ) -> GovernedStep:
        """One governed step of ``memory``."""
        ...

    async def astep(
        self,
        governor: StepSeam,
        memory: AgentMemory,
        *,
        instructions: Instructions,
        tools: Sequence[Tool],
        usage: int | None,
        force: bool,
    ) -> GovernedStep:
        """``step`` for async code."""
        ...


def hold_for_compaction(
    governor: StepSeam,
    memory: AgentMemory,
    plan: StepPlan,
    prepare: Callable[[], StepPlan],
) -> tuple[StepPlan, CompactionHold | None]:
    """Take the memory's compaction lease before a requested compaction runs in the step (a
    memory shared between processes has one: ``compactkit.memory.lease``).

    When another compactor holds it, the compaction is skipped — no compressor call, a
    ``CompactionSkipped`` event — and the plan goes on without a request. When the memory moved
    on while the lease was taken (or waited for), the step is planned again with ``prepare``:
    a compactor that comes second usually finds nothing left to do. The caller releases the
    returned hold once the result was applied or dropped.
    """
    if plan.request is None:
        return plan, None
    hold = hold_compaction(memory)
    if not hold.taken:
        plan.events.append(governor.emit(CompactionSkipped(plan.request, hold.other or "?")))
        plan.request = None
        return plan, None
    if hold.holder is not None and memory.snapshot().version != plan.snapshot.version:
        events = plan.events
        plan = prepare()
        plan.events[:0] = events
        if plan.request is None:
            hold.release()
            return plan, None
    return plan, hold


class ForegroundCompaction:
    """The default scheduler: a requested compaction runs inside the step that requested it."""

    def step(
        self,
        governor: StepSeam,
        memory: AgentMemory,
        *,
        instructions: Instructions,
        tools: Sequence[Tool],
        usage: int | None,
        force: bool,
    ) -> GovernedStep:
        """Prepare, compact when requested, finish."""

        def prepare() -> StepPlan:
            return governor.prepare(
                memory, instructions=instructions, tools=tools, usage=usage, force=force
            )

        plan, hold = hold_for_compaction(governor, memory, prepare(), prepare)
        try:
            result: CompactResult | None = None
            if plan.request is not None:
                compressor = governor.compressor_for(plan, instructions=instructions, tools=tools)
                assert compressor is not None
                result = _safe_compress(compressor, plan.snapshot)
            return governor.finish(memory, plan, result, instructions=instructions, tools=tools)
        finally:
            if hold is not None:
                hold.release()

    async def astep(
        self,
        governor: StepSeam,
        memory: AgentMemory,
        *,
        instructions: Instructions,
        tools: Sequence[Tool],
        usage: int | None,
        force: bool,
    ) -> GovernedStep:
        """``step`` for async code: the compressor's ``acompress`` when it has one; counting,
        storage and a sync compressor run in a worker thread, off the event loop."""

        import asyncio  # (loaded with async use: a sync caller never needs it)

        def prepare() -> StepPlan:
            return governor.prepare(
                memory, instructions=instructions, tools=tools, usage=usage, force=force
            )

        plan, hold = await asyncio.to_thread(
            lambda: hold_for_compaction(governor, memory, prepare(), prepare)
        )
        try:
            result: CompactResult | None = None
            if plan.request is not None:
                compressor = governor.compressor_for(plan, instructions=instructions, tools=tools)
                assert compressor is not None
                result = await _safe_acompress(compressor, plan.snapshot)
            return await asyncio.to_thread(
                lambda: governor.finish(
                    memory, plan, result, instructions=instructions, tools=tools
                )
            )
        finally:
            if hold is not None:
                await asyncio.to_thread(hold.release)
