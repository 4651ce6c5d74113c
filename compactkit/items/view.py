"""``ItemsView``: a read-only view of the first items of a memory's append-only list.

A memory hands out a snapshot before every model call. Copying the active items into a tuple
each time costs O(history) per call (and freeing last call's copy as much again); a view costs
O(1). It is safe because a memory only ever *appends* to the list a view looks at: any other
change (a compaction, a pin, a restore, a clear) puts a new list in its place, so the first
``len(view)`` items of the old list never change.

A view behaves like the tuple it stands for: indexing, slicing (a slice is a tuple), iteration,
``len``, ``in``, ``==`` and ``hash`` agree with ``tuple(view)``; ``+`` with a tuple gives a
tuple; it pickles and copies as a tuple. ``tuple(view)`` makes the copy when one is needed.

``ItemsChain`` is the same for a prompt: runs of lists and tuples that never change (the
instructions, slices of a memory's list, slices of the projector's masked rendering of the
history) joined without copying them, so building a prompt costs O(runs), not O(items).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice
from typing import Any, SupportsIndex, overload

from compactkit.items.model import Item

__all__ = ["ItemsChain", "ItemsView"]  # same_history, sliceable: for the projector


class _TupleLike(Sequence[Item]):
    """What a read-only sequence standing for a tuple shares: ``==`` and ``hash`` with tuples
    (never equal to a list, as a tuple is not), ``in``, ``+`` giving a tuple, ``repr``, and
    pickling and copying as the tuple."""

    __slots__ = ()

    def _tuple(self) -> tuple[Item, ...]:
        raise NotImplementedError

    def __contains__(self, value: object) -> bool:
        return any(item is value or item == value for item in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, _TupleLike)):
            return len(other) == len(self) and self._tuple() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __add__(self, other: object) -> tuple[Item, ...]:
        if isinstance(other, (tuple, _TupleLike)):
            return (*self, *other)
        return NotImplemented

    def __radd__(self, other: object) -> tuple[Item, ...]:
        if isinstance(other, tuple):
            return (*other, *self)
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self._tuple())

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self._tuple(),))  # pickled and copied as the tuple it stands for


class ItemsView(_TupleLike):
    """The first ``stop`` items of ``source``, a list its owner only appends to.

    Built by memories (``InMemoryMemory.snapshot``); code that reads a snapshot never needs to
    tell a view from a tuple.
    """

    __slots__ = ("_source", "_stop")

    def __init__(self, source: list[Item], stop: int | None = None) -> None:
        self._source = source
        self._stop = len(source) if stop is None else stop

    def __len__(self) -> int:
        return self._stop

    @overload
    def __getitem__(self, index: SupportsIndex) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Item, ...]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> Item | tuple[Item, ...]:
        stop = self._stop
        if isinstance(index, slice):
            start, end, step = index.indices(stop)
            if step == 1:
                return tuple(self._source[start:end])
            source = self._source  # an end of -1 would count from the list's end: index it
            return tuple(source[position] for position in range(start, end, step))
        position = index.__index__()
        if position < 0:
            position += stop
        if not 0 <= position < stop:
            raise IndexError("ItemsView index out of range")
        return self._source[position]

    def __iter__(self) -> Iterator[Item]:
        return islice(self._source, self._stop)

    def __reversed__(self) -> Iterator[Item]:
        source = self._source
        return (source[position] for position in range(self._stop - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ItemsView):
            if other._stop != self._stop:
                return False
            return other._source is self._source or self._tuple() == other._tuple()
        return super().__eq__(other)

    __hash__ = _TupleLike.__hash__  # (defining __eq__ would otherwise unset it)

    def _tuple(self) -> tuple[Item, ...]:
        return tuple(islice(self._source, self._stop))

    def appended_since(self, earlier: object) -> list[Item] | None:
        """The items appended after ``earlier`` when this view extends it (a view of the same
        list, no shorter), else ``None`` — O(new items), for savers that write only what is
        new."""
        if not isinstance(earlier, ItemsView) or earlier._source is not self._source:
            return None
        if earlier._stop > self._stop:
            return None
        return self._source[earlier._stop : self._stop]


Run = tuple[Sequence[Item], int, int]
"""``(source, start, stop)``: ``source[start:stop]``, a list or tuple never changed there."""


class ItemsChain(_TupleLike):
    """The items of ``runs`` in order, joined without copying (``Run``: a slice of a list or
    tuple that is never changed below the slice's end).

    Built by the projector (``Projection.items``); it behaves like the tuple it stands for, as
    ``ItemsView`` does. ``runs()`` lets a caller compare two chains run by run: two runs of the
    same source at the same offset hold the same items without looking at them.
    """

    __slots__ = ("_ends", "_len", "_runs")

    def __init__(self, items: Iterable[Item] = ()) -> None:
        """A chain of one run holding ``items`` (as ``tuple(items)`` does; pydantic rebuilds a
        validated sequence this way); the projector joins runs with ``joined``."""
        held = tuple(items)
        self._runs: tuple[Run, ...] = ((held, 0, len(held)),) if held else ()
        self._ends = [len(held)] if held else []
        self._len = len(held)

    @classmethod
    def joined(cls, runs: Sequence[Run]) -> ItemsChain:
        """The items of ``runs`` in order, without copying them."""
        chain = cls.__new__(cls)
        kept: list[Run] = []
        ends: list[int] = []
        total = 0
        for source, start, stop in runs:
            if stop > start:
                kept.append((source, start, stop))
                total += stop - start
                ends.append(total)
        chain._runs = tuple(kept)
        chain._ends = ends
        chain._len = total
        return chain

    def runs(self) -> tuple[Run, ...]:
        """The non-empty runs, in order."""
        return self._runs

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: SupportsIndex) -> Item: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Item, ...]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> Item | tuple[Item, ...]:
        if isinstance(index, slice):
            start, end, step = index.indices(self._len)
            if step != 1:
                return self._tuple()[index]
            return tuple(chain.from_iterable(self._slices(start, end)))
        position = index.__index__()
        if position < 0:
            position += self._len
        if not 0 <= position < self._len:
            raise IndexError("ItemsChain index out of range")
        run = bisect_right(self._ends, position)
        source, start, stop = self._runs[run]
        return source[stop - (self._ends[run] - position)]

    def _slices(self, start: int, end: int) -> list[Sequence[Item]]:
        """``self[start:end]`` (``0 <= start``, ``end <= len(self)``) as slices of the runs."""
        if start >= end:
            return []
        out: list[Sequence[Item]] = []
        run = bisect_right(self._ends, start)
        begin = self._ends[run - 1] if run else 0  # where the run starts in the chain
        while begin < end:
            source, first, stop = self._runs[run]
            out.append(
                source[first + max(0, start - begin) : first + min(stop - first, end - begin)]
            )
            begin += stop - first
            run += 1
        return out

    def __iter__(self) -> Iterator[Item]:
        return chain.from_iterable(self._slices(0, self._len))

    def __reversed__(self) -> Iterator[Item]:
        return reversed(self._tuple())

    def _tuple(self) -> tuple[Item, ...]:
        return tuple(self)


def same_history(items: Sequence[Item], seen: Sequence[Item]) -> bool:
    """Whether ``items`` and ``seen`` are views of one list, ``items`` at least as long: then
    ``items`` starts with ``seen``. O(1).

    ``False`` means "not known this way" (compare the items), never "does not extend".
    """
    return (
        isinstance(items, ItemsView)
        and isinstance(seen, ItemsView)
        and items._source is seen._source
        and items._stop >= seen._stop
    )


def sliceable(items: Sequence[Item]) -> Sequence[Item]:
    """A list or tuple holding ``items`` at the same positions and never changed there, to
    slice (or to run an ``ItemsChain`` over) without the tuple copy a view's slice makes: read
    only, and only below ``len(items)`` (a view's list may hold more). Any other sequence (a
    list its owner may change) is copied."""
    if isinstance(items, ItemsView):
        return items._source
    return items if isinstance(items, tuple) else tuple(items)
