"""The projector's index of a growing history, and the shape of a measured group.

``ViewCache`` remembers the group structure of the last few histories it saw (one per session a
projector serves). When a snapshot's items extend a remembered history, only the appended tail is
grouped; the pinned groups and the latest user input are indexed as groups close, so no turn ever
scans the whole history in Python. A ``View`` holds the groups measured so far as ``Piece``s
(``_pieces.Pieces`` measures them: their tokens, the outputs that could be masked, and what
breaks the tool-call rules).
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from compactkit.governance._carry import Carried
from compactkit.governance._incremental import extends
from compactkit.governance._sums import Sums
from compactkit.items import FunctionCallOutput, Item
from compactkit.items.groups import Group, group_items
from compactkit.items.snapshot import is_summary_message, leading_instructions

__all__ = ["Mask", "Piece", "View", "ViewCache", "index_of"]


@dataclass(slots=True)  # not frozen: built every turn, and frozen init costs more
class View:
    """The structure of one items tuple: leading instructions, groups, pins, latest user input.

    ``closed`` is shared with later views of the same growing history and only ever appended
    to; this view owns its first ``n_closed`` entries, then ``tail`` (the last group, which may
    still grow).
    """

    items: Sequence[Item]
    lead: int
    closed: list[Group]
    n_closed: int
    tail: Group | None
    pinned: list[int]
    n_pinned: int
    tail_pinned: bool
    last_user: int
    measured: dict[int, Piece]
    """Measurements of closed groups, shared by every view of the history (closed groups never
    change, so a group is measured once, not once per turn)."""
    sums: Sums
    """Running totals over the measured closed groups, shared like ``measured``."""
    open: dict[int, Piece]
    """The last measurement of the open last group, by index, shared like ``measured``: the
    next turns reuse it while that group is unchanged, and when it closes as it was."""
    carried: Carried | None
    """The measurements of the history a compaction replaced, for the groups this history
    kept of it (``_carry.py``); only while the history is read for the first time."""

    @property
    def n_groups(self) -> int:
        """How many groups follow the leading instructions."""
        return self.n_closed + (self.tail is not None)

    def group(self, index: int) -> Group:
        """The group at ``index`` (0 is the first group after the leading instructions)."""
        if index < self.n_closed:
            return self.closed[index]
        assert self.tail is not None and index == self.n_closed
        return self.tail

    def required(self) -> dict[int, str]:
        """The groups a projection may never drop, by index, with the part each one is."""
        required = dict.fromkeys(self.pinned[: self.n_pinned], "pinned items")
        if self.tail_pinned:
            required[self.n_closed] = "pinned items"
        if self.last_user >= 0:
            required[self.last_user] = "latest user input"
        if self.tail is not None and self.tail.pending:
            required[self.n_closed] = "pending calls"
        elif self.tail is not None and self.tail.kind != "orphan":
            # The newest group, sent whole: the model's last calls with their outputs.
            required.setdefault(self.n_closed, "newest group")
        return required


class _Index:
    """The structure of one growing history, extended in place (callers hold the cache lock;
    a projection using its view holds ``lock``: it measures groups into the shared sums)."""

    def __init__(self, carried: Carried | None = None) -> None:
        self.lock = threading.RLock()
        self.carried = carried
        self.items: Sequence[Item] = ()
        self.lead = 0
        self.closed: list[Group] = []
        self.pinned: list[int] = []
        self.last_user = -1
        self.tail: Group | None = None
        self.tail_pinned = False
        self.measured: dict[int, Piece] = {}
        self.sums = Sums()
        self.open: dict[int, Piece] = {}
        self.view = self._view()

    def update(self, items: Sequence[Item]) -> View:
        """Index the items appended since the last call (``items`` extends ``self.items``)."""
        if len(items) == len(self.items):
            self.items = items
            self.view = self._view()
            return self.view
        if self.items:
            self.carried = None  # read whole once: what is appended now is new
        if self.lead == len(self.items):  # nothing but instructions so far: they may go on
            self.lead = start = leading_instructions(items)
        elif self.tail is not None and self.tail.kind == "assistant":
            start = self.tail.start  # a response may still be receiving outputs: regroup it
        else:
            if self.tail is not None:
                self._close(self.tail, items)
            start = len(self.items)
        groups = group_items(items, start)
        if len(groups) > 1:
            # The pinned items among the new ones (few, often none), found in one pass: a
            # history read anew (after a compaction) closes every group at once.
            pins = [start + i for i, item in enumerate(items[start:]) if item.pinned]
            for group in groups[:-1]:
                self._close(group, items, pins)
        self.tail = groups[-1] if groups else None
        self.tail_pinned = self.tail is not None and _has_pin(items, self.tail)
        self.items = items
        self.view = self._view()
        return self.view

    def _close(self, group: Group, items: Sequence[Item], pins: list[int] | None = None) -> None:
        """Index a group that can no longer grow (``pins``: the sorted positions of the pinned
        items among ``items`` from before ``group`` on, when the caller has them)."""
        index = len(self.closed)
        self.closed.append(group)
        if _has_pin(items, group) if pins is None else _holds(pins, group):
            self.pinned.append(index)
        if group.kind == "user" and not is_summary_message(items[group.start]):
            self.last_user = index

    def _view(self) -> View:
        last_user = self.last_user
        tail = self.tail
        if tail is not None and tail.kind == "user" and not is_summary_message(self.items[-1]):
            last_user = len(self.closed)
        return View(
            self.items,
            self.lead,
            self.closed,
            len(self.closed),
            tail,
            self.pinned,
            len(self.pinned),
            self.tail_pinned,
            last_user,
            self.measured,
            self.sums,
            self.open,
            self.carried,
        )


def _has_pin(items: Sequence[Item], group: Group) -> bool:
    return any(item.pinned for item in items[group.start : group.stop])


def _holds(positions: list[int], group: Group) -> bool:
    """Whether the sorted ``positions`` hold one inside ``group``."""
    at = bisect_left(positions, group.start)
    return at < len(positions) and positions[at] < group.stop


class ViewCache:
    """Views of the last few histories seen (least recently used dropped first)."""

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._indexes: list[_Index] = []
        self._lock = threading.Lock()
        self._retired: Carried | None = None
        """The measurements of the history ``forget`` dropped last, for the next history
        read anew (the compacted one, which keeps most of its groups)."""

    def view(self, items: Sequence[Item]) -> View:
        """The structure of ``items``, reusing what is known about a history it extends (for
        one thread at a time per history: ``held`` for a projection)."""
        with self._lock:
            return self._viewed(self._index_of(items), items)

    @contextmanager
    def held(self, items: Sequence[Item]) -> Iterator[View]:
        """``view(items)``, with the history's index held until the block ends: two threads
        projecting one session take turns, as each measures groups into the index's shared
        sums (the caches of other sessions are not held)."""
        while True:
            with self._lock:
                index = self._index_of(items)
            index.lock.acquire()
            try:
                with self._lock:  # still the index of ``items``? (another thread may have
                    # extended it past ``items``, or the cache dropped it, meanwhile)
                    found = index in self._indexes and (
                        index.items is items or extends(items, index.items)
                    )
                    view = self._viewed(index, items) if found else None
                if view is not None:
                    yield view
                    return
            finally:
                index.lock.release()

    def _index_of(self, items: Sequence[Item]) -> _Index:
        """The index of the history ``items`` is or extends, moved first in the cache; a new
        one of ``items`` when there is none (the cache lock is held)."""
        for position, index in enumerate(self._indexes):
            if index.items is items or extends(items, index.items):
                if position:
                    self._indexes.insert(0, self._indexes.pop(position))
                return index
        index = _Index(self._retired)
        self._retired = None
        index.update(items)  # (indexed before it is shared: no other history takes it)
        self._indexes.insert(0, index)
        del self._indexes[self._size :]
        return index

    @staticmethod
    def _viewed(index: _Index, items: Sequence[Item]) -> View:
        """``index``'s view of ``items`` (the cache lock is held)."""
        return index.view if index.items is items else index.update(items)

    def forget(self, items: Sequence[Item]) -> None:
        """Drop the index of the history ``items`` extends (a compaction replaced it), with its
        measured groups: they are freed now, not once other histories have pushed it out."""
        with self._lock:
            kept = [index for index in self._indexes if not extends(items, index.items)]
            dropped = next((index for index in self._indexes if index not in kept), None)
            self._indexes = kept
        if dropped is not None:  # (outside the cache lock: it waits for a projection that
            # is still measuring that history, and other sessions' projections go on)
            carried = Carried(dropped.items, dropped.closed, dropped.sums)
            with self._lock:
                self._retired = carried


@dataclass(frozen=True)
class Mask:
    """A tool output that may be sent as a placeholder instead."""

    original: FunctionCallOutput
    placeholder: FunctionCallOutput
    saving: int
    """Tokens saved by sending the placeholder."""


@dataclass
class Piece:
    """One group as a projection would send it."""

    index: int
    group: Group
    items: list[Item]
    """The group's items, minus what a repair removed."""
    min_tokens: int
    """Tokens with every maskable output masked."""
    masks: list[Mask] = field(default_factory=list)
    problem: str | None = None
    """The tool-call rule the group breaks, if any."""
    dropped: bool = False
    """A repair removes the whole group."""
    clean: bool = True
    """The items pass the prompt validator on their own (so a prompt of clean groups with
    unique ids passes it whole)."""


def index_of(items: Sequence[Item]) -> View:
    """The structure of ``items``, indexed from scratch (no cache)."""
    return _Index().update(items)
