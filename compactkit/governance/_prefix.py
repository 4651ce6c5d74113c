"""Measuring the cacheable prefix of a prompt: ``PrefixTracker`` finds, for every projection, the
tokens that are a byte-identical prefix of the previous prompt of its session (what a
provider's prefix cache can serve, ``ProjectionReport.cached_prefix_tokens``), with the
comparisons of item sequences it and ``StablePrefix`` share (``extends``, ``same_tools``). It
is separate from ``_cache.py`` because measuring a prefix is not choosing one: the tracker
serves the plain and the cache-aware projection alike, while ``StablePrefix`` plans the
cache-aware prompt.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import is_

from compactkit.budget.tokens import TokenCounter
from compactkit.governance._incremental import item_counts, sum_counts
from compactkit.items import Item, Tool
from compactkit.items.view import ItemsChain, ItemsView, Run, same_history, sliceable

__all__ = ["PrefixTracker", "extends", "same_tools"]


@dataclass(slots=True)
class _Seen:
    """A remembered prompt of one session."""

    counter: TokenCounter
    tools: tuple[Tool, ...]
    items: Sequence[Item]
    tokens: int
    """Tokens of the items alone."""


_DIRECT = 16
"""A run of a list this short is counted item by item; of a longer one, from the list's running
totals."""


class PrefixTracker:
    """Measures the cacheable prefix of each prompt against the previous one of its session.

    The previous prompt of the session is the remembered prompt (one per session, the last
    ``size`` sessions) sharing the longest byte-identical prefix with this one: tool schemas
    first (providers put them before the messages), then the items in order.

    A prompt extending the previous one costs O(new items). A changed one costs a comparison in
    C up to where it changed (a few ns per item) plus the tokens of the shared items, summed run
    by run: a prompt is a few runs of lists only ever appended to (the memory's items, the
    history's masked rendering) or never changed, and each long list keeps running totals of
    its items' tokens, extended as far as a prompt reached. So a change point that moves back
    and forth between turns (an old output masked, then sent whole again) costs O(runs), not
    the items between the two points.
    """

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._entries: list[_Seen] = []
        self._overheads: dict[
            tuple[int, tuple[int, ...]], tuple[TokenCounter, tuple[Tool, ...], int, int]
        ] = {}
        self._last: tuple[TokenCounter | None, tuple[Tool, ...], int, int] = (None, (), 0, 0)
        self._totals: dict[tuple[int, int], tuple[Sequence[Item], TokenCounter, list[int]]] = {}
        self._prune_at = 4 * size
        self._lock = threading.Lock()

    def observe(
        self, counter: TokenCounter, items: Sequence[Item], tools: Sequence[Tool], tokens: int
    ) -> int:
        """Remember this prompt (``tokens`` long in all); return its tokens shared with the
        previous prompt of its session (0 for a session's first prompt)."""
        tools = tuple(tools)  # the projector's checked tuple: no copy
        overhead, schema = self._overhead(counter, tools)
        own = max(0, tokens - overhead)  # the items alone
        with self._lock:
            entries = self._entries
            best, best_length = -1, -1
            for position, seen in enumerate(entries):
                if seen.counter is not counter or not same_tools(seen.tools, tools):
                    continue
                n = len(seen.items)
                length = (
                    n if not n or same_history(items, seen.items) else _common(items, seen.items)
                )
                extended = length == n
                if length > best_length:
                    best, best_length = position, length
                    if extended:
                        break
            if best < 0:
                shared = 0
            else:
                seen = entries[best]
                if best_length == len(seen.items):
                    shared = seen.tokens
                else:
                    shared = self._leading(counter, items, best_length)
                shared += schema
                if best_length or not seen.items:  # it shares no item: another session's
                    del entries[best]  # this prompt replaces it as its session's last
            entries.insert(0, _Seen(counter, tools, items, own))
            del entries[self._size :]
            if len(self._totals) > self._prune_at:
                self._prune()
            return shared

    def observe_extension(
        self,
        counter: TokenCounter,
        items: Sequence[Item],
        tools: Sequence[Tool],
        tokens: int,
        previous: Sequence[Item],
    ) -> int:
        """``observe(counter, items, tools, tokens)`` for a prompt that extends ``previous``
        (``items`` a view of the same list, grown by appends). When ``previous`` is the front
        entry's prompt (with this counter and these tools), that entry is the one ``observe``
        would find first, and it would replace it with this prompt: its tokens are shared, and
        the entry takes this prompt in place. Otherwise ``observe`` itself."""
        tools = tuple(tools)
        with self._lock:
            seen = self._entries[0] if self._entries else None
            if (
                seen is not None
                and seen.items is previous
                and seen.counter is counter
                and same_history(items, previous)
                and same_tools(seen.tools, tools)
                and len(self._totals) <= self._prune_at
            ):
                overhead, schema = self._overhead(counter, tools)
                shared = seen.tokens + schema
                seen.tools, seen.items, seen.tokens = tools, items, max(0, tokens - overhead)
                return shared
        return self.observe(counter, items, tools, tokens)

    def _leading(self, counter: TokenCounter, items: Sequence[Item], length: int) -> int:
        """Tokens of ``items[:length]``, summed run by run."""
        runs = _runs_of(items)
        if runs is None:  # a sequence that may change: counted as it is now, no totals kept
            return sum_counts(counter, items[:length])
        total = 0
        count = counter.count_item
        for source, start, stop in runs:
            if length <= 0:
                break
            end = stop if stop - start <= length else start + length
            length -= end - start
            if len(source) <= _DIRECT:  # a short list (the head, a group's own items)
                for item in source[start:end]:
                    total += count(item)
            else:  # a long one (the memory's items, their masked rendering): two look-ups
                totals = self._running(counter, source, end)
                total += totals[end] - totals[start]
        return total

    def _running(self, counter: TokenCounter, source: Sequence[Item], stop: int) -> list[int]:
        """``source``'s running totals (``totals[i]``: tokens of ``source[:i]``), at least to
        ``stop``. Kept per source: a run's source never changes below the run's end."""
        key = (id(counter), id(source))
        entry = self._totals.get(key)
        if entry is None or entry[0] is not source or entry[1] is not counter:
            entry = self._totals[key] = (source, counter, [0])
        totals = entry[2]
        if len(totals) <= stop:
            grown = accumulate(
                item_counts(counter, source[len(totals) - 1 : stop]), initial=totals[-1]
            )
            next(grown)  # the total so far: already the last entry
            totals.extend(grown)
        return totals

    def _prune(self) -> None:
        """Keep the running totals of the remembered prompts' sources only."""
        held = {id(source) for seen in self._entries for source, _, _ in _runs_of(seen.items) or ()}
        self._totals = {key: entry for key, entry in self._totals.items() if key[1] in held}
        self._prune_at = 2 * len(self._totals) + 4 * self._size

    def _overhead(self, counter: TokenCounter, tools: tuple[Tool, ...]) -> tuple[int, int]:
        """``(request overhead, tool schema tokens)``: the overhead includes reply priming."""
        last = self._last
        if last[0] is counter and len(last[1]) == len(tools) and all(map(is_, last[1], tools)):
            return last[2], last[3]
        key = (id(counter), tuple(map(id, tools)))
        entry = self._overheads.get(key)
        if entry is None or entry[0] is not counter or not same_tools(entry[1], tools):
            total = counter.count_overhead(tools)
            schema = total - counter.count_overhead(())
            if len(self._overheads) >= 64:
                self._overheads.clear()
            entry = self._overheads[key] = (counter, tools, total, schema)
        self._last = entry
        return entry[2], entry[3]


def _runs_of(items: Sequence[Item]) -> Sequence[Run] | None:
    """``items`` as runs of lists that never change below the runs' ends (a prompt's own runs,
    a view's list, a tuple), or ``None`` for a sequence that may still change."""
    if isinstance(items, ItemsChain):
        return items.runs()
    if isinstance(items, ItemsView | tuple):  # a list only appended to, or a tuple
        return ((sliceable(items), 0, len(items)),)
    return None


def extends(items: Sequence[Item], seen: Sequence[Item]) -> bool:
    """Whether ``items`` starts with exactly ``seen`` (C-speed, identity short-circuits; O(1)
    for two views of one memory's items grown by appends)."""
    n = len(seen)
    if n == 0 or same_history(items, seen):
        return True
    if len(items) < n or (items[n - 1] is not seen[n - 1] and _differ(items[n - 1], seen[n - 1])):
        return False
    a, b = _storage(items, seen)
    return a[:n] == (b if len(b) == n else b[:n])


def _common(items: Sequence[Item], seen: Sequence[Item]) -> int:
    """The length of the common prefix of ``items`` and ``seen``.

    Two projector prompts (``ItemsChain``) are compared run by run: a run of the same list at
    the same offset holds the same items, unread, so only where the runs differ are items
    compared. Items are compared in C (identity first, ``==`` only for two distinct objects)
    over chunks growing from the start, so a short common prefix (a sliding window's) costs
    little; in the chunk that differs, the first pair of distinct objects is found by identity
    in C, and only that pair is compared with ``==``.
    """
    if isinstance(items, ItemsChain) and isinstance(seen, ItemsChain):
        return _common_runs(items.runs(), seen.runs())
    a, b = _storage(items, seen)
    return _shared(a, 0, b, 0, min(len(items), len(seen)))


def _common_runs(a: Sequence[Run], b: Sequence[Run]) -> int:
    """The common prefix of two chains of runs (see ``_common``)."""
    if not a or not b:
        return 0
    shared, i, j = 0, 0, 0
    source_a, x, end_a = a[0]
    source_b, y, end_b = b[0]
    while True:
        span = min(end_a - x, end_b - y)
        same = span if source_a is source_b and x == y else _shared(source_a, x, source_b, y, span)
        shared += same
        if same < span:
            return shared
        x, y = x + span, y + span
        if x == end_a:
            i += 1
            if i == len(a):
                return shared
            source_a, x, end_a = a[i]
        if y == end_b:
            j += 1
            if j == len(b):
                return shared
            source_b, y, end_b = b[j]


def _shared(a: Sequence[Item], x: int, b: Sequence[Item], y: int, limit: int) -> int:
    """How many of ``a[x:]`` and ``b[y:]`` are equal from the start, up to ``limit``."""
    low = 0  # a[x : x + low] == b[y : y + low]
    # The same last item (an extension, a mask changed mid-prompt) hints at a long shared
    # prefix: start with long chunks. Otherwise short ones (a sliding window differs early).
    step = 256 if limit and a[x + limit - 1] is b[y + limit - 1] else 8
    while low < limit:
        if a[x + low] is not b[y + low]:  # (a sliding window's prompts differ right here)
            if _differ(a[x + low], b[y + low]):
                return low
            low, step = low + 1, 8  # an equal copy
            continue
        high = min(limit, low + step)
        chunk_a, chunk_b = a[x + low : x + high], b[y + low : y + high]
        if type(chunk_a) is not type(chunk_b):  # a list and a tuple are never equal
            chunk_a, chunk_b = tuple(chunk_a), tuple(chunk_b)
        if chunk_a == chunk_b:
            low, step = high, step * 2
            continue
        same = list(map(is_, chunk_a, chunk_b))
        first = same.index(False)
        if same.count(False) == 1 or _differ(chunk_a[first], chunk_b[first]):
            return low + first  # (the only distinct pair of a chunk that differs is the one)
        low, step = low + first + 1, 8  # an equal copy: go on from there
    return low


def _differ(a: Item, b: Item) -> bool:
    """``a != b`` for two items, decided in C when they differ in a field (the usual case: an
    output and its placeholder). Items are pydantic models whose fields are their whole
    ``__dict__``, so two of one type with different ``__dict__``s are never equal; otherwise
    pydantic's own comparison decides."""
    if type(a) is not type(b):
        return True
    return a.__dict__ != b.__dict__ or a != b


def _storage(a: Sequence[Item], b: Sequence[Item]) -> tuple[Sequence[Item], Sequence[Item]]:
    """``a`` and ``b`` as two lists or two tuples holding their items at the same positions
    (a view's own list, which may run longer: slice them below their lengths only), so that
    their slices compare in C without copying a view first."""
    a, b = sliceable(a), sliceable(b)
    if type(a) is type(b) and type(a) in (list, tuple):
        return a, b
    return (a if type(a) is list else list(a)), (b if type(b) is list else list(b))


def same_tools(a: Sequence[Tool], b: Sequence[Tool]) -> bool:
    if len(a) != len(b):
        return False
    return all(map(is_, a, b)) or all(x is y or x == y for x, y in zip(a, b, strict=True))
