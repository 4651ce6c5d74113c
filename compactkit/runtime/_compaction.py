"""A compaction inside the governance step: run a compressor so that its failure is a result, never
an exception, and the event that reports it."""

from __future__ import annotations

from compactkit.compressors import MemoryCompressor
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot
from compactkit.runtime.events import (
    CompactionEvent,
    CompactionRequest,
)


def _safe_compress(compressor: MemoryCompressor, snapshot: MemorySnapshot) -> CompactResult:
    try:
        return compressor.compress(snapshot)
    except Exception as exc:  # a compressor breaking its contract must not lose the memory
        return _failed(compressor, snapshot, exc)


def _failed(compressor: object, snapshot: MemorySnapshot, exc: BaseException) -> CompactResult:
    name = str(getattr(compressor, "name", type(compressor).__name__))
    return CompactResult(
        snapshot=snapshot,
        outcome="failed",
        stats=CompactStats(
            compressor=name, items_before=len(snapshot.items), items_after=len(snapshot.items)
        ),
        error=f"{name} raised {type(exc).__name__}: {exc}",
        cause=exc,
    )


def _compaction_event(
    result: CompactResult, applied: bool, request: CompactionRequest, error: str | None
) -> CompactionEvent:
    stats = result.stats
    return CompactionEvent(
        outcome=result.outcome,
        applied=applied,
        forced=request.forced,
        compressor=stats.compressor,
        tokens_before=stats.tokens_before,
        tokens_after=stats.tokens_after,
        items_before=stats.items_before,
        items_after=stats.items_after,
        error=error,
        result=result,
    )


def _off_event() -> CompactionEvent:
    return CompactionEvent(
        outcome="failed",
        applied=False,
        forced=True,
        compressor="none",
        error="compaction is off (no compressor): build the governor with a policy or compressor",
    )
