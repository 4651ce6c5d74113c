"""``preview_compaction``: what a compressor would do to a snapshot, without doing it.

Deterministic compressors (window, mask, digest, a ladder of them) are pure, so a preview runs
their ``compress`` and reports the result without applying it: its numbers are exact. An LLM
``SummaryCompressor`` is never called: its plan (``SummaryCompressor.plan``) gives the span it
would fold, the requests it would send and their estimated input tokens; the tokens after are
then an estimate (the summary at the room it is given). A ladder runs its deterministic rungs
and plans its summary rung only when they leave the request over the target. Any other
compressor may call a model, so it is refused rather than run.

Its names (and ``SummaryPlan``, what ``SummaryCompressor.plan`` returns) are imported from this
module; ``Governor.preview`` and ``compactkit compact --dry-run`` are the usual doors.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._plan import default_counter, request_tokens
from compactkit.compressors.base import MemoryCompressor
from compactkit.compressors.digest import DigestCompressor
from compactkit.compressors.ladder import LadderCompressor
from compactkit.compressors.masking import MaskingCompressor, is_masked
from compactkit.compressors.summary import SummaryPlan
from compactkit.compressors.summary.compressor import SummaryCompressor
from compactkit.compressors.window import WindowedCompressor
from compactkit.errors import ConfigError
from compactkit.items import FunctionCallOutput, Item, Tool
from compactkit.items.snapshot import MemorySnapshot, require_snapshot

__all__ = ["CompactionPreview", "SummaryPlan", "item_refs", "preview_compaction"]

_DETERMINISTIC = (WindowedCompressor, MaskingCompressor, DigestCompressor)


@dataclass(frozen=True)
class CompactionPreview:
    """What a compaction would do, reported without writing anything.

    Items are named by their ``seq``; items never stored (a transcript read from a file) by
    their position in the history, counting from 0.
    """

    compressor: str
    """The compressor previewed (``"ladder>mask+digest"`` when the rungs that would run are
    known)."""
    changed: bool
    """Whether the compaction would change the memory."""
    kept: tuple[int, ...]
    """The items that would stay active, unchanged."""
    masked: tuple[int, ...]
    """The tool outputs that would stay active as placeholders."""
    folded: tuple[int, ...]
    """The items that would leave the active history (into the summary, or dropped)."""
    tokens_before: int
    """Tokens of the whole request now."""
    tokens_after: int
    """Tokens of the whole request after (an estimate when ``estimated``)."""
    estimated: bool
    """``True`` when an LLM summary is planned: ``tokens_after`` counts the summary at its room."""
    summarizer_calls: int
    """The summarizer requests the compaction would send (0 for deterministic compressors)."""
    summarizer_input_tokens: int
    """Their estimated input tokens, together."""
    cost: float | None = 0.0
    """What the summarizer calls would cost at most, in dollars: their input tokens and the
    most output they may be answered with, at the summarizer model's prices. ``0.0`` when no
    summarizer is called; ``None`` when one is but its model has no known prices."""

    def to_json(self) -> dict[str, Any]:
        """The preview as ``compactkit compact --dry-run --json`` prints it (docs/cli.md)."""
        return {
            "dry_run": True,
            "compressor": self.compressor,
            "changed": self.changed,
            "kept": item_refs(self.kept),
            "masked": item_refs(self.masked),
            "folded": item_refs(self.folded),
            "kept_count": len(self.kept),
            "masked_count": len(self.masked),
            "folded_count": len(self.folded),
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_after_estimated": self.estimated,
            "summarizer_calls": self.summarizer_calls,
            "summarizer_input_tokens": self.summarizer_input_tokens,
            "cost": self.cost,
        }


def item_refs(numbers: Iterable[int]) -> str:
    """Item numbers in compact form: ``[3, 4, 5, 9]`` → ``"#3-5, #9"`` (``""`` for none)."""
    runs: list[list[int]] = []
    for number in sorted(set(numbers)):
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    texts = [f"#{run[0]}" if len(run) == 1 else f"#{run[0]}-{run[-1]}" for run in runs]
    return ", ".join(texts)


def preview_compaction(
    compressor: MemoryCompressor,
    snapshot: MemorySnapshot,
    *,
    counter: TokenCounter | None = None,
    tools: Sequence[Tool] = (),
) -> CompactionPreview:
    """What ``compressor.compress(snapshot)`` would do, without calling any LLM.

    Args:
        compressor: A window, mask, digest, ladder or summary compressor.
        snapshot: The memory's snapshot (it is not changed: compressors are pure).
        counter: Counts the tokens before and after (default: the compressor's).
        tools: The tool schemas sent with the request (default: the compressor's).

    Raises:
        ConfigError: a compressor of another kind (it might call a model).
    """
    snapshot = require_snapshot(snapshot, "preview_compaction()")
    counter = counter or getattr(compressor, "counter", None) or default_counter()
    tools = tuple(tools) or tuple(getattr(compressor, "tools", ()))
    before = request_tokens(snapshot, counter, tools)
    if isinstance(compressor, SummaryCompressor):
        return _planned(compressor.name, snapshot, snapshot, compressor, before)
    if isinstance(compressor, LadderCompressor) and not _deterministic(compressor):
        return _ladder(compressor, snapshot, counter, tools, before)
    if not isinstance(compressor, (*_DETERMINISTIC, LadderCompressor)):
        raise ConfigError(
            f"cannot preview a {type(compressor).__name__}: only window, mask, digest, summary "
            "and ladder compressors are previewed (another may call a model); run it on a copy "
            "of the snapshot instead"
        )
    result = compressor.compress(snapshot)
    after = result.stats.tokens_after if result.changed else before
    if after is None:
        after = request_tokens(result.snapshot, counter, tools)
    kept, masked, folded = _sorted(snapshot, result.snapshot.items if result.changed else None)
    return CompactionPreview(
        compressor=result.stats.compressor,
        changed=result.changed,
        kept=kept,
        masked=masked,
        folded=folded,
        tokens_before=before,
        tokens_after=after,
        estimated=False,
        summarizer_calls=0,
        summarizer_input_tokens=0,
    )


def _deterministic(ladder: LadderCompressor) -> bool:
    return all(
        isinstance(rung, _DETERMINISTIC)
        or (isinstance(rung, LadderCompressor) and _deterministic(rung))
        for rung in ladder.rungs()
    )


def _ladder(
    ladder: LadderCompressor,
    snapshot: MemorySnapshot,
    counter: TokenCounter,
    tools: Sequence[Tool],
    before: int,
) -> CompactionPreview:
    """The ladder's climb up to its first LLM rung, then that rung's plan (if still over)."""
    current, tokens = snapshot, before
    used: list[str] = []
    for rung in ladder.rungs():
        if tokens <= ladder.target_tokens:
            break
        if isinstance(rung, SummaryCompressor):
            name = f"ladder>{'+'.join([*used, rung.name])}"
            return _planned(name, snapshot, current, rung, before)
        if not isinstance(rung, _DETERMINISTIC):
            raise ConfigError(
                f"cannot preview a ladder with a {type(rung).__name__} step: only window, "
                "mask, digest and summary steps are previewed"
            )
        outcome = rung.compress(current)
        if outcome.changed:
            current = outcome.snapshot
            tokens = request_tokens(current, counter, tools)
            used.append(rung.name)
    changed = current is not snapshot
    kept, masked, folded = _sorted(snapshot, current.items if changed else None)
    return CompactionPreview(
        compressor=f"ladder>{'+'.join(used)}" if used else ladder.name,
        changed=changed,
        kept=kept,
        masked=masked,
        folded=folded,
        tokens_before=before,
        tokens_after=tokens,
        estimated=False,
        summarizer_calls=0,
        summarizer_input_tokens=0,
    )


def _planned(
    name: str,
    original: MemorySnapshot,
    current: MemorySnapshot,
    summary: SummaryCompressor,
    before: int,
) -> CompactionPreview:
    plan = summary.plan(current)
    changed = bool(plan.folded) or current is not original
    kept, masked, folded = _sorted(original, plan.kept if changed else None)
    return CompactionPreview(
        compressor=name,
        changed=changed,
        kept=kept,
        masked=masked,
        folded=folded,
        tokens_before=before,
        tokens_after=plan.tokens_after_estimate if plan.folded else before,
        estimated=bool(plan.folded),
        summarizer_calls=len(plan.request_tokens),
        summarizer_input_tokens=sum(plan.request_tokens),
        cost=plan.cost if plan.request_tokens else 0.0,
    )


def _sorted(
    snapshot: MemorySnapshot, after: Sequence[Item] | None
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(kept, masked, folded) numbers of the snapshot's items, given the items after."""
    items = list(snapshot.items)
    stored = all(item.seq is not None for item in items)
    numbers = [item.seq if stored and item.seq is not None else n for n, item in enumerate(items)]
    if after is None:
        return tuple(numbers), (), ()
    remaining = {id(item) for item in after}
    remaining_seqs = {item.seq for item in after if item.seq is not None and not is_masked(item)}
    masked_calls = {
        item.call_id for item in after if isinstance(item, FunctionCallOutput) and is_masked(item)
    }
    kept: list[int] = []
    masked: list[int] = []
    folded: list[int] = []
    for number, item in zip(numbers, items, strict=True):
        if id(item) in remaining or (stored and item.seq in remaining_seqs):
            kept.append(number)
        elif (
            isinstance(item, FunctionCallOutput)
            and item.call_id in masked_calls
            and not is_masked(item)
        ):
            masked.append(number)
        else:
            folded.append(number)
    return tuple(kept), tuple(masked), tuple(folded)
