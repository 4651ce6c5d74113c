"""The projector's machinery: an incremental index of a growing history, and measured groups.

``ViewCache`` remembers the group structure of the last few histories it saw (one per session a
projector serves). When a snapshot's items extend a remembered history, only the appended tail is
grouped; the pinned groups and the latest user input are indexed as groups close, so no turn ever
scans the whole history in Python. ``Pieces`` measures the groups one projection looks at: their
tokens, the outputs that could be masked, and what breaks the tool-call rules.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, cast

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors.masking import placeholders
from compactkit.formats.validate import validate_items
from compactkit.governance._carry import Carried
from compactkit.governance._incremental import extends
from compactkit.governance._sums import Sums
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.groups import Group, group_items
from compactkit.items.snapshot import is_summary_message, leading_instructions
from compactkit.items.view import sliceable

__all__ = ["Mask", "Masker", "Piece", "Pieces", "View", "ViewCache", "unreachable_from"]

_COLD_GROUPS = 64
"""More closed groups than this new at once (a history read for the first time): price the
ones no window reaches by an upper bound (``Pieces.catch_up``)."""


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


class Masker:
    """Placeholders for bulky tool outputs (``mask_output``, as the masking compressor makes
    them), made once per output object (``compressors.masking.placeholders``, which the
    masking rung shares)."""

    def __call__(
        self, output: FunctionCallOutput, tool: str | None, tokens: int
    ) -> FunctionCallOutput:
        """The placeholder for ``output`` (``tokens`` long), naming ``tool`` when known."""
        return placeholders(output, tool, tokens)


class Pieces:
    """Measures the groups of one view on demand.

    A closed group is measured once for the life of its history's index (a projector's counter,
    threshold and validation mode are fixed); only the last group is measured per call.
    """

    def __init__(
        self,
        view: View,
        counter: TokenCounter,
        masker: Masker,
        threshold: int,
        validate: Literal["repair", "raise"] | None,
    ) -> None:
        self._view = view
        self._count = counter.count_item
        self._bound: Callable[[Item], int] | None = getattr(counter, "bound_item", None)
        self._masker = masker
        self._threshold = threshold
        self._validate = validate
        self._tail: Piece | None = None
        self._carried = view.carried

    def catch_up(self, reach: int | None = None) -> Sums:
        """The view's running totals, after summing the closed groups not summed yet (each
        closed group once in the life of its history).

        A group summed here is not kept as a ``Piece``: the totals hold what selecting and
        rendering need, and only the few groups a projection asks for by index (the required
        ones, repaired ones) are kept, measured again if need be. Keeping one per group
        would keep several objects per group alive for the life of the history, which the
        garbage collector then walks on every full collection.

        ``reach`` (the most tokens a window may take; ``None``: unknown) lets a long history
        read for the first time (a cold call) encode only what a window can reach: the groups
        are measured newest first until they take more than ``reach`` even masked, and the
        older ones are priced by the counter's upper bound (``bound_item``, no encoding). A
        window is chosen from suffix sums (``window_start``), which never include those
        groups: their suffix is already over ``reach``, and an upper bound only adds to it.
        A later call with a larger reach sums the history again, exactly."""
        view = self._view
        sums = view.sums
        if sums.bounded and (reach is None or reach > sums.reach):
            with sums.lock:
                if sums.bounded and (reach is None or reach > sums.reach):
                    sums.clear()
        if sums.closed < view.n_closed:
            measured = view.measured
            with sums.lock:
                newest: dict[int, Piece] = {}
                if reach is not None and view.n_closed - sums.closed > _COLD_GROUPS:
                    newest = self._reachable(sums.closed, reach)
                exact_from = min(newest, default=sums.closed)
                if exact_from > sums.closed:
                    sums.bounded, sums.reach = exact_from, reach or 0
                for index in range(sums.closed, view.n_closed):  # (add sums one each)
                    piece = (
                        measured.get(index)
                        or newest.get(index)
                        or (self._measure(index, bounded=True) if index < exact_from else None)
                        or self._reused(index)
                        or self._measure(index)
                    )
                    sums.add(piece, view.items)
        return sums

    def _reachable(self, first: int, reach: int) -> dict[int, Piece]:
        """The closed groups from the newest back while they take at most ``reach`` tokens
        masked, and the one that goes over (exact measurements, by index); all of them from
        ``first`` on when they fit."""
        out: dict[int, Piece] = {}
        total = 0
        for index in range(self._view.n_closed - 1, first - 1, -1):
            piece = self._view.measured.get(index) or self._measure(index)
            out[index] = piece
            total += piece.min_tokens
            if total > reach:
                break
        return out

    def get(self, index: int) -> Piece:
        """The measured group at ``index``."""
        view = self._view
        if index < view.n_closed:
            piece = view.measured.get(index)
            if piece is None:
                piece = view.measured[index] = self._reused(index) or self._measure(index)
            return piece
        if self._tail is None:
            self._tail = self._reused(index)
            if self._tail is None:
                self._tail = self._measure(index)
                view.open.clear()
                view.open[index] = self._tail
        return self._tail

    def _reused(self, index: int) -> Piece | None:
        """The open group's last measurement, when it still holds: the same items (views of one
        history hold the same objects at the same positions) and, for a group now closed, no
        call still waiting for its output (a closed group's missing outputs are a problem)."""
        view = self._view
        piece = view.open.get(index)
        if piece is None:
            return None
        group = view.group(index)
        if piece.group != group or (group.pending and index < view.n_groups - 1):
            return None
        return piece

    def _carry(self, index: int, group: Group) -> Piece | None:
        """The closed group at ``index`` as the history a compaction replaced measured it,
        when this history kept it (``_carry.py``); else ``None``."""
        assert self._carried is not None
        source = sliceable(self._view.items)
        known = self._carried.measured(group, source)
        if known is None:
            return None
        # (the masks are this module's: ``Sums`` holds them as it was given them)
        span = list(source[group.start : group.stop])
        return Piece(index, group, span, known[0], cast(list[Mask], known[1]))

    def _problem(self, index: int, group: Group) -> tuple[str | None, tuple[str, ...]]:
        """The tool-call rule the group at ``index`` breaks (``None``: none), and the calls a
        repair leaves out of it (those that never got an output, when repairing)."""
        if group.kind == "orphan":
            output = self._view.items[group.start]
            assert isinstance(output, FunctionCallOutput)
            return (
                f"tool output for call id {output.call_id!r} (item {group.start}) answers no call"
            ), ()
        if group.pending and index < self._view.n_groups - 1:
            ids = ", ".join(repr(call_id) for call_id in group.pending)
            problem = f"call(s) {ids} (item {group.start}) never got an output"
            return problem, group.pending if self._validate is not None else ()
        return None, ()

    def _measure(self, index: int, *, bounded: bool = False) -> Piece:
        """The group at ``index`` as sent, every bulky output masked; ``bounded``: priced by
        the counter's upper bound instead, nothing masked (a group no window reaches)."""
        view = self._view
        group = view.group(index)
        items = view.items
        if self._carried is not None and not bounded and index < view.n_closed:
            carried = self._carry(index, group)
            if carried is not None:
                return carried
        problem, unanswered = self._problem(index, group)
        if group.kind == "orphan" and self._validate is not None:
            return Piece(index, group, [], 0, problem=problem, dropped=True)
        count = self._bound if bounded and self._bound is not None else self._count
        source = sliceable(items)
        if group.kind != "assistant" and problem is None:  # one message of its own
            item = source[group.start]
            return Piece(index, group, [item], count(item))
        names: dict[str, str] = {}
        kept: list[Item] = []
        masks: list[Mask] = []
        total = 0
        threshold = self._threshold if not bounded else None
        for item in source[group.start : group.stop]:
            if isinstance(item, FunctionCall):
                if item.call_id in unanswered:
                    continue
                names[item.call_id] = item.name
            tokens = count(item)
            if (
                threshold is not None
                and isinstance(item, FunctionCallOutput)
                and tokens > threshold
                and not item.pinned
            ):
                tool = item.name or names.get(item.call_id)
                placeholder = self._masker(item, tool, tokens)
                short = count(placeholder)
                if short < tokens:
                    masks.append(Mask(item, placeholder, tokens - short))
                    tokens = short
            total += tokens
            kept.append(item)
        clean = self._validate is None or _valid_alone(kept)
        return Piece(index, group, kept, total, masks, problem, dropped=False, clean=clean)


def _valid_alone(items: list[Item]) -> bool:
    """Whether ``items`` pass the prompt validator by themselves (calls still waiting for
    their outputs aside: the projector keeps pending calls on purpose)."""
    calls: set[str] = set()
    answered: set[str] = set()
    for item in items:  # the usual group, decided without the validator's general machinery
        if isinstance(item, FunctionCall):
            if item.call_id in calls:
                break
            calls.add(item.call_id)
        elif isinstance(item, FunctionCallOutput):
            if item.call_id not in calls or item.call_id in answered:
                break
            answered.add(item.call_id)
        elif not isinstance(item, Message):
            break  # reasoning: its placement rules are the validator's
    else:
        return True  # unique calls, each output after its call, once: what the rules ask
    _, problems = validate_items(items, format="responses", mode="repair")
    return all(problem.kind == "missing_output" for problem in problems)


def unreachable_from(
    items: Sequence[Item],
    counter: TokenCounter,
    threshold: int,
    validate: Literal["repair", "raise"] | None,
    budget: int,
) -> int | None:
    """Where the groups no window under ``budget`` can reach end, in ``items`` (the end of a
    history, cut before a user message): the start of the newest closed group from which the
    closed groups to the end take more than ``budget`` tokens even masked, as a projection
    measures them (``Pieces``); ``None`` when they all fit.

    A window is a suffix of whole groups within the budget, so it never holds that group or
    an older one, whatever precedes ``items`` (the rule ``Pieces.catch_up`` prices unreachable
    groups by; the open last group is not counted: a cut may make it smaller than masked).
    Cost: the groups measured, newest first, until the budget is passed."""
    view = _Index().update(items)
    pieces = Pieces(view, counter, Masker(), threshold, validate)
    total = 0
    for index in range(view.n_closed - 1, -1, -1):
        total += pieces._measure(index).min_tokens
        if total > budget:
            return view.group(index).start
    return None
