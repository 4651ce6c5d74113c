"""``ItemsView``: a read-only view of the first items of a memory's append-only list.

A memory hands out a snapshot before every model call. Copying the active items into a tuple
each time costs O(history) per call (and freeing last call's copy as much again); a view costs
O(1). It is safe because a memory only ever *appends* to the list a view looks at: any other
change (a compaction, a pin, a restore, a clear) puts a new list in its place, so the first
``len(view)`` items of the old list never change.

A view behaves like the tuple it stands for: indexing, slicing (a slice is a tuple), iteration,
``len``, ``in``, ``==`` and ``hash`` agree with ``tuple(view)``; ``+`` with a tuple gives a
tuple; it pickles and copies as a tuple. ``tuple(view)`` makes the copy when one is needed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any, SupportsIndex, overload

from compactkit.items.model import Item

__all__ = ["ItemsView"]  # same_history and sliceable are for the projector


class ItemsView(Sequence[Item]):
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

    def __contains__(self, value: object) -> bool:
        return any(item is value or item == value for item in self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ItemsView):
            if other._stop != self._stop:
                return False
            return other._source is self._source or self._tuple() == other._tuple()
        if isinstance(other, tuple):
            return len(other) == self._stop and self._tuple() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._tuple())

    def __add__(self, other: object) -> tuple[Item, ...]:
        if isinstance(other, (tuple, ItemsView)):
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

    def _tuple(self) -> tuple[Item, ...]:
        return tuple(islice(self._source, self._stop))


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
    """A list or tuple holding ``items`` at the same positions, to slice without the tuple
    copy a view's slice makes: read only, and only below ``len(items)`` (a view's list may
    hold more)."""
    return items._source if isinstance(items, ItemsView) else items
