"""Choosing a projection's window and its masked outputs without walking the window.

``Sums`` holds running totals over the closed groups of one growing history, appended to as the
groups close (each closed group is measured exactly once): the tokens of every group with its
bulky outputs masked, every maskable output with its saving, the groups whose items a repair
changes, and the groups that could make the whole prompt invalid. ``window_start`` and
``unmasked`` then answer the projector's two questions by binary search over those totals, so a
turn costs O(log history + what changed), not O(window):

* the window starts at the oldest group from which every group to the end fits (the fill the
  rules describe: newest first, masked, until a group does not fit);
* outputs are sent whole again newest first wherever the rest of the budget allows: a run of
  outputs that all fit is one search, and an output that does not fit skips to the next one
  small enough (one descent of a tree of minima over the savings).
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from compactkit.items import FunctionCall, FunctionCallOutput, Item
from compactkit.items.groups import Group
from compactkit.items.view import sliceable


class Mask(Protocol):
    """What ``Sums`` reads of a mask (``_projection.Mask``; typed structurally so this module
    does not import the one that uses it)."""

    @property
    def original(self) -> FunctionCallOutput: ...
    @property
    def placeholder(self) -> FunctionCallOutput: ...
    @property
    def saving(self) -> int: ...


class Piece(Protocol):
    """What ``Sums`` reads of a measured group (``_projection.Piece``)."""

    @property
    def index(self) -> int: ...
    @property
    def group(self) -> Group: ...
    @property
    def items(self) -> list[Item]: ...
    @property
    def min_tokens(self) -> int: ...
    @property
    def masks(self) -> Sequence[Mask]: ...
    @property
    def problem(self) -> str | None: ...
    @property
    def clean(self) -> bool: ...


__all__ = ["MinTree", "Sums", "may_be_invalid", "unmasked", "window_start"]


_NEAR = 12
"""``MinTree.last_at_most`` looks at this many newest values one by one before the tree."""


class MinTree:
    """Minima of an append-only list of ints over aligned power-of-two blocks.

    ``levels[0]`` is the list; ``levels[j][i]`` is the minimum of ``levels[0]`` over
    ``[i << j, (i + 1) << j)`` (the last block of a level may be partial). Appending is
    O(log n); ``last_at_most`` is O(log n).
    """

    def __init__(self) -> None:
        self.levels: list[list[int]] = [[]]

    def append(self, value: int) -> None:
        """Add ``value`` at the end."""
        levels = self.levels
        levels[0].append(value)
        index, j = len(levels[0]) - 1, 0
        while len(levels[j]) > 1:  # up to the root, one block per level
            index >>= 1
            if j + 1 == len(levels):  # level j just grew to two blocks: a root over both
                levels.append([min(levels[j][0], levels[j][1])])
            else:
                level = levels[j + 1]
                if index == len(level):
                    level.append(value)
                elif value < level[index]:
                    level[index] = value
            j += 1

    def smallest(self) -> int:
        """The minimum of the whole list (O(1); the list must not be empty)."""
        return self.levels[-1][0]

    def last_at_most(self, low: int, end: int, bound: int) -> int:
        """The largest ``k`` in ``[low, end)`` whose value is ``<= bound``; ``low - 1`` if none."""
        levels = self.levels
        values = levels[0]
        near = max(low, end - _NEAR)
        for k in range(end - 1, near - 1, -1):  # the answer is usually a step or two away
            if values[k] <= bound:
                return k
        j, lo, hi = 0, low, near
        left: list[tuple[int, int]] = []
        while lo < hi:  # climb, taking the boundary blocks: right ones newest first
            if hi & 1:
                hi -= 1
                if levels[j][hi] <= bound:
                    return self._descend(j, hi, bound)
            if lo & 1:
                left.append((j, lo))
                lo += 1
            lo >>= 1
            hi >>= 1
            j += 1
        for j, index in reversed(left):  # then the left ones, newest first
            if levels[j][index] <= bound:
                return self._descend(j, index, bound)
        return low - 1

    def _descend(self, j: int, index: int, bound: int) -> int:
        levels = self.levels
        while j:  # the right child when it holds a value <= bound, else the left one
            j -= 1
            right = 2 * index + 1
            level = levels[j]
            index = right if right < len(level) and level[right] <= bound else right - 1
        return index


@dataclass
class Sums:
    """Running totals over the closed groups of one history (append-only; shared by its views)."""

    # The two per-group running totals are machine integers (``array``): a list would hold an
    # int object of 32 bytes for each total past 256, one per group of the session.
    tokens: array[int] = field(default_factory=lambda: array("q", [0]))
    """``tokens[i]``: tokens of closed groups ``< i``, bulky outputs masked."""
    first_mask: array[int] = field(default_factory=lambda: array("q", [0]))
    """``first_mask[i]``: how many masks the closed groups ``< i`` hold."""
    masks: list[Mask] = field(default_factory=list)
    """Every mask of the closed groups, oldest first."""
    positions: list[int] = field(default_factory=list)
    """The snapshot index of each mask's output."""
    mask_ids: list[str] = field(default_factory=list)
    """The call id of each mask's output."""
    rendered: list[Item] = field(default_factory=list)
    """The closed groups' items as sent with every bulky output masked, from snapshot index
    ``base`` on: a run of masked groups is sent as one slice of it."""
    base: int = 0
    saved: list[int] = field(default_factory=lambda: [0])
    """``saved[k]``: savings of masks ``< k``."""
    savings: MinTree = field(default_factory=MinTree)
    """Each mask's saving, with minima over blocks (to find the newest mask that fits)."""
    problems: list[int] = field(default_factory=list)
    """Closed groups that break a tool-call rule (a repair changes their items), ascending."""
    unclean: list[int] = field(default_factory=list)
    """Closed groups that may make a prompt invalid (invalid alone, or a call id an earlier
    group used), ascending: only a prompt holding one needs the whole-prompt check."""
    # The call and output ids of the summed groups: dicts used as sets (a set's table takes
    # about five times a dict's memory at 5,000 ids; an index holds them for the session).
    call_ids: dict[str, None] = field(default_factory=dict)
    output_ids: dict[str, None] = field(default_factory=dict)
    bounded: int = 0
    """Closed groups ``< bounded`` are priced by an upper bound (no encoding, no masks): no
    window of up to ``reach`` tokens can reach them (``Pieces.catch_up``)."""
    reach: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        """Forget every total (the caller holds ``lock``), to sum the groups again."""
        fresh = Sums()
        for name in self.__dataclass_fields__:
            if name != "lock":
                setattr(self, name, getattr(fresh, name))

    @property
    def closed(self) -> int:
        """How many closed groups are summed."""
        return len(self.tokens) - 1

    def add(self, piece: Piece, items: Sequence[Item]) -> None:
        """Sum the next closed group (``piece``, measured from the snapshot ``items``)."""
        index = self.closed
        group = piece.group
        if index == 0:
            self.base = group.start
        self.tokens.append(self.tokens[-1] + piece.min_tokens)
        span = sliceable(items)[group.start : group.stop]  # (a view's slice copies in Python)
        if piece.masks:
            swap = {id(mask.original): mask.placeholder for mask in piece.masks}
            self.rendered.extend(swap.get(id(item), item) for item in span)
            where = {id(item): k for k, item in enumerate(span, group.start)}
            for mask in piece.masks:
                self.savings.append(mask.saving)
                self.masks.append(mask)
                self.positions.append(where[id(mask.original)])
                self.mask_ids.append(mask.original.call_id)
                self.saved.append(self.saved[-1] + mask.saving)
        else:
            self.rendered.extend(span)
        self.first_mask.append(len(self.masks))
        if piece.problem:
            self.problems.append(index)
        if not self.fresh_ids(piece) or not piece.clean:
            self.unclean.append(index)
        if group.kind != "assistant" and not piece.problem:
            return  # one message of its own: no call ids
        for item in piece.items:
            if isinstance(item, FunctionCall):
                self.call_ids[item.call_id] = None
            elif isinstance(item, FunctionCallOutput):
                self.output_ids[item.call_id] = None

    def fresh_ids(self, piece: Piece) -> bool:
        """Whether no call or output of ``piece`` reuses an id of a summed group."""
        if piece.group.kind != "assistant" and not piece.problem:
            return True  # one message of its own
        for item in piece.items:
            if isinstance(item, FunctionCall) and item.call_id in self.call_ids:
                return False
            if isinstance(item, FunctionCallOutput) and item.call_id in self.output_ids:
                return False
        return True


def window_start(
    sums: Sums, n_closed: int, tail: int | None, required: Mapping[int, int], room: int
) -> tuple[int, int]:
    """The oldest group from which every group to the end fits in ``room`` tokens, and the
    tokens those groups take beyond the ``required`` ones.

    ``tail`` is the tokens of the last group when it is still open (``None`` when there is
    none); ``required`` maps the groups counted already (pinned, latest user input, pending
    calls) to their tokens: they never stop the fill. The tokens of groups ``[s, end)`` shrink
    as ``s`` grows, so the answer is a binary search: one ``bisect`` over the running totals per
    stretch between two required groups (where the tokens already counted are constant).
    """
    n_groups = n_closed + (tail is not None)
    end = sums.tokens[n_closed] + (tail or 0)
    tokens = sums.tokens

    counted = sorted(required)  # the tokens of required groups >= counted[k]: after[k]
    after = [0] * (len(counted) + 1)
    for k in range(len(counted) - 1, -1, -1):
        after[k] = after[k + 1] + required[counted[k]]

    def cost(start: int) -> int:  # tokens of groups [start, end) not counted already
        size = end - tokens[start] if start <= n_closed else 0
        return size - after[bisect_left(counted, start)]

    low = 0
    for k, high in enumerate([*counted, n_groups]):
        # Starts in [low, high] have the required groups from counted[k] on ahead of them:
        # cost(s) = end - tokens[s] - after[k], so the first s that fits is one bisect.
        top = min(high, n_closed)
        if low <= top:
            start = bisect_left(tokens, end - after[k] - room, low, top + 1)
            if start <= top:
                return start, cost(start)
        low = high + 1
    return n_groups, cost(n_groups)  # nothing fits but the required groups


def unmasked(sums: Sums, low: int, high: int, room: int) -> tuple[list[tuple[int, int]], int]:
    """Masks ``[low, high)`` of ``sums`` sent whole, newest first while ``room`` allows.

    Returns the ranges sent whole (newest first) and the room left. Greedy, as the rules say: a
    mask that does not fit stays masked and an older, smaller one may still be sent whole.
    """
    saved, savings = sums.saved, sums.savings
    ranges: list[tuple[int, int]] = []
    if high <= low or room <= 0:
        return ranges, room
    smallest = savings.smallest()
    top = high
    while True:
        first = bisect_left(saved, saved[top] - room, low, top)
        if first < top:
            ranges.append((first, top))
            room -= saved[top] - saved[first]
            top = first
        if top <= low or room < smallest:
            break  # (no mask of the history fits what is left, so none of these does)
        # top - 1 does not fit: the newest older mask that does
        top = savings.last_at_most(low, top - 1, room) + 1
        if top <= low:
            break
    return ranges, room


def may_be_invalid(
    sums: Sums, start: int, n_closed: int, ahead: Sequence[Piece], tail: Piece | None
) -> bool:
    """Whether a prompt of the window from group ``start`` (plus the groups ``ahead`` of it
    and the open ``tail``) needs the whole-prompt validator: it holds a group that fails it
    alone or repeats an id of an earlier group (rare; each closed group is checked once)."""
    unclean = sums.unclean
    first = bisect_left(unclean, start)
    if first < len(unclean) and unclean[first] < n_closed:
        return True
    marked = set(unclean)
    if any(piece.index < n_closed and piece.index in marked for piece in ahead):
        return True
    last = tail or next((piece for piece in ahead if piece.index >= n_closed), None)
    return last is not None and (not last.clean or not sums.fresh_ids(last))
