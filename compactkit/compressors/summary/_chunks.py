"""Cutting the folded span into summarizer requests, and the plan and running state of one
compaction (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._verify import Verification
from compactkit.compressors.digest import digest_items
from compactkit.compressors.sections import SummaryDocument
from compactkit.compressors.summary._answer import (
    _body,
)
from compactkit.compressors.summary._resilience import (
    CallStats,
)
from compactkit.compressors.summary._serialise import _describe, _original
from compactkit.items import (
    FunctionCall,
    FunctionCallOutput,
    Item,
)
from compactkit.items.groups import group_items


@dataclass(frozen=True)
class _Chunk:
    """One summarizer request's share of the folded span."""

    items: tuple[Item, ...]
    text: str
    facts: SummaryDocument
    tokens_seen: int
    """Tokens of the chunk's items as the summarizer sees them (after cutting huge outputs)."""


@dataclass(frozen=True)
class _Plan:
    kept: list[Item]
    folded: list[Item]
    folded_groups: int
    previous: SummaryDocument
    chunks: list[_Chunk]
    tokens_before: int
    replaced_tokens: int
    """Tokens of what the new summary replaces: the old summary message plus the folded items."""
    folded_tokens: int
    summary_room: int | None = None
    """The room ``split_by_need`` gave the summary (``None``: the cap rule without a target)."""
    masked: int = 0
    """Tool outputs in the kept tail masked to make room for the summary."""


@dataclass(frozen=True)
class SummaryPlan:
    """What ``SummaryCompressor.compress`` would fold and send, planned without calling it."""

    kept: tuple[Item, ...]
    """The items that would stay active (bulky outputs in the tail possibly masked)."""
    folded: tuple[Item, ...]
    """The items that would be folded into the summary."""
    request_tokens: tuple[int, ...]
    """Estimated input tokens of each summarizer request, one per chunk (each counted with the
    summary as it is now; later requests also carry what the earlier answers added)."""
    tokens_before: int
    """Tokens of the whole request before."""
    tokens_after_estimate: int
    """Tokens after, estimated with the summary at the room it is given (an upper bound)."""
    answer_tokens_max: int = 0
    """The most output tokens the requests may be answered with, together (each answer is
    capped at the update's room)."""
    cost: float | None = None
    """The requests' cost at most, in dollars: their input tokens and ``answer_tokens_max`` at
    the summarizer model's prices; ``None`` when its prices are not known."""


@dataclass
class _Fold:
    """The running state of one compaction: the summary so far and what the calls cost."""

    summary: SummaryDocument
    calls: CallStats = field(default_factory=CallStats)
    input_tokens: int = 0
    answered_input_tokens: int = 0
    """Input tokens of the requests that were answered (what the provider bills)."""
    output_tokens: int = 0
    """Tokens of the answers, by the compressor's counter."""
    facts_given: int = 0
    facts_readded: int = 0
    trimmed: int = 0
    answers: int = 0
    rejected_constraints: int = 0
    """Constraint entries of answers that are not verbatim user text (dropped)."""
    verification: Verification = field(default_factory=Verification)
    """What the post-condition verified, re-added and rejected, every answer together."""
    untrimmed: SummaryDocument | None = None


def cut_chunks(
    folded: Sequence[Item],
    room: int,
    originals: Mapping[str, FunctionCallOutput],
    *,
    with_goal: bool,
    counter: TokenCounter,
    max_item_tokens: int,
    numbered: bool = True,
) -> list[_Chunk]:
    """Cut the folded span into chunks whose text and facts fit ``room`` tokens each.

    Whole groups stay together when they fit; a group too large for one chunk is split
    between items (the summarizer's input need not keep calls and outputs together). With
    ``numbered``, each stored item's line starts with its reference (``#412``).
    """
    item_cap = max(64, min(max_item_tokens, room // 2))
    names = {i.call_id: i.name for i in folded if isinstance(i, FunctionCall)}
    # One digest per group (a call with its output); a chunk's facts are its groups'
    # digests merged, so the span is read once.
    units: list[list[tuple[Item, str, int, SummaryDocument]]] = []
    for group in group_items(folded):
        members = group.slice(folded)
        facts = digest_items(members, originals=originals, with_goal=with_goal)
        with_goal = with_goal and not facts.entries("goal")
        unit = []
        for position, item in enumerate(members):
            line, tokens = _describe(_original(item, originals), names, item_cap, counter)
            if numbered and item.seq is not None:  # its reference, for the entries to cite
                line, tokens = f"#{item.seq} {line}", tokens + 3
            unit.append((item, line, tokens, facts if position == 0 else SummaryDocument()))
        units.append(unit)
    chunks: list[_Chunk] = []
    current: list[tuple[Item, str, int, SummaryDocument]] = []
    used = 0

    def facts_tokens(facts: SummaryDocument) -> int:
        return counter.count_text(_body(facts)) if not facts.is_empty else 0

    def close() -> None:
        nonlocal current, used
        if not current:
            return
        facts = SummaryDocument()
        for entry in current:
            facts = facts.merge(entry[3])
        chunks.append(
            _Chunk(
                items=tuple(entry[0] for entry in current),
                text="\n".join(entry[1] for entry in current),
                facts=facts,
                tokens_seen=sum(entry[2] for entry in current),
            )
        )
        current, used = [], 0

    for unit in units:
        sizes = [tokens + facts_tokens(facts) for _, _, tokens, facts in unit]
        if used + sum(sizes) > room:
            close()
        if sum(sizes) <= room:
            current.extend(unit)
            used += sum(sizes)
            continue
        for entry, size in zip(unit, sizes, strict=True):  # larger than a chunk: split it
            if used + size > room:
                close()
            current.append(entry)
            used += size
    close()
    return chunks
