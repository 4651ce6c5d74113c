"""The projection's second step, ``select``: the window, and which bulky outputs stay masked.

From a ``_plan.Plan``: the window starts at the oldest group from which every group to the end
fits the room left (whole groups, newest first, bulky outputs masked); the groups never dropped
that lie before it are kept ahead of it. Then outputs are sent whole again, newest first,
wherever the rest of the budget allows: the oldest stay masked, and so does an output too large
to fit whole at any age. The mask accounting (which outputs stay masked, their call ids, the
tokens saved) is done here; ``_render.render`` only lays the items out.

Both questions are binary searches over the running totals of the closed groups (``_sums``), so
selecting costs O(log history + what changed), not O(window).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from compactkit.errors import FormatError
from compactkit.governance._fast import masked_outputs
from compactkit.governance._plan import Plan
from compactkit.governance._projection import Mask, Piece
from compactkit.governance._prompt import ValidateMode
from compactkit.governance._sums import unmasked, window_start

__all__ = ["Selection", "greedy", "refuse_problems", "select"]


@dataclass(slots=True)
class Selection:
    """What ``select`` returns: the window and the outputs that stay masked."""

    plan: Plan
    start: int
    """The window's first group."""
    room: int
    """Tokens the budget leaves after the window."""
    ahead: list[Piece]
    """Groups never dropped that lie before the window, in order."""
    tail_in_window: bool
    """Whether the open last group is sent (in the window)."""
    problems: list[Piece]
    """Groups sent that break a tool-call rule (a repair changes their items)."""
    whole: list[tuple[int, int]]
    """Ranges of the window's masks (indexes into ``plan.sums``) sent whole, ascending."""
    low: int
    """The window's first mask (index into ``plan.sums``)."""
    high: int
    """One past the window's last closed-group mask."""
    masked_ahead: list[Mask]
    """Masks of the groups ahead of the window that stay masked."""
    masked_tail: list[Mask]
    """Masks of the open last group that stay masked, oldest first."""
    masked_ids: list[str]
    """Call ids of every output that stays masked (ahead, window, tail; oldest first)."""
    n_masked: int
    saved: int
    """Tokens the masked outputs' placeholders save."""


def select(plan: Plan) -> Selection:
    """The window of ``plan`` and the outputs that stay masked.

    Raises:
        FormatError: with ``validate="raise"``, a group sent breaks the tool-call rules.
    """
    sums, view, tail, needed = plan.sums, plan.view, plan.tail, plan.needed
    n_closed = view.n_closed
    tail_tokens = None if tail is None else needed.get(n_closed, tail.min_tokens)
    start, used = window_start(sums, n_closed, tail_tokens, needed, plan.room)
    if start < sums.bounded:  # never, by catch_up's choice; were it to, sum exactly
        sums = plan.pieces.catch_up(reach=None)
        start, used = window_start(sums, n_closed, tail_tokens, needed, plan.room)
    room = plan.room - used
    ahead = [plan.pieces.get(index) for index in sorted(plan.required) if index < start]
    in_window = tail is not None and tail.index >= start
    problems = _problems(plan, start, ahead, tail if in_window else None)
    refuse_problems(problems, plan.rules.validate)
    masked_tail: list[Mask] = []
    if in_window and tail is not None and n_closed not in plan.required:
        masked_tail, room = greedy(reversed(tail.masks), room)
    low, high = sums.first_mask[min(start, n_closed)], sums.first_mask[n_closed]
    whole, room = unmasked(sums, low, high, room)
    whole.sort()
    masked_ahead: list[Mask] = []
    for piece in reversed(ahead):
        if piece is tail:
            continue  # sent whole (or cut), counted in full already
        kept_masked, room = greedy(reversed(piece.masks), room)
        masked_ahead = kept_masked + masked_ahead
    masked_tail.reverse()
    ids, n_masked, saved = masked_outputs(sums, low, high, whole, masked_ahead, masked_tail)
    return Selection(
        plan,
        start,
        room,
        ahead,
        in_window,
        problems,
        whole,
        low,
        high,
        masked_ahead,
        masked_tail,
        ids,
        n_masked,
        saved,
    )


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


def _problems(plan: Plan, start: int, ahead: Sequence[Piece], tail: Piece | None) -> list[Piece]:
    """The groups sent that break a tool-call rule: closed ones of the window (indexed in the
    running totals), then the open last group and those kept ahead."""
    sums, n_closed = plan.sums, plan.view.n_closed
    first = bisect_left(sums.problems, start)
    in_window = [tail] if tail is not None else []
    return [
        *(plan.pieces.get(i) for i in sums.problems[first:] if i < n_closed),
        *(piece for piece in [*in_window, *ahead] if piece.problem),
    ]


def refuse_problems(pieces: Sequence[Piece], validate: ValidateMode) -> None:
    """With ``validate="raise"``, a ``FormatError`` naming what breaks the tool-call rules."""
    problems = [piece.problem for piece in pieces if piece.problem]
    if problems and validate == "raise":
        raise FormatError(
            f"the history breaks the tool-call rules: {'; '.join(problems)}. "
            "Fix the memory, or project with validate='repair'"
        )
