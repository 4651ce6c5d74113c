"""A compaction inside the governance step: run a compressor so that its failure is a result, not
an exception, and the event that reports it.

One kind of failure is raised instead: a ``ConfigError`` (a compressor built or given wrongly, a
function compressor returning something that is not messages). Retrying or falling back cannot
fix it, so the step raises it, with the memory unchanged, rather than report a failed compaction
on every step while the context keeps growing."""

from __future__ import annotations

from compactkit.compressors import MemoryCompressor
from compactkit.errors import ConfigError
from compactkit.governance.cost import Horizon, compaction_cost
from compactkit.governance.policy import CompactPolicy
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot
from compactkit.runtime.events import (
    CompactionEvent,
    CompactionRequest,
)


def _safe_compress(compressor: MemoryCompressor, snapshot: MemorySnapshot) -> CompactResult:
    try:
        return compressor.compress(snapshot)
    except ConfigError:
        raise  # the user's to fix: see the module docstring
    except Exception as exc:  # a compressor breaking its contract must not lose the memory
        return _failed(compressor, snapshot, exc)


async def _safe_acompress(compressor: MemoryCompressor, snapshot: MemorySnapshot) -> CompactResult:
    """``_safe_compress`` for async code: the compressor's ``acompress`` when it has one, else
    ``compress`` in a worker thread."""
    acompress = getattr(compressor, "acompress", None)
    try:
        if callable(acompress):
            result: CompactResult = await acompress(snapshot)
            return result
        import asyncio  # (loaded with async use: a sync caller never needs it)

        return await asyncio.to_thread(compressor.compress, snapshot)
    except ConfigError:
        raise  # the user's to fix: see the module docstring
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
    result: CompactResult,
    applied: bool,
    request: CompactionRequest,
    error: str | None,
    policy: CompactPolicy | None = None,
    growth: float | None = None,
) -> CompactionEvent:
    """The event of ``result``; ``growth`` (request tokens per step so far) lets its cost model
    the requests until the next compaction, which fires at the policy's lowest token threshold."""
    stats = result.stats
    # The cache is taken as warm unless the policy names its lifetime (``cache_cold``) and the
    # memory has been idle that long: compactkit does not guess a provider's cache lifetime.
    lifetime = policy.cache_lifetime() if policy is not None else None
    idle = request.state.idle_seconds
    warm = lifetime is None or idle is None or idle < lifetime
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
        cost=compaction_cost(
            result if applied else _not_applied(result),
            model=request.model,
            registry=policy.registry if policy is not None else None,
            cache_warm=warm,
            horizon=_horizon(policy, request, result, growth),
        ),
    )


def _horizon(
    policy: CompactPolicy | None,
    request: CompactionRequest,
    result: CompactResult,
    growth: float | None,
) -> Horizon | None:
    """The requests after this compaction, when the growth and the next trigger are known."""
    next_at = policy.trigger_tokens() if policy is not None else None
    before = result.stats.tokens_before
    if not growth or growth <= 0 or next_at is None or before is None:
        return None
    assert policy is not None
    overhead = max(0, request.state.tokens - before)  # instructions, tool schemas, priming
    return Horizon(growth=growth, next_at=next_at, budget=policy.budget, overhead=overhead)


def _not_applied(result: CompactResult) -> CompactResult:
    """A result that was not swapped in changes no request (its summarizer was still paid)."""
    return result if not result.changed else result.model_copy(update={"outcome": "failed"})


def _off_event() -> CompactionEvent:
    return CompactionEvent(
        outcome="failed",
        applied=False,
        forced=True,
        compressor="none",
        error="compaction is off (no compressor): build the governor with a policy or compressor",
    )
