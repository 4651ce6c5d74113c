"""The projection's last step, ``render``: the prompt's items, laid out as runs, and its report.

From a ``_select.Selection``: the head, the groups kept ahead of the window (their masked
outputs swapped for placeholders), then the window — closed groups as slices of their masked
rendering (kept in ``Sums``), the spans of outputs sent whole as slices of the snapshot's items,
and repaired groups and the open last group as their own items. Nothing is copied: the runs are
joined (``ItemsChain``). A prompt that holds a group that could break the whole-prompt rules is
checked (and repaired, or refused) here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter

from compactkit.errors import FormatError
from compactkit.formats.validate import validate_items
from compactkit.governance._fast import swap_map, swapped
from compactkit.governance._plan import Rules
from compactkit.governance._projection import Piece, View
from compactkit.governance._prompt import Projection, ProjectionReport, ValidateMode
from compactkit.governance._select import Selection
from compactkit.governance._sums import Sums, may_be_invalid
from compactkit.items import Item, ItemsChain, ItemsView
from compactkit.items.view import Run, sliceable

__all__ = ["complement", "render", "render_window", "report_notes", "send_valid"]


def render(selection: Selection) -> Projection:
    """The prompt of ``selection``: its items, tokens and report."""
    plan = selection.plan
    view, tail = plan.view, plan.tail
    swap = swap_map((m.original, m.placeholder) for m in selection.masked_ahead)
    swap.update(swap_map((m.original, m.placeholder) for m in selection.masked_tail))
    swap.update(plan.cuts)
    runs: list[Run] = [(plan.head, 0, len(plan.head))]  # joined, not copied: O(runs) per call
    for piece in selection.ahead:
        kept = swapped(piece.items, swap)
        runs.append((kept, 0, len(kept)))
    sent = view.lead + sum(len(piece.items) for piece in selection.ahead)
    if selection.start < view.n_groups:
        sent += _window(selection, swap, runs)
    notes = _notes(selection)
    if plan.cuts:
        ids = ", ".join(repr(getattr(item, "call_id", "")) for item in plan.cuts.values())
        notes.append(f"cut the newest output(s) {ids} to fit the budget (marked in the text)")
    if plan.shrunk is not None:
        stored, sent_tokens = plan.shrunk
        notes.append(
            f"sent the summary trimmed to fit the budget ({sent_tokens:,} of its {stored:,} "
            "tokens; the stored summary is unchanged)"
        )
    last = tail if selection.tail_in_window else None
    items: Sequence[Item] = ItemsChain.joined(runs)
    room, n_masked, masked_ids = selection.room, selection.n_masked, selection.masked_ids
    validate = plan.rules.validate
    if validate is not None and may_be_invalid(
        plan.sums, selection.start, view.n_closed, selection.ahead, last
    ):
        out, dropped = send_valid(list(items), notes, validate)
        if dropped:  # the whole prompt breaks a rule every format has (a detached reasoning)
            items = ItemsView(out)  # out is never changed: no copy
            room += sum(map(plan.rules.counter.count_item, dropped))
            sent -= len(dropped)
            masked_ids = _still_masked(selection, dropped)
            n_masked = len(masked_ids)
    tokens = plan.limit - room
    report = ProjectionReport(
        kept=sent - n_masked,
        masked=n_masked,
        omitted=len(plan.snapshot.items) - sent,
        notes=tuple(notes),
        masked_call_ids=tuple(masked_ids),
        cached_prefix_tokens=plan.observe(items, tokens) if plan.observe is not None else 0,
    )
    return Projection(items, tokens, plan.limit, report)


def _window(selection: Selection, swap: dict[int, Item], runs: list[Run]) -> int:
    """Append the window's runs; how many snapshot items it sends."""
    plan = selection.plan
    view, sums, tail, n_closed = plan.view, plan.sums, plan.tail, plan.view.n_closed
    start, whole = selection.start, selection.whole
    own_pieces = [p for p in selection.problems if p.index < n_closed and p.index >= start]
    for piece in own_pieces:  # their masks that stay masked, by the window's choice
        k = sums.first_mask[piece.index]
        for mask in piece.masks:
            if not any(a <= k < b for a, b in whole):
                swap[id(mask.original)] = mask.placeholder
            k += 1
    own = [(piece, swapped(piece.items, swap)) for piece in own_pieces]
    if tail is not None and selection.tail_in_window:
        own.append((tail, swapped(tail.items, swap)))
    first = view.group(start).start
    return render_window(runs, plan.snapshot.items, sums, first, whole, own)


def _still_masked(selection: Selection, dropped: Sequence[Item]) -> list[str]:
    """The call ids of the outputs still masked once a repair dropped ``dropped``."""
    sums = selection.plan.sums
    gone = {id(item) for item in dropped}
    window = complement(selection.low, selection.high, selection.whole)
    masked = [
        *selection.masked_ahead,
        *(sums.masks[k] for a, b in window for k in range(a, b)),
        *selection.masked_tail,
    ]
    return [mask.original.call_id for mask in masked if id(mask.placeholder) not in gone]


def send_valid(
    out: list[Item], notes: list[str], validate: ValidateMode
) -> tuple[list[Item], list[Item]]:
    """``out`` under the rules every target format shares (unique ids, each call answered
    once, reasoning followed by its response), and the items a repair dropped. The format
    adapters then order what each format needs (tool results next to their calls)."""
    if validate is None:
        return out, []
    dropped: list[Item] = []
    for _ in range(3):  # a dropped item can leave its reasoning detached: look again
        _, problems = validate_items(out, format="responses", mode="repair")
        # Pending calls are kept on purpose (their outputs come next); the window repair
        # already dropped any older call without output.
        problems = [problem for problem in problems if problem.kind != "missing_output"]
        if not problems:
            break
        listing = "; ".join(str(problem) for problem in problems)
        if validate == "raise":
            raise FormatError(
                f"the prompt breaks the tool-call rules: {listing}. "
                "Fix the memory, or project with validate='repair'"
            )
        notes.append(f"repaired: {listing}")
        bad = {problem.index for problem in problems}
        dropped += [item for index, item in enumerate(out) if index in bad]
        out = [item for index, item in enumerate(out) if index not in bad]
    return out, dropped


def _notes(selection: Selection) -> list[str]:
    plan = selection.plan
    return report_notes(
        plan.view,
        plan.rules,
        selection.problems,
        selection.ahead,
        selection.start,
        selection.n_masked,
        selection.saved,
        plan.required,
    )


def report_notes(
    view: View,
    rules: Rules,
    problems: Sequence[Piece],
    ahead: Sequence[Piece],
    start: int,
    masked: int,
    saved: int,
    required: Mapping[int, str],
) -> list[str]:
    """What the report says: repairs, masks, omissions, groups kept ahead, pending calls."""
    action = "repaired" if rules.validate == "repair" else "sent as is"
    notes = [f"{action}: {piece.problem}" for piece in sorted(problems, key=_index)]
    if masked:
        notes.append(
            f"masked {masked} tool output(s) over {rules.mask_threshold:,} tokens, "
            f"oldest first ({saved:,} tokens saved)"
        )
    if start < view.n_groups:
        first = view.group(start).start
        older = first - view.lead - sum(len(piece.group) for piece in ahead)
        if older > 0:
            notes.append(f"omitted {older} item(s) before item {first} to fit the budget")
    notes.extend(
        f"kept {required[piece.index]} (item {piece.group.start}) ahead of the window"
        for piece in ahead
        if not piece.dropped
    )
    last = view.group(view.n_groups - 1) if view.n_groups else None
    if last is not None and last.pending:
        ids = ", ".join(repr(call_id) for call_id in last.pending)
        notes.append(f"pending call(s) {ids} kept without output; send their outputs first")
    return notes


def _index(piece: Piece) -> int:
    return piece.index


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
