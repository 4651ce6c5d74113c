"""The projection's first step, ``plan``: what is always sent, and the room it leaves.

``ContextProjector.project`` runs three steps, each a function of what the one before returned:
``plan`` (here) → ``_select.select`` → ``_render.render``.

A plan holds the head (instructions, the snapshot's leading system messages, the summary), the
groups never dropped (pinned ones, the latest user input, pending calls, the newest group) with
their tokens, and the room the budget leaves for the window. It raises ``BudgetError`` when what
is never dropped does not fit. The newest group is sent whole, never masked: an output of it
larger than the budget leaves is cut (with a marker saying so), not dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors.masking import cut_output
from compactkit.errors import BudgetError
from compactkit.governance._memo import ProjectionMemo
from compactkit.governance._pieces import Pieces
from compactkit.governance._projection import Piece, View
from compactkit.governance._prompt import ValidateMode
from compactkit.governance._sums import Sums
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool
from compactkit.items.snapshot import MemorySnapshot, SummaryRole

__all__ = ["Plan", "Rules", "plan"]


@dataclass(frozen=True, slots=True)
class Rules:
    """A projector's fixed settings, as the three steps read them."""

    counter: TokenCounter
    mask_threshold: int
    summary_role: SummaryRole
    validate: ValidateMode


@dataclass(slots=True)
class Plan:
    """What ``plan`` returns: the parts always sent and the room left for the window."""

    snapshot: MemorySnapshot
    rules: Rules
    limit: int
    """The budget the request must fit."""
    view: View
    """The history's structure: groups, pins, the running totals over closed groups."""
    pieces: Pieces
    """Measures the groups the next steps ask for by index."""
    sums: Sums
    head: list[Item]
    """Instructions, the snapshot's leading system messages, the summary message."""
    required: dict[int, str]
    """Groups never dropped, by index, with the part each one is."""
    needed: dict[int, int]
    """Their tokens (the newest group whole, minus what cutting saved)."""
    tail: Piece | None
    """The open last group, measured."""
    cuts: dict[int, Item]
    """``id(output) -> cut output`` for the newest group's outputs cut to fit."""
    room: int
    """Tokens the budget leaves for the window."""
    observe: Callable[[Sequence[Item], int], int] | None
    """Measures the finished prompt's cached prefix (``None``: report 0)."""
    shrunk: tuple[int, int] | None = None
    """The summary's tokens as stored and as sent, when it was fitted to the room left."""


def plan(
    snapshot: MemorySnapshot,
    instructions: list[Message],
    tools: Sequence[Tool],
    limit: int,
    rules: Rules,
    memo: ProjectionMemo,
    view: View,
    observe: Callable[[Sequence[Item], int], int] | None = None,
    fit_summary: bool = True,
) -> Plan:
    """The head and the groups never dropped, their tokens, and the room left.

    ``view``: ``snapshot``'s structure, held by the caller (``ProjectionMemo.held_view``).
    ``fit_summary=False``: the summary is sent whole or the plan raises (a cache-aware re-plan's
    lower fill, which keeps the full plan then).

    Raises:
        BudgetError: what is never dropped does not fit ``limit``.
    """
    counter = rules.counter
    head = [*instructions, *snapshot.items[: view.lead]]
    if snapshot.summary:
        head.append(memo.summary(rules.summary_role, snapshot.summary))
    fixed = sum(map(counter.count_item, head)) + memo.overhead(tools)
    pieces = Pieces(view, counter, memo.masker, rules.mask_threshold, rules.validate)
    sums = pieces.catch_up(reach=limit)
    required = view.required()
    needed = {index: pieces.get(index).min_tokens for index in required}
    n_closed = view.n_closed
    tail = pieces.get(n_closed) if view.tail is not None else None
    newest = tail if tail is not None and n_closed in required else None
    if newest is not None:
        # The newest group is sent whole, never masked (its outputs cut if need be).
        needed[n_closed] = newest.min_tokens + sum(mask.saving for mask in newest.masks)
    total = fixed + sum(needed.values())
    room = _Room()
    if total > limit:
        alone = (newest, needed[n_closed] - limit) if newest is not None else None
        summary = snapshot.summary if fit_summary else ""
        room = _make_room(head, summary, alone, total - limit, memo, rules)
        if room.saved_by_cut:
            needed[n_closed] -= room.saved_by_cut
        total -= room.saved
    if total > limit:
        raise budget_error(counter, snapshot, head, tools, pieces, required, limit, needed)
    return Plan(
        snapshot,
        rules,
        limit,
        view,
        pieces,
        sums,
        head,
        required,
        needed,
        tail,
        room.cuts,
        limit - total,
        observe,
        room.shrunk,
    )


@dataclass(slots=True)
class _Room:
    """What ``_make_room`` freed: cuts of the newest outputs, a summary fitted."""

    cuts: dict[int, Item] = field(default_factory=dict)
    saved_by_cut: int = 0
    shrunk: tuple[int, int] | None = None
    """The summary's tokens as stored and as sent."""

    @property
    def saved(self) -> int:
        shrunk = self.shrunk
        return self.saved_by_cut + (shrunk[0] - shrunk[1] if shrunk is not None else 0)


def _make_room(
    head: list[Item],
    summary: str,
    newest: tuple[Piece, int] | None,
    over: int,
    memo: ProjectionMemo,
    rules: Rules,
) -> _Room:
    """Room for what is never dropped, ``over`` tokens over the budget (``head[-1]``, the
    summary message, replaced when the summary is sent trimmed; the stored one unchanged):

    1. the summary trimmed, when that alone makes the room (its goal and rules too, if need be:
       the newest group then goes whole);
    2. else the newest group's outputs are cut (with a marker saying so: never dropped or
       masked), after the summary gave every fact but the user's goal and rules — when the
       budget could hold the group whole (``newest``: its piece and how far it alone is over
       the budget); an output larger than the budget is cut beside the whole summary (it can
       be read again in parts);
    3. and if the cut output is still over, the summary fitted to what is left, goal and rules
       too (else the request could not be sent at all).
    """
    room = _Room()
    count = rules.counter.count_item
    stored = count(head[-1]) if summary else 0

    def fit(tokens: int) -> bool:
        fitted = memo.fitted_summary(rules.summary_role, summary, tokens)
        if fitted is not None:
            head[-1] = fitted
            room.shrunk = (stored, count(fitted))
        return fitted is not None

    if summary and fit(stored - over):
        return room
    if newest is None:
        return room
    piece, alone_over = newest
    if summary and alone_over <= 0:
        floor = memo.user_words_summary(rules.summary_role, summary)
        if floor is not None and count(floor) < stored:
            head[-1] = floor
            room.shrunk = (stored, count(floor))
    still = over - room.saved
    room.cuts, room.saved_by_cut = cut_newest(rules.counter, piece, still)
    if summary and room.saved_by_cut < still:
        fit(count(head[-1]) - (still - room.saved_by_cut))
    return room


def cut_newest(counter: TokenCounter, tail: Piece, over: int) -> tuple[dict[int, Item], int]:
    """Cuts of the newest group's outputs, largest first, until ``over`` tokens are saved
    (or nothing more can be): ``id(original) -> cut output``, and the tokens saved."""
    count = counter.count_item
    names = {item.call_id: item.name for item in tail.items if isinstance(item, FunctionCall)}
    outputs = sorted(
        (item for item in tail.items if isinstance(item, FunctionCallOutput)),
        key=count,
        reverse=True,
    )
    cuts: dict[int, Item] = {}
    saved = 0
    for output in outputs:
        if saved >= over:
            break
        size = count(output)
        cut = cut_output(
            output,
            max_tokens=max(0, size - (over - saved)),
            counter=counter,
            tool=names.get(output.call_id),
        )
        if count(cut) < size:  # (the marker alone may be longer than a short output)
            cuts[id(output)] = cut
            saved += size - count(cut)
    return cuts, saved


_NOT_NAMED = frozenset({"summary", "reply priming"})
"""Parts a ``BudgetError`` names only when nothing else takes room: the summary is already at
its shortest, and the reply priming is the API's own."""


def budget_error(
    counter: TokenCounter,
    snapshot: MemorySnapshot,
    head: Sequence[Item],
    tools: Sequence[Tool],
    pieces: Pieces,
    required: dict[int, str],
    limit: int,
    sizes: Mapping[int, int] | None = None,
) -> BudgetError:
    """The ``BudgetError`` naming the largest part of what is never dropped."""
    count = counter.count_item
    summary = count(head[-1]) if snapshot.summary else 0
    priming = counter.count_overhead(())
    parts = {
        "system instructions": sum(count(item) for item in head) - summary,
        "summary": summary,
        "tools": counter.count_overhead(tools) - priming,
        "reply priming": priming,
    }
    for index, part in required.items():
        size = sizes[index] if sizes is not None else pieces.get(index).min_tokens
        parts[part] = parts.get(part, 0) + size
    total = sum(parts.values())
    # The summary is sent trimmed to its shortest before this is raised: the part to name is
    # the largest of the rest (the summary only when nothing else takes any room).
    named = {n: size for n, size in parts.items() if n not in _NOT_NAMED and size} or parts
    part, tokens = max(named.items(), key=lambda entry: entry[1])
    others = ", ".join(f"{name} {size:,}" for name, size in parts.items() if size)
    return BudgetError(
        f"{part}: {tokens:,} tokens; budget {limit:,} (irreducible total {total:,}: "
        f"{others}). Raise the budget or make the {part} smaller",
        part=part,
        tokens=tokens,
        budget=limit,
    )
