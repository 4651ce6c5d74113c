"""The projector's last step: the window's items as sent, copied as slices.

``ContextProjector.project`` plans (``_projection``), selects (``_select``), then renders here:
closed groups go as slices of their masked rendering, kept in ``Sums``, the spans of outputs
sent whole as slices of the snapshot's items, and repaired groups and the open last group as
their own items.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter

from compactkit.governance._projection import Mask, Piece
from compactkit.governance._select import Sums
from compactkit.items import Item
from compactkit.items.view import Run, sliceable

__all__ = ["complement", "greedy", "render_window"]


def greedy(masks: Iterable[Mask], room: int) -> tuple[list[Mask], int]:
    """Send each mask's output whole while ``room`` allows, in the given order; the masks that
    stay masked (in that order) and the room left."""
    kept: list[Mask] = []
    for mask in masks:
        if mask.saving <= room:
            room -= mask.saving
        else:
            kept.append(mask)
    return kept, room


def complement(low: int, high: int, ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The runs of ``[low, high)`` outside ``ranges`` (disjoint, ascending), ascending."""
    out: list[tuple[int, int]] = []
    at = low
    for begin, end in ranges:
        if at < begin:
            out.append((at, begin))
        at = end
    if at < high:
        out.append((at, high))
    return out


def render_window(
    out: list[Run],
    items: Sequence[Item],
    sums: Sums,
    first: int,
    whole: Sequence[tuple[int, int]],
    own: Sequence[tuple[Piece, list[Item]]],
) -> int:
    """Append the window (snapshot items ``first`` to the end) to ``out`` as runs; how many
    snapshot items it sends.

    Closed groups go as runs of their masked rendering (``sums.rendered``), the spans of
    outputs sent whole as runs of the items, and the groups in ``own`` (repaired ones, the
    open last group) as their own items: one run per span, nothing copied.
    """
    positions = sums.positions
    spans: list[tuple[int, int, Sequence[Item] | None]] = [
        (piece.group.start, piece.group.stop, sent) for piece, sent in own
    ]
    repaired = [(piece.group.start, piece.group.stop) for piece, _ in own if piece.problem]
    for a, b in whole:
        if not repaired:
            spans.append((positions[a], positions[b - 1] + 1, None))
            continue
        spans += [  # one output at a time, outside the repaired groups (rare)
            (positions[k], positions[k] + 1, None)
            for k in range(a, b)
            if not any(begin <= positions[k] < end for begin, end in repaired)
        ]
    spans.sort(key=_span_start)
    n = len(items)
    closed_end = n  # where the closed groups end: before an open last group sent as its own
    for piece, _ in own:
        if piece.group.stop == n:
            closed_end = piece.group.start
            break
    rendered, base, at = sums.rendered, sums.base, first
    source = sliceable(items)  # slices below len(items) only
    sent = n - first
    for begin, end, replacement in spans:
        out.append((rendered, at - base, begin - base))
        if replacement is None:
            out.append((source, begin, end))
        else:
            out.append((replacement, 0, len(replacement)))
            sent -= (end - begin) - len(replacement)
        at = end
    if at < closed_end:
        out.append((rendered, at - base, closed_end - base))
    return sent


_span_start = itemgetter(0)  # a span's begin (a key in C)
