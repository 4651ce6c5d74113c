"""A compacted history's kept groups, measured as the history before it measured them.

After a compaction the projector indexes the new history afresh: it no longer extends the one
indexed a call before (the summary changed, groups were folded away, outputs masked). Most of its
closed groups, though, are groups of that earlier history, made of the very same item objects,
and a closed group's measurement (``Pieces._measure``: its tokens with bulky outputs masked, and
those masks) is a function of its item objects alone, under a projector's fixed counter, mask
threshold and validation mode. ``Carried`` reads such a group's measurement from the earlier
history's running totals (``Sums``) instead of measuring it again.

A group is carried only when it is provably the same: an earlier closed group starting with the
same item object, of the same length, kind and pending calls, holding the same objects in order
(compared by identity, in C), summed exactly (not priced by an upper bound), with no problem and
valid alone with fresh ids (not in ``Sums.problems`` or ``Sums.unclean``, whose measurements
name positions or need the validator). Anything else is measured as before.

Cost model: the table of the earlier groups' first items is built once per compaction, at the
first look-up (O(earlier closed groups), a dict insert each); a look-up is a dict get, three
comparisons of the two groups and an identity comparison of their items. The plain version it
replaces is ``Pieces._measure`` on every closed group of the new history (a count look-up, a
class check and a mask check per item, the masks' placeholders, the validator's pass);
``tests/governance/test_replan_carry.py`` holds the projections to a fresh projector's.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import is_

from compactkit.governance._sums import Mask, Sums
from compactkit.items import Item
from compactkit.items.groups import Group
from compactkit.items.view import sliceable

__all__ = ["Carried"]


class Carried:
    """The measurements of the closed groups of one earlier history (a compaction replaced it).

    Args:
        items: The earlier history's items.
        closed: Its closed groups (the index's list: only ever appended to).
        sums: Its running totals.
    """

    __slots__ = (
        "_bounded",
        "_closed",
        "_first",
        "_first_mask",
        "_masks",
        "_skip",
        "_source",
        "_summed",
        "_tokens",
    )

    def __init__(self, items: Sequence[Item], closed: list[Group], sums: Sums) -> None:
        with sums.lock:  # the lists are only appended to (``clear`` puts new ones in place)
            self._summed = sums.closed
            self._bounded = sums.bounded
            self._tokens = sums.tokens
            self._first_mask = sums.first_mask
            self._masks = sums.masks
            self._skip = {*sums.problems, *sums.unclean}
        self._source = sliceable(items)
        self._closed = closed
        self._first: dict[int, int] | None = None

    def measured(self, group: Group, items: Sequence[Item]) -> tuple[int, list[Mask]] | None:
        """``(min_tokens, masks)`` of the closed ``group`` of ``items`` (a list or tuple,
        ``sliceable``), when it is an earlier group that was measured exactly, clean and
        without a problem; else ``None`` (measure it)."""
        first = self._first
        if first is None:
            first = self._first = self._firsts()
        earlier = first.get(id(items[group.start]))
        if earlier is None:
            return None
        old = self._closed[earlier]
        size = group.stop - group.start
        if (
            old.stop - old.start != size
            or old.kind != group.kind
            or old.pending != group.pending
            or old.call_ids != group.call_ids
        ):
            return None
        if size > 1 and not all(
            map(is_, items[group.start + 1 : group.stop], self._source[old.start + 1 : old.stop])
        ):
            return None
        tokens = self._tokens[earlier + 1] - self._tokens[earlier]
        return tokens, self._masks[self._first_mask[earlier] : self._first_mask[earlier + 1]]

    def _firsts(self) -> dict[int, int]:
        """``id(first item) -> index`` of the earlier closed groups a measurement may be
        carried from (an item held twice maps to its later group: the items are compared)."""
        source, closed, skip = self._source, self._closed, self._skip
        return {
            id(source[closed[index].start]): index
            for index in range(self._bounded, self._summed)
            if index not in skip
        }
