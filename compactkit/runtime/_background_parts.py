"""What a background step hands its worker threads, and what a finished job reports: its events and
the counts of ``BackgroundStats``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from compactkit.budget.profiles import ProfileRegistry
from compactkit.governance.cost import compaction_cost
from compactkit.items import Tool
from compactkit.items.snapshot import CompactResult
from compactkit.memory.base import AgentMemory
from compactkit.runtime._jobs import Job
from compactkit.runtime.events import BackgroundCompactionEvent, CompactionEvent
from compactkit.runtime.scheduling import GovernedStep, Instructions, StepPlan, StepSeam

__all__ = ["BackgroundStats", "Status", "StepArgs", "applied_events", "discarded_event"]

Status = Literal["started", "applied", "discarded", "unchanged", "failed", "cancelled", "skipped"]


@dataclass
class BackgroundStats:
    """Counts of what background compaction did (one ``BackgroundCompaction``, all memories)."""

    started: int = 0
    """Background compactions started."""
    applied: int = 0
    """Results applied to the memory."""
    discarded: int = 0
    """Results refused because the memory no longer held the span they folded."""
    unchanged: int = 0
    """Results that changed nothing (nothing was foldable)."""
    failed: int = 0
    """Compressors that failed or raised in the background."""
    cancelled: int = 0
    """Compactions stopped by ``cancel`` or ``close``."""
    skipped: int = 0
    """Compactions not run because another compactor held the session's compaction lease
    (``compactkit.memory.lease``): no compressor call was made."""
    hard_waits: int = 0
    """Steps that reached the hard threshold and waited for a running compaction."""
    waited_s: float = 0.0
    """Total time those steps waited."""


@dataclass(frozen=True)
class StepArgs:
    """One step's arguments, for the seam's calls that run in a worker thread."""

    instructions: Instructions
    tools: Sequence[Tool]
    usage: int | None
    force: bool

    def prepare(self, governor: StepSeam, memory: AgentMemory) -> StepPlan:
        return governor.prepare(
            memory,
            instructions=self.instructions,
            tools=self.tools,
            usage=self.usage,
            force=self.force,
        )

    def finish(
        self,
        governor: StepSeam,
        memory: AgentMemory,
        plan: StepPlan,
        result: CompactResult | None,
    ) -> GovernedStep:
        return governor.finish(
            memory, plan, result, instructions=self.instructions, tools=self.tools
        )


def discarded_event(
    job: Job, result: CompactResult, waited: float | None, exc: Exception
) -> BackgroundCompactionEvent:
    """The event of a result ``memory.apply`` refused: the span it folded is gone."""
    return BackgroundCompactionEvent(
        "discarded",
        job.name,
        started_version=job.snapshot.version,
        waited_s=waited,
        tokens_before=result.stats.tokens_before,
        tokens_after=result.stats.tokens_after,
        error=f"not applied, the memory no longer holds the span it folded: {exc}",
        result=result,
    )


def applied_events(
    job: Job, result: CompactResult, waited: float | None, registry: ProfileRegistry | None
) -> tuple[BackgroundCompactionEvent, CompactionEvent]:
    """The events of a background result applied: the background one, then the compaction
    (as a foreground compaction reports it)."""
    stats = result.stats
    done = BackgroundCompactionEvent(
        "applied",
        job.name,
        started_version=job.snapshot.version,
        waited_s=waited,
        tokens_before=stats.tokens_before,
        tokens_after=stats.tokens_after,
        result=result,
    )
    compaction = CompactionEvent(
        outcome=result.outcome,
        applied=True,
        forced=False,
        compressor=stats.compressor,
        tokens_before=stats.tokens_before,
        tokens_after=stats.tokens_after,
        items_before=stats.items_before,
        items_after=stats.items_after,
        error=result.error,
        result=result,
        cost=compaction_cost(result, model=job.request.model, registry=registry),
    )
    return done, compaction
