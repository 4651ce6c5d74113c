"""Resuming a conversion of items to wire messages (``WireConverter.from_items``).

A loop converts the prompt of every call: the previous prompt and what was appended since.
``Resume`` is what a call leaves for the next one (its items, its messages, where its messages
can no longer change, the runs of items it converted); ``starts_with`` tells whether a list of
items extends the one a resume was of, and ``unlike`` whether it holds the same items as another
list but for equal copies of seq-less ones (``WireConverter.converted_like``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import is_not, itemgetter
from typing import Any

from compactkit.items import Item
from compactkit.items.view import same_history

__all__ = ["OUT_END", "Resume", "starts_with", "unlike"]


@dataclass
class Resume:
    """Where the last ``from_items`` may be resumed: its items up to ``index`` went out as
    ``out[:sent]`` (Anthropic: merged into ``merged``), with ``system`` so far."""

    items: Sequence[Item]
    skip: int
    index: int
    out: list[Any]
    sent: int
    system: Any
    originals: Mapping[int, tuple[Any, ...]]
    merged: list[Any]
    runs: list[tuple[int, int, int, int]]
    """The converted runs of items (not sent as given): ``(first, stop)`` of the items and
    ``(at, end)`` of their messages in ``out``, in order."""


OUT_END = itemgetter(3)


def starts_with(items: Sequence[Item], seen: Sequence[Item], n: int) -> bool:
    """Whether the first ``n`` items of ``items`` are those of ``seen`` (the very objects)."""
    if n == 0 or same_history(items, seen):  # one list grown in place: O(1)
        return True
    if items[n - 1] is not seen[n - 1] or items[0] is not seen[0]:
        return False
    return tuple(items[:n]) == tuple(seen[:n])  # in C, identity first


def unlike(items: Sequence[Item], seen: Sequence[Item]) -> list[int] | None:
    """Where ``items`` hold equal copies of ``seen``'s items without a seq (no original
    stands for them: each is converted from its fields), the very objects elsewhere; ``None``
    when they differ otherwise."""
    if len(items) != len(seen):
        return None
    differ = list(compress(range(len(items)), map(is_not, items, seen)))  # (in C)
    for at in differ:
        item, other = items[at], seen[at]
        if item.seq is not None or other.seq is not None or item != other:
            return None
    return differ
