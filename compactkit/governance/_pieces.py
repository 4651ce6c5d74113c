"""The groups one projection looks at, measured: ``Pieces``.

A ``Pieces`` measures the groups of one ``View`` on demand (``_projection``: the index of the
history): each group's tokens with its bulky outputs masked (``Masker``: the masking
compressor's placeholders), the outputs that could be masked, and the tool-call rule it breaks,
if any. What no window under the budget can reach is priced by an upper bound instead
(``unreachable_from``, ``Pieces.catch_up``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, cast

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors.masking import placeholders
from compactkit.formats.validate import validate_items
from compactkit.governance._projection import Mask, Piece, View, index_of
from compactkit.governance._sums import Sums
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.groups import Group
from compactkit.items.view import sliceable

__all__ = ["Masker", "Pieces", "unreachable_from"]

_COLD_GROUPS = 64
"""More closed groups than this new at once (a history read for the first time): price the
ones no window reaches by an upper bound (``Pieces.catch_up``)."""


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
    view = index_of(items)
    pieces = Pieces(view, counter, Masker(), threshold, validate)
    total = 0
    for index in range(view.n_closed - 1, -1, -1):
        total += pieces._measure(index).min_tokens
        if total > budget:
            return view.group(index).start
    return None
