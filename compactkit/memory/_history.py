"""``SeqMap``: values by seq held in a list; ``InMemoryMemory``'s history (every item stored,
by seq) is one.

A memory numbers the items it stores 1, 2, 3, ... and keeps every one of them for the whole
session (recall, ``expand``, ``history()``). As a ``dict`` by seq that is about 40 bytes an item
(0.56 MiB at 15,000 items); here it is a list indexed by ``seq - base``, 8 bytes an item, with
``None`` where no item is held (an item the archive bound dropped, or a seq restored histories
skipped).

``MessageCompactor`` keeps its map of each message to the items it became (by the seq of its
first item) in one too. A ``SeqMap`` is a ``MutableMapping[int, V]`` whose iteration is by ascending seq (``history()``'s
documented order; a dict by seq iterated the same, since seqs only ever grow). A history whose
seqs are far apart (a restored one with large gaps) takes a plain ``dict``: ``history_of``
chooses.

The plain version is a ``dict``; ``tests/memory/test_seq_history.py`` holds this one to it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import TypeVar

from compactkit.items import Item

__all__ = ["SeqMap", "history_of", "items_from"]

V = TypeVar("V")

_SLACK = 64
"""Holes a dense history may hold beyond one per item before ``history_of`` takes a dict."""


class SeqMap(MutableMapping[int, V]):
    """Values by seq, held in a list from seq ``base`` on (see the module docstring)."""

    __slots__ = ("_base", "_items", "_size")

    def __init__(self) -> None:
        self._base = 0
        self._items: list[V | None] = []
        self._size = 0

    def __getitem__(self, seq: int) -> V:
        item = self.get(seq)
        if item is None:
            raise KeyError(seq)
        return item

    def get(self, seq: int | None, default: V | None = None) -> V | None:  # type: ignore[override]
        """The value of ``seq``, or ``default`` (a look-up the mapping mixin would do by catching
        ``KeyError``)."""
        if seq is None:  # an item never stored: held by none
            return default
        items = self._items
        try:
            index = seq - self._base
        except TypeError:  # not a seq at all
            return default
        if 0 <= index < len(items):
            item = items[index]
            if item is not None:
                return item
        return default

    def __contains__(self, seq: object) -> bool:
        return isinstance(seq, int) and self.get(seq) is not None  # (values are never None)

    def __setitem__(self, seq: int, item: V) -> None:
        items = self._items
        if seq - self._base == len(items) and items:  # the next seq (every append): O(1)
            items.append(item)
            self._size += 1
            return
        if not items:
            self._base = seq
        index = seq - self._base
        if index < 0:  # before the first seq held: the list starts earlier (not on appends)
            items[:0] = [None] * -index
            self._base, index = seq, 0
        if index >= len(items):
            items.extend([None] * (index - len(items)))
            items.append(item)
            self._size += 1
            return
        self._size += items[index] is None
        items[index] = item

    def set_run(self, seq: int, values: list[V]) -> None:
        """``self[seq + k] = values[k]`` for each value, in order: one list extend when they are
        the next seqs (every append of a batch), else one by one."""
        items = self._items
        if items and seq - self._base == len(items):
            items.extend(values)
            self._size += len(values)
            return
        for offset, value in enumerate(values):
            self[seq + offset] = value

    def subset(self, seqs: Sequence[int]) -> SeqMap[V]:
        """A new map of this one's values at ``seqs`` (ascending, distinct), those it holds: one
        copy of the span they cover, then holes over every gap between them."""
        out: SeqMap[V] = SeqMap()
        items, base = self._items, self._base
        if not seqs or not items:
            return out
        start, end = max(seqs[0], base), min(seqs[-1], base + len(items) - 1)
        if start > end:
            return out
        span = items[start - base : end - base + 1]
        after = start  # the first seq of the span not known to be among ``seqs``
        for seq in seqs[bisect_left(seqs, start) : bisect_right(seqs, end)]:
            if seq > after:  # the seqs between are not among them: holes
                span[after - start : seq - start] = [None] * (seq - after)
            after = seq + 1
        del span[after - start :]  # (past the last of them: none of them)
        out._base, out._items, out._size = start, span, len(span) - span.count(None)
        return out

    def __delitem__(self, seq: int) -> None:
        if seq not in self:
            raise KeyError(seq)
        self._items[seq - self._base] = None
        self._size -= 1

    def __iter__(self) -> Iterator[int]:
        base = self._base
        return (base + index for index, item in enumerate(self._items) if item is not None)

    def __len__(self) -> int:
        return self._size

    def items_from(self, seq: int) -> Iterator[tuple[int, V]]:
        """``(seq, item)`` of seq ``seq`` and after, by seq (O(items from there))."""
        start = max(0, seq - self._base)
        base = self._base
        for index in range(start, len(self._items)):
            item = self._items[index]
            if item is not None:
                yield base + index, item


def items_from(history: Mapping[int, Item], seq: int) -> Iterator[tuple[int, Item]]:
    """``(seq, item)`` of ``history`` from seq ``seq`` on, in the history's order."""
    if isinstance(history, SeqMap):
        return history.items_from(seq)
    return ((key, item) for key, item in history.items() if key >= seq)


def history_of(items: Mapping[int, Item]) -> MutableMapping[int, Item]:
    """``items`` (by seq, ascending) as a history: a ``SeqMap`` when its seqs are close
    together, else a ``dict`` (a list would hold every missing seq as a hole)."""
    if items and max(items) - min(items) + 1 > 2 * len(items) + _SLACK:
        return dict(items)
    history: SeqMap[Item] = SeqMap()
    for seq, item in items.items():
        history[seq] = item
    return history
