"""What every compressor shares: what may never be folded, where to cut, what a result counts.

A snapshot's items are read as ``instructions + groups``: the leading system/developer messages
(never altered), then atomic groups (``group_items``). A group is *protected* when it holds a
pinned item, the latest user input, or a call still waiting for its output, or when it is the
newest group (the last assistant turn with its calls and outputs); protected groups are always
kept. A compressor keeps the protected groups plus one contiguous suffix of the newest
groups and folds the rest, so the result has the projector's shape and no group is ever split.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, compress
from operator import attrgetter, not_
from typing import Any

from compactkit.budget import LINE_ADDITIVE, line_pieces
from compactkit.budget.tokens import TiktokenCounter, TokenCounter
from compactkit.items import FunctionCallOutput, Item, Message, Tool
from compactkit.items.groups import Group, group_items
from compactkit.items.snapshot import (
    CompactResult,
    CompactStats,
    MemorySnapshot,
    compact_result,
    leading_instructions,
    require_snapshot,
    summary_message,
)

_pinned = attrgetter("pinned")


def default_counter() -> TokenCounter:
    """The counter compressors use when none is given (gpt-4o's o200k_base rules)."""
    return TiktokenCounter("o200k_base")


def request_tokens(
    snapshot: MemorySnapshot, counter: TokenCounter, tools: Sequence[Tool] = ()
) -> int:
    """Tokens of the whole request a snapshot makes: instructions, summary message,
    conversation, tool schemas and reply priming (``render_items`` + overhead).

    Every compressor counts its input with this first, so it is also where a memory or a list
    passed instead of a snapshot is refused (``ConfigError``)."""
    snapshot = require_snapshot(snapshot, "compress()")
    items = snapshot.render_items()
    fast = getattr(counter, "count_items", None)  # compactkit's counters: a loop in C when cached
    tokens = fast(items) if fast is not None else sum(map(counter.count_item, items))
    return int(tokens) + counter.count_overhead(tools)


def text_tokens(text: str, counter: TokenCounter) -> int:
    """``counter.count_text(text)`` for a long text that changes little between counts (a
    summary being grown): with a tiktoken counter, counted line by line (exact, see
    ``LINE_ADDITIVE``), so that each count only encodes the lines not counted before."""
    if not counts_by_lines(counter) or "\r" in text:
        return counter.count_text(text)
    return sum(map(counter.count_text, line_pieces(text)))


def counts_by_lines(counter: TokenCounter) -> bool:
    """Whether ``counter`` counts a text without ``\r`` as the sum of its pieces cut before
    every line that starts with a character other than whitespace or "/" (``text_tokens``)."""
    return type(counter) is TiktokenCounter and counter.encoding_name in LINE_ADDITIVE


def summary_tokens(summary: str, counter: TokenCounter) -> int:
    """Tokens the summary message of ``summary`` adds to a request (0 without a summary)."""
    return counter.count_item(summary_message(summary)) if summary else 0


@dataclass(frozen=True)
class Layout:
    """A snapshot's items split into instructions and groups, with what is protected."""

    items: tuple[Item, ...]
    """The snapshot's items."""
    lead: int
    """How many leading items are the instructions."""
    groups: tuple[Group, ...]
    """The groups after the instructions, oldest first (indices into ``items``)."""
    protected: tuple[str | None, ...]
    """Per group: why it may never be folded (``"pinned items"``, …), or ``None``."""

    @classmethod
    def of(cls, items: Sequence[Item]) -> Layout:
        """The layout of ``items``."""
        items = tuple(items)
        lead = leading_instructions(items)
        groups = tuple(group_items(items, lead))
        latest_user = next(
            (
                i
                for i in range(len(items) - 1, lead - 1, -1)
                if isinstance(items[i], Message) and items[i].role == "user"  # type: ignore[union-attr]
            ),
            None,
        )
        # The positions of pinned items (few, often none), looked up per group by bisection:
        # a generator over every group's items cost more than the grouping itself.
        pins = list(compress(range(len(items)), map(_pinned, items)))  # (in C)
        protected: list[str | None] = []
        for group in groups:
            reason = None
            if latest_user is not None and group.start <= latest_user < group.stop:
                reason = "latest user input"
            elif group.pending and group is groups[-1]:
                # Only the newest group can still be waiting for its outputs; an unanswered call
                # further back was abandoned, and keeping it would keep an invalid prompt.
                reason = "pending calls"
            elif pins and _holds(pins, group):
                reason = "pinned items"
            elif group is groups[-1] and group.kind != "orphan":
                # The newest group is what the model asked for last (a call and its output):
                # folding or masking it would answer the call with nothing.
                reason = "newest group"
            protected.append(reason)
        return cls(items, lead, groups, tuple(protected))

    def with_items(self, items: Sequence[Item]) -> Layout:
        """This layout for ``items``, a copy of ``self.items`` where only unprotected tool
        outputs were replaced in place (masked: same call ids, same fields), so the groups and
        what is protected are the same."""
        return Layout(tuple(items), self.lead, self.groups, self.protected)

    def tokens(self, group: Group, counter: TokenCounter) -> int:
        """Tokens of one group's items."""
        return sum(counter.count_item(i) for i in group.slice(self.items))

    def group_tokens(self, counter: TokenCounter) -> list[int]:
        """``tokens`` of every group, in order, from one pass over the items (in C for
        compactkit's counters, when every item is counted already)."""
        fast = getattr(counter, "item_counts", None)
        counts = fast(self.items) if fast is not None else map(counter.count_item, self.items)
        prefix = list(accumulate(counts, initial=0))
        return [prefix[group.stop] - prefix[group.start] for group in self.groups]

    def cut(self, keep: Callable[[int, Group], bool]) -> int:
        """The index of the oldest group of the kept suffix.

        Walks the unprotected groups newest first and stops at the first one ``keep(position,
        group)`` refuses (``position`` counts kept unprotected groups, 0 for the newest); every
        unprotected group older than the returned index is folded.
        """
        position = 0
        for index in range(len(self.groups) - 1, -1, -1):
            if self.protected[index] is not None:
                continue
            if not keep(position, self.groups[index]):
                return index + 1
            position += 1
        return 0

    def split(
        self, first_kept: int, replace: Mapping[int, Item] | None = None
    ) -> tuple[list[Item], list[Item]]:
        """``(kept, folded)`` items when every unprotected group before ``first_kept`` folds;
        ``replace`` maps an item's index to what is kept in its place (a masked output)."""
        if not replace:  # kept and folded are runs of whole groups: sliced, not walked
            return self._kept_before(first_kept), self.unprotected_items(0, first_kept)
        kept = list(self.items[: self.lead])
        folded: list[Item] = []
        for index, group in enumerate(self.groups):
            if index < first_kept and self.protected[index] is None:
                folded.extend(group.slice(self.items))
            else:
                kept.extend(replace.get(i, self.items[i]) for i in range(group.start, group.stop))
        return kept, folded

    def unprotected_items(self, start: int, stop: int) -> list[Item]:
        """The items of the unprotected groups among ``groups[start:stop]``, in order.

        The groups are contiguous, so these are the items between the protected groups: one
        slice per run of unprotected groups, not one per group (a compaction folds hundreds).
        """
        start, stop = max(start, 0), min(stop, len(self.groups))
        if start >= stop:
            return []
        items, groups, protected = self.items, self.groups, self._protected_indices
        out: list[Item] = []
        at = groups[start].start
        for index in protected[bisect_left(protected, start) : bisect_left(protected, stop)]:
            out.extend(items[at : groups[index].start])
            at = groups[index].stop
        out.extend(items[at : groups[stop - 1].stop])
        return out

    def _kept_before(self, first_kept: int) -> list[Item]:
        """``split(first_kept)``'s kept items with nothing replaced: the instructions, the
        protected groups before ``first_kept``, then every item from that group on."""
        items, groups, protected = self.items, self.groups, self._protected_indices
        if first_kept <= 0 or not groups:
            return list(items)
        kept = list(items[: self.lead])
        for index in protected[: bisect_left(protected, first_kept)]:
            kept.extend(items[groups[index].start : groups[index].stop])
        if first_kept < len(groups):
            kept.extend(items[groups[first_kept].start :])
        return kept

    @cached_property
    def _protected_indices(self) -> list[int]:
        """The indices of the protected groups, in order."""
        return [index for index, reason in enumerate(self.protected) if reason is not None]

    @cached_property
    def fixed_items(self) -> list[Item]:
        """The items no compressor may fold: the instructions and every protected group."""
        fixed = list(self.items[: self.lead])
        for group, reason in zip(self.groups, self.protected, strict=True):
            if reason is not None:
                fixed.extend(group.slice(self.items))
        return fixed


@dataclass(frozen=True)
class Measured:
    """A snapshot with what a ladder already measured of it under its counter and tools (the
    whole request's tokens, the layout), so that its steps do not measure it again: every
    step's work then grows with what it changes, not with the whole history each time."""

    snapshot: MemorySnapshot
    tokens: int
    """``request_tokens(snapshot, counter, tools)``."""
    layout: Layout
    """``Layout.of(snapshot.items)``."""


def irreducible(
    snapshot: MemorySnapshot, counter: TokenCounter, tools: Sequence[Tool] = ()
) -> list[tuple[str, int]]:
    """The parts of a request no compressor can shrink, with their tokens (non-empty parts)."""
    layout = Layout.of(snapshot.items)
    count = counter.count_item
    parts: dict[str, int] = {
        "system instructions": sum(count(i) for i in snapshot.items[: layout.lead])
    }
    for group, reason in zip(layout.groups, layout.protected, strict=True):
        if reason is not None:
            parts[reason] = parts.get(reason, 0) + layout.tokens(group, counter)
    if snapshot.summary:
        parts["summary"] = count(summary_message(snapshot.summary))
    parts["tool schemas and reply priming"] = counter.count_overhead(tools)
    return [(name, tokens) for name, tokens in parts.items() if tokens]


def folded_items(before: Sequence[Item], after: Sequence[Item]) -> tuple[list[Item], int]:
    """Input items no longer in the output (by identity), and how many of them were replaced
    in place (a tool output whose call id is still answered, e.g. by a masking placeholder)."""
    present = set(map(id, after))  # the loops in C: a compaction folds thousands of items
    folded = list(compress(before, map(not_, map(present.__contains__, map(id, before)))))
    outputs = [i for i in folded if isinstance(i, FunctionCallOutput)]
    if not outputs:
        return folded, 0
    answered = {i.call_id for i in after if isinstance(i, FunctionCallOutput)}
    return folded, sum(1 for i in outputs if i.call_id in answered)


def result(
    name: str,
    before: MemorySnapshot,
    after: MemorySnapshot | None,
    counter: TokenCounter,
    tools: Sequence[Tool] = (),
    *,
    tokens_before: int | None = None,
    tokens_after: int | None = None,
    details: dict[str, Any] | None = None,
    error: str | None = None,
    cause: BaseException | None = None,
) -> CompactResult:
    """The ``CompactResult`` of turning ``before`` into ``after``.

    ``after=None`` (or a snapshot equal to ``before``) gives ``unchanged``, or ``failed`` when
    ``error`` is set; the input snapshot itself is returned then. ``tokens_before`` and
    ``tokens_after``, when given, are the request tokens the caller already counted.
    """
    tokens_before = (
        request_tokens(before, counter, tools) if tokens_before is None else tokens_before
    )
    details = dict(details or {})
    if after is None or (after.items == before.items and after.summary == before.summary):
        return CompactResult(
            snapshot=before,
            outcome="failed" if error else "unchanged",
            error=error,
            cause=cause,
            stats=CompactStats(
                compressor=name,
                tokens_before=tokens_before,
                tokens_after=tokens_before,
                items_before=len(before.items),
                items_after=len(before.items),
                details=details,
            ),
        )
    folded, replaced = folded_items(before.items, after.items)
    if replaced:
        details.setdefault("replaced", replaced)
    return compact_result(
        snapshot=after,
        folded=folded,
        outcome="compacted",
        error=error,
        cause=cause,
        stats=CompactStats(
            compressor=name,
            tokens_before=tokens_before,
            tokens_after=(
                request_tokens(after, counter, tools) if tokens_after is None else tokens_after
            ),
            items_before=len(before.items),
            items_after=len(after.items),
            details=details,
        ),
    )


Keep = Callable[[int, Group], bool]
"""Decides, newest group first (``position`` 0 is the newest), whether a group stays active."""

DEFAULT_KEEP_GROUPS = 10
"""Groups kept when neither a count, a token budget nor a target says otherwise."""


def newest_groups_keeper(
    layout: Layout,
    counter: TokenCounter,
    *,
    keep_last_groups: int | None,
    keep_tokens: int | None,
    target_tokens: int | None,
    summary_cap: int,
    tools: Sequence[Tool] = (),
) -> Keep:
    """The keep rule the folding compressors share (digest, LLM summary), so either can stand in
    for the other: the last ``keep_last_groups`` groups; else the newest groups that fit
    ``keep_tokens``; else what a ``target_tokens`` leaves after the fixed items, the tools and a
    summary of ``summary_cap`` tokens; else the last ``DEFAULT_KEEP_GROUPS`` groups."""
    if keep_last_groups is not None:
        limit = keep_last_groups
        return lambda position, _group: position < limit
    budget = keep_tokens
    if budget is None and target_tokens is not None:
        fixed = sum(counter.count_item(i) for i in layout.fixed_items)
        # 8 tokens: the summary message's own overhead (role, name, per-message tokens).
        budget = target_tokens - fixed - counter.count_overhead(tools) - summary_cap - 8
    if budget is None:
        return lambda position, _group: position < DEFAULT_KEEP_GROUPS
    left = budget

    def keep(_position: int, group: Group) -> bool:
        nonlocal left
        size = layout.tokens(group, counter)
        if size > left:
            return False
        left -= size
        return True

    return keep


SUMMARY_SHARE = 0.6
"""The share of ``target_tokens`` the summary may grow to while the verbatim tail is still made
of whole groups (the tail keeps the rest); beyond it, bulky tool outputs in the tail are masked
before a fact is dropped."""


def summary_cap(
    summary_cap_tokens: int | None, target_tokens: int | None, share: float = SUMMARY_SHARE
) -> int:
    """The summary's token ceiling shared by the folding compressors: the explicit cap; else
    ``share`` of the target (at least 300); else 2,000."""
    if summary_cap_tokens is not None:
        return summary_cap_tokens
    if target_tokens is None:
        return 2000
    return max(300, int(target_tokens * share))


def _holds(positions: list[int], group: Group) -> bool:
    """Whether the sorted ``positions`` hold one inside ``group``."""
    at = bisect_left(positions, group.start)
    return at < len(positions) and positions[at] < group.stop


@dataclass(frozen=True)
class Split:
    """How a target is shared between the summary and the verbatim tail (``split_by_need``)."""

    first_kept: int
    """The oldest group of the kept suffix (see ``Layout.cut``)."""
    cap: int
    """The tokens the summary's rendered text may take."""
    need: int
    """The tokens the summary would take untrimmed (the digest's estimate)."""
    masked: Mapping[int, FunctionCallOutput]
    """Kept tool outputs replaced by placeholders to make room, by item index."""
    kept_tokens: int | None = None
    """Tokens of the items kept (the fixed ones and the tail, placeholders counted)."""


def tail_cutter(
    order: Sequence[int], sizes: Sequence[int], groups: int
) -> Callable[[int], tuple[int, int]]:
    """``cut(budget)`` for the groups ``order`` lists newest first, of ``sizes`` tokens each:
    ``(first, tail)``, the oldest of the newest groups that fit ``budget`` whole one after the
    other (0 when they all do, ``groups`` when none does) and their tokens.

    The newest ``j`` groups hold ``tails[j]`` tokens and fit while each shorter tail does too
    (``peaks[j - 1]``: the largest of them), so each cut is one bisection, not a walk."""
    tails = list(accumulate((sizes[index] for index in order), initial=0))
    peaks = list(accumulate(tails[1:], max))

    def cut(budget: int) -> tuple[int, int]:
        fits = bisect_right(peaks, budget)
        if fits == len(order):
            return 0, tails[fits]
        return (order[fits - 1] if fits else groups), tails[fits]

    return cut


def split_by_need(
    layout: Layout,
    counter: TokenCounter,
    *,
    target_tokens: int,
    ceiling: int,
    need: Callable[[int], int],
    mask: Callable[[FunctionCallOutput, int], FunctionCallOutput] | None,
    hard_cap: bool = False,
    tools: Sequence[Tool] = (),
) -> Split:
    """Share ``target_tokens`` between the summary and the verbatim tail by what the summary
    has to hold.

    ``need(first_kept)`` is the summary's size when every unprotected group before
    ``first_kept`` folds. The summary is given what it needs, up to ``ceiling``; the tail keeps
    the newest whole groups that fit the rest (folding more grows the need: this settles in a
    few rounds). When the summary still needs more than the tail leaves, bulky kept tool
    outputs are masked with ``mask`` (oldest first, never in the newest kept group or a
    protected one) and the room they free goes to the summary — unless ``hard_cap``, where the
    summary never exceeds ``ceiling``. Only then does the summary have to be trimmed.
    """
    fixed = sum(counter.count_item(i) for i in layout.fixed_items)
    avail = target_tokens - fixed - counter.count_overhead(tools)
    avail -= counter.count_item(summary_message(""))
    sizes = layout.group_tokens(counter)
    order = [i for i in range(len(layout.groups) - 1, -1, -1) if layout.protected[i] is None]

    cut = tail_cutter(order, sizes, len(layout.groups))

    def cut_for(reserve: int) -> tuple[int, int]:
        return cut(avail - reserve)

    first, tail = cut_for(0)
    needed = need(first)
    for _round in range(6):
        reserve = min(ceiling, needed)
        if avail - tail >= reserve:
            break
        first, tail = cut_for(reserve)
        needed = need(first)
    room = avail - tail
    masked: dict[int, FunctionCallOutput] = {}
    wanted = min(needed, ceiling) if hard_cap else needed
    if room < wanted and mask is not None:
        kept = [i for i in order if i >= first]  # newest first
        for index in reversed(kept[1:]):  # oldest first, the newest kept group spared
            group = layout.groups[index]
            for position in range(group.start, group.stop):
                item = layout.items[position]
                if not isinstance(item, FunctionCallOutput):
                    continue
                size = counter.count_item(item)
                placeholder = mask(item, size)
                saving = size - counter.count_item(placeholder)
                if saving > 0:
                    masked[position] = placeholder
                    room += saving
                if room >= wanted:
                    break
            if room >= wanted:
                break
    cap = min(room, ceiling) if hard_cap else room
    kept_tokens = fixed + tail - (room - (avail - tail))  # what masking saved is not sent
    return Split(
        first_kept=first, cap=max(1, cap), need=needed, masked=masked, kept_tokens=kept_tokens
    )
