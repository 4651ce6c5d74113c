"""What a summary compaction reports: its details, and the unchanged, done and failed results
(with the fallback compressor's result when the summarizer failed)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from compactkit.budget.profile import Prices
from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._plan import (
    result,
)
from compactkit.compressors.base import MemoryCompressor
from compactkit.compressors.report import FactReport
from compactkit.compressors.summary._chunks import _Fold, _Plan
from compactkit.compressors.summary._cost import cost
from compactkit.compressors.summary._resilience import CircuitBreaker
from compactkit.compressors.summary.llm import LLM
from compactkit.errors import CircuitOpenError, SummarizationError
from compactkit.items import (
    FunctionCallOutput,
    Tool,
)
from compactkit.items.snapshot import (
    CompactResult,
    MemorySnapshot,
)


class _Compressor(Protocol):
    """What the results need of a ``SummaryCompressor`` (a protocol, so this module does not
    import the compressor that imports it)."""

    name: str
    llm: LLM
    counter: TokenCounter
    tools: tuple[Tool, ...]
    target_tokens: int | None
    summarizer_window_tokens: int
    prompt_version: str
    fallback: MemoryCompressor | None
    breaker: CircuitBreaker
    prices: Prices | None
    _running_cap: int

    @property
    def cap(self) -> int: ...


logger = logging.getLogger("compactkit.summary")


def report_details(compressor: _Compressor, plan: _Plan, fold: _Fold | None) -> dict[str, Any]:
    seen = sum(c.tokens_seen for c in plan.chunks)
    details: dict[str, Any] = {
        "prompt_version": compressor.prompt_version,
        "summarizer": getattr(compressor.llm, "model", type(compressor.llm).__name__),
        "folded_items": len(plan.folded),
        "folded_groups": plan.folded_groups,
        "folded_tokens": plan.folded_tokens,
        "chunks": len(plan.chunks),
        "items_seen": sum(len(c.items) for c in plan.chunks),
        "tokens_seen": seen,
        "summary_cap_tokens": compressor.cap,
        "summarizer_window_tokens": compressor.summarizer_window_tokens,
    }
    if fold is not None:
        details.update(
            summarizer_calls=fold.calls.requests,
            summarizer_input_tokens=fold.input_tokens,
            summarizer_output_tokens=fold.output_tokens,
            summarizer_cost=cost(
                compressor.prices, input=fold.answered_input_tokens, output=fold.output_tokens
            ),
            retry_wait_seconds=round(fold.calls.waited, 3),
            answers=fold.answers,
            facts_given=fold.facts_given,
            facts_readded=fold.facts_readded,
            trimmed_entries=fold.trimmed,
            rejected_constraints=fold.rejected_constraints,
            verification=fold.verification.details(),
        )
        if fold.untrimmed is not None:
            details["facts"] = FactReport.compare(
                fold.untrimmed,
                fold.summary,
                summary_tokens=compressor.counter.count_text(fold.summary.render()),
                summary_cap_tokens=plan.summary_room or compressor._running_cap,
                masked_outputs=plan.masked,
                rejected_constraints=fold.rejected_constraints,
            ).model_dump()
    details["breaker"] = compressor.breaker.state
    if compressor.target_tokens is not None:
        details["target_tokens"] = compressor.target_tokens
    return details


def unchanged(compressor: _Compressor, snapshot: MemorySnapshot, plan: _Plan) -> CompactResult:
    details = report_details(compressor, plan, None)
    if compressor.target_tokens is not None:
        details["target_met"] = plan.tokens_before <= compressor.target_tokens
    return result(
        compressor.name,
        snapshot,
        None,
        compressor.counter,
        compressor.tools,
        tokens_before=plan.tokens_before,
        details=details,
    )


def done(
    compressor: _Compressor,
    snapshot: MemorySnapshot,
    plan: _Plan,
    fold: _Fold,
    after: MemorySnapshot,
) -> CompactResult:
    details = report_details(compressor, plan, fold)
    details["summary_tokens"] = compressor.counter.count_text(after.summary)
    done = result(
        compressor.name,
        snapshot,
        after,
        compressor.counter,
        compressor.tools,
        tokens_before=plan.tokens_before,
        details=details,
    )
    if compressor.target_tokens is not None:
        done.stats.details["target_met"] = (
            done.stats.tokens_after or 0
        ) <= compressor.target_tokens
    return done


def failed(
    compressor: _Compressor,
    snapshot: MemorySnapshot,
    plan: _Plan,
    fold: _Fold,
    exc: SummarizationError,
    originals: Mapping[str, FunctionCallOutput],
) -> CompactResult:
    details = report_details(compressor, plan, fold)
    details["circuit_open"] = isinstance(exc, CircuitOpenError)
    error = f"summarizer failed: {exc}"
    logger.warning("compaction kept the history unchanged: %s", error)
    if compressor.fallback is not None:
        backup = _run_fallback(compressor.fallback, snapshot, originals)
        if backup.changed:
            stats = backup.stats.model_copy(
                update={
                    "compressor": f"{compressor.name}>{backup.stats.compressor}",
                    "details": {**backup.stats.details, "summary": details},
                }
            )
            return backup.model_copy(
                update={
                    "outcome": "fallback",
                    "error": f"{error}; fell back to {backup.stats.compressor}",
                    "cause": exc,
                    "stats": stats,
                }
            )
        error += f"; the fallback {backup.stats.compressor} changed nothing"
        if backup.error:
            error += f" ({backup.error})"
    return result(
        compressor.name,
        snapshot,
        None,
        compressor.counter,
        compressor.tools,
        tokens_before=plan.tokens_before,
        details=details,
        error=error,
        cause=exc,
    )


def _run_fallback(
    fallback: MemoryCompressor,
    snapshot: MemorySnapshot,
    originals: Mapping[str, FunctionCallOutput],
) -> CompactResult:
    with_originals = getattr(fallback, "compress_with_originals", None)
    if originals and callable(with_originals):
        backup: CompactResult = with_originals(snapshot, originals)
        return backup
    return fallback.compress(snapshot)
