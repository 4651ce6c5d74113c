"""Merging one summarizer answer into the running fold: validate it, keep what the chunk's
text supports (the post-condition), add back the exact facts it lost, keep it within its cap."""

from __future__ import annotations

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._verify import verify
from compactkit.compressors.sections import SummaryDocument
from compactkit.compressors.summary._answer import (
    _ERROR_TEXT,
    _NOTES,
    _NOTHING,
    _absent,
    within_items,
)
from compactkit.compressors.summary._chunks import _Chunk, _Fold
from compactkit.errors import SummarizationError

__all__ = ["absorb"]


def absorb(fold: _Fold, chunk: _Chunk, answer: str, *, cap: int, counter: TokenCounter) -> None:
    """Validate one answer, add back the exact facts it lost, merge it, keep it in its cap.

    Raises:
        SummarizationError: the answer is an error message, or empty.
    """
    fold.answers += 1
    if _ERROR_TEXT.match(answer):
        raise SummarizationError(
            "the summarizer answered with an error message instead of a summary: "
            f"{answer.strip()[:200]!r}"
        )
    parsed = SummaryDocument.parse(answer)
    if not parsed.sections and parsed.extra.get(_NOTES):
        # A prose answer (a model that ignores the headings): its text is where the work
        # stands; the exact facts it lost are re-added below as for any answer.
        parsed = SummaryDocument(sections={"state": parsed.extra[_NOTES]})
    update = SummaryDocument(
        sections={
            key: kept
            for key, entries in parsed.sections.items()
            if (kept := tuple(e for e in entries if not _NOTHING.match(e.strip())))
        },
        # Text outside any heading is preamble ("Here is the update:"), not summary.
        extra={k: v for k, v in parsed.extra.items() if k != _NOTES},
    )
    if not parsed.sections:
        raise SummarizationError(
            f"the summarizer's answer has none of the summary's headings: {answer.strip()[:200]!r}"
        )
    # Provenance: each entry keeps the references it cites among the chunk's items, or
    # else names the whole chunk (an LLM's entry may draw on any of it).
    update = within_items(update, chunk.items)
    # The post-condition (``compactkit.compressors._verify``): what the chunk's text does not
    # support is refused (a cut that drops a negation, a one-word rule, an invented goal or
    # file), and its must-keep facts the answer lost are added back.
    answered = fold.summary.merge(update)
    checked, verification = verify(answered, chunk.facts, chunk.items, previous=fold.summary)
    fold.verification += verification
    fold.rejected_constraints += sum(r.startswith("constraints:") for r in verification.rejected)
    # every other exact fact the answer lost (commands, files read, identifiers)
    missing = _absent(_absent(chunk.facts, fold.summary), answered)
    fold.facts_readded += len(missing) + len(verification.re_added)
    merged = checked.merge(missing)
    trimmed = merged.trim_to(cap, counter)
    fold.trimmed += trimmed.trimmed - merged.trimmed
    fold.summary = trimmed
