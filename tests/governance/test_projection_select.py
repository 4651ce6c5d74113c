"""The projector's selection by running totals gives exactly the prompts of the plain fill it
replaced (newest first, masked, until a group does not fit; then unmask newest first), on
fresh and on growing histories, whatever the budget."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.errors import BudgetError
from compactkit.governance._pieces import Pieces
from compactkit.governance._plan import budget_error, cut_newest
from compactkit.governance._projection import Mask, Piece
from compactkit.governance._render import report_notes, send_valid
from compactkit.governance._select import refuse_problems
from compactkit.governance._sums import MinTree, Sums, window_start
from compactkit.governance.projector import ContextProjector, Projection, ProjectionReport
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool
from compactkit.items.snapshot import MemorySnapshot, require_snapshot

COUNTER = TiktokenCounter("o200k_base")


@dataclass(frozen=True)
class PlainFill(ContextProjector):
    """The projector before running totals: one walk over the window per call (reference)."""

    def _project(
        self,
        snapshot: MemorySnapshot,
        *,
        instructions: str | Sequence[Message] | None = None,
        tools: Sequence[Tool] = (),
        budget: int | None = None,
        observe: bool = False,
    ) -> Projection:
        snapshot = require_snapshot(snapshot, "project()")
        limit = budget if budget is not None else self.budget
        assert limit is not None
        count = self.counter.count_item
        view = self._memo.view(snapshot.items)
        head = [*self._memo.instructions(instructions), *snapshot.items[: view.lead]]
        if snapshot.summary:
            head.append(self._memo.summary(self.summary_role, snapshot.summary))
        fixed = sum(count(item) for item in head) + self._memo.overhead(tools)
        pieces = Pieces(view, self.counter, self._memo.masker, self.mask_threshold, self.validate)
        required = view.required()
        newest = view.n_groups - 1 if view.tail is not None and view.n_closed in required else None
        sizes = {index: pieces.get(index).min_tokens for index in required}
        cuts: dict[int, Item] = {}
        if newest is not None:  # sent whole (never masked), cut when over the budget
            tail = pieces.get(newest)
            sizes[newest] += sum(mask.saving for mask in tail.masks)
            over = fixed + sum(sizes.values()) - limit
            if over > 0:
                cuts, saved_by_cut = cut_newest(self.counter, tail, over)
                sizes[newest] -= saved_by_cut
        required_tokens = sum(sizes.values())
        if fixed + required_tokens > limit:
            raise budget_error(self.counter, snapshot, head, tools, pieces, required, limit, sizes)
        remaining = limit - fixed - required_tokens
        window: list[Piece] = []
        with_masks: list[Piece] = []
        problems: list[Piece] = []
        for index in range(view.n_groups - 1, -1, -1):
            piece = pieces.get(index)
            if index not in required:
                if piece.min_tokens > remaining:
                    break
                remaining -= piece.min_tokens
            window.append(piece)
            if piece.masks and index != newest:
                with_masks.append(piece)
            if piece.problem:
                problems.append(piece)
        start = window[-1].index if window else view.n_groups
        ahead = [pieces.get(index) for index in sorted(required) if index < start]
        problems += [piece for piece in ahead if piece.problem]
        with_masks += [piece for piece in reversed(ahead) if piece.masks and piece.index != newest]
        refuse_problems(problems, self.validate)
        masked: list[Mask] = []
        masked_in: set[int] = set()
        for piece in with_masks:
            for mask in reversed(piece.masks):
                if mask.saving <= remaining:
                    remaining -= mask.saving
                else:
                    masked.append(mask)
                    masked_in.add(piece.index)
        masked.reverse()
        out: list[Item] = list(head)
        placeholders = {id(mask.original): mask.placeholder for mask in masked}
        placeholders.update(cuts)
        sent = view.lead
        for piece in [*ahead, *reversed(window)]:
            if piece.index in masked_in or piece.index == newest:
                out.extend(placeholders.get(id(item), item) for item in piece.items)
            else:
                out.extend(piece.items)
            sent += len(piece.items)
        saved = sum(mask.saving for mask in masked)
        notes = report_notes(
            view, self._rules, problems, ahead, start, len(masked), saved, required
        )
        if cuts:
            ids = ", ".join(repr(getattr(item, "call_id", "")) for item in cuts.values())
            notes.append(f"cut the newest output(s) {ids} to fit the budget (marked in the text)")
        out, dropped = send_valid(out, notes, self.validate)
        if dropped:
            remaining += sum(count(item) for item in dropped)
            sent -= len(dropped)
            gone = {id(item) for item in dropped}
            masked = [mask for mask in masked if id(mask.placeholder) not in gone]
        report = ProjectionReport(
            kept=sent - len(masked),
            masked=len(masked),
            omitted=len(snapshot.items) - sent,
            notes=tuple(notes),
            masked_call_ids=tuple(mask.original.call_id for mask in masked),
            cached_prefix_tokens=(
                self._memo.cached_prefix(out, tools, limit - remaining) if observe else 0
            ),
        )
        return Projection(tuple(out), limit - remaining, limit, report)


WORDS = "read file run tests error KeyError parse config value timeout retry commit".split()


@st.composite
def histories(draw: st.DrawFn) -> list[Item]:
    """Agent histories: turns, tool loops with small and bulky outputs, pins, and the faults
    a repair handles (an output answering no call, a call that never got its output)."""
    items: list[Item] = [Message(role="system", content="be careful")]
    call = 0
    for _ in range(draw(st.integers(1, 12))):
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30)))
        items.append(
            Message(role="user", content=text, pinned=draw(st.booleans()) and call % 3 == 0)
        )
        for _ in range(draw(st.integers(0, 3))):
            ids = [f"c{call + k}" for k in range(draw(st.integers(1, 3)))]
            call += len(ids)
            items += [FunctionCall(call_id=i, name="read", arguments="{}") for i in ids]
            fault = draw(st.sampled_from(["none"] * 8 + ["orphan", "abandoned"]))
            for i in ids if fault != "abandoned" else ids[1:]:
                size = draw(st.sampled_from([5, 40, 300, 900, 2500]))
                items.append(FunctionCallOutput(call_id=i, output=" ".join(WORDS[:3] * size)))
            if fault == "orphan":
                items.append(FunctionCallOutput(call_id=f"lost{call}", output="late"))
        items.append(Message(role="assistant", content=text))
    return [item.model_copy(update={"seq": n}) for n, item in enumerate(items, 1)]


def project(projector: ContextProjector, items: Sequence[Item], budget: int) -> object:
    snapshot = MemorySnapshot.model_construct(summary="earlier", items=tuple(items), version=1)
    try:
        return projector.project(snapshot, instructions="be brief", budget=budget)
    except BudgetError as exc:
        return str(exc)


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=histories(),
    budget=st.integers(200, 12_000),
    threshold=st.sampled_from([0, 100, 500]),
)
def test_the_same_prompt_as_the_plain_fill_on_a_fresh_history(
    items: list[Item], budget: int, threshold: int
) -> None:
    ours = ContextProjector(COUNTER, mask_threshold=threshold)
    plain = PlainFill(COUNTER, mask_threshold=threshold)
    assert project(ours, items, budget) == project(plain, items, budget)


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(items=histories(), budget=st.integers(300, 8_000), step=st.integers(1, 5))
def test_the_same_prompts_as_the_plain_fill_as_a_history_grows(
    items: list[Item], budget: int, step: int
) -> None:
    ours, plain = ContextProjector(COUNTER), PlainFill(COUNTER)
    for end in range(1, len(items) + 1, step):
        assert project(ours, items[:end], budget) == project(plain, items[:end], budget)
    # an older prefix after a newer one (two sessions' views of one history) still agrees
    half = items[: len(items) // 2]
    assert project(ours, half, budget) == project(plain, half, budget)


@pytest.mark.parametrize("budget", [2_000, 20_000, 60_000])
def test_many_bulky_outputs_stay_masked_oldest_first(budget: int) -> None:
    items: list[Item] = [Message(role="user", content="go")]
    for n in range(300):  # several blocks of masks
        items.append(FunctionCall(call_id=f"c{n}", name="read", arguments="{}"))
        items.append(FunctionCallOutput(call_id=f"c{n}", output="word " * (600 + 7 * (n % 50))))
    items = [item.model_copy(update={"seq": n}) for n, item in enumerate(items, 1)]
    ours = project(ContextProjector(COUNTER), items, budget)
    assert isinstance(ours, Projection) and ours.report.masked
    assert ours == project(PlainFill(COUNTER), items, budget)


@settings(deadline=None, max_examples=200)
@given(
    values=st.lists(st.integers(0, 60), max_size=80),
    queries=st.lists(st.tuples(st.integers(0, 80), st.integers(0, 80), st.integers(-1, 70))),
)
def test_the_savings_tree_finds_the_newest_mask_that_fits(
    values: list[int], queries: list[tuple[int, int, int]]
) -> None:
    """``MinTree.last_at_most`` (how ``unmasked`` skips outputs too large to send whole) is the
    newest position in the range holding a value within the bound, as it grows."""
    tree = MinTree()
    for count, value in enumerate(values, 1):
        tree.append(value)
        assert tree.smallest() == min(values[:count])
    n = len(values)
    for a, b, bound in queries:
        low, end = min(a, b, n), min(max(a, b), n)
        fitting = [k for k in range(low, end) if values[k] <= bound]
        assert tree.last_at_most(low, end, bound) == (fitting[-1] if fitting else low - 1)


@settings(deadline=None, max_examples=300)
@given(
    sizes=st.lists(st.integers(0, 50), max_size=30),
    tail=st.none() | st.integers(0, 50),
    data=st.data(),
    room=st.integers(0, 400),
)
def test_the_window_starts_at_the_oldest_group_from_which_the_rest_fits(
    sizes: list[int], tail: int | None, data: st.DataObject, room: int
) -> None:
    """``window_start`` (bisects between required groups) is the smallest start whose groups
    to the end, the required ones aside, fit ``room``: the definition, checked start by start."""
    sums = Sums()
    for size in sizes:
        sums.tokens.append(sums.tokens[-1] + size)
    n_closed = len(sizes)
    n_groups = n_closed + (tail is not None)
    every = [*sizes, *([] if tail is None else [tail])]
    picked = data.draw(st.sets(st.integers(0, max(0, n_groups - 1)), max_size=4))
    required = {index: every[index] for index in picked if index < n_groups}

    def cost(start: int) -> int:
        return sum(every[start:]) - sum(t for index, t in required.items() if index >= start)

    expected = next(s for s in range(n_groups + 1) if cost(s) <= room)
    assert window_start(sums, n_closed, tail, required, room) == (expected, cost(expected))


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(items=histories(), budget=st.integers(300, 8_000), step=st.integers(1, 5))
def test_a_forgotten_history_projects_the_same_prompts_again(
    items: list[Item], budget: int, step: int
) -> None:
    # forget() (a governor calls it after a compaction) drops the history's structure and
    # measurements; projecting that history again indexes it anew, to the same prompts.
    ours, plain = ContextProjector(COUNTER), PlainFill(COUNTER)
    for end in range(1, len(items) + 1, step):
        snapshot = MemorySnapshot.model_construct(summary="", items=tuple(items[:end]), version=1)
        if end % 2:
            ours.forget(snapshot)
        assert project(ours, items[:end], budget) == project(plain, items[:end], budget)


@st.composite
def long_histories(draw: st.DrawFn) -> list[Item]:
    """Histories of 70-200 groups (more than a cold call reads exactly: older groups are
    priced by an upper bound), drawn from a seed so that drawing stays cheap."""
    import random

    rng = random.Random(draw(st.integers(0, 10_000)))
    items: list[Item] = [Message(role="system", content="be careful")]
    for turn in range(rng.randint(25, 60)):
        text = " ".join(rng.choices(WORDS, k=rng.randint(1, 30)))
        items.append(Message(role="user", content=text, pinned=rng.random() < 0.05))
        for round_ in range(rng.randint(0, 3)):
            ids = [f"c{turn}_{round_}_{k}" for k in range(rng.randint(1, 2))]
            items += [FunctionCall(call_id=i, name="read", arguments="{}") for i in ids]
            for i in ids:
                size = rng.choice([5, 40, 300, 900, 2500])
                items.append(FunctionCallOutput(call_id=i, output=" ".join(WORDS[:3] * size)))
            if rng.random() < 0.05:
                items.append(FunctionCallOutput(call_id=f"lost{turn}", output="late"))
        items.append(Message(role="assistant", content=text + " ünïcødé 東京"))
    return [item.model_copy(update={"seq": n}) for n, item in enumerate(items, 1)]


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=long_histories(),
    budgets=st.lists(st.integers(300, 60_000), min_size=1, max_size=3),
    threshold=st.sampled_from([0, 100, 500]),
)
def test_a_cold_call_on_a_long_history_gives_the_plain_fills_prompt(
    items: list[Item], budgets: list[int], threshold: int
) -> None:
    """A long history read at once encodes only the groups a window can reach (the older ones
    priced by an upper bound): the same prompts as the plain fill, for every budget after it
    (a larger one sums the history again, exactly)."""
    ours, plain = ContextProjector(COUNTER, mask_threshold=threshold), PlainFill(COUNTER)
    plain = PlainFill(COUNTER, mask_threshold=threshold)
    fresh = [item.model_copy() for item in items]  # new objects: no count cached for them
    for budget in budgets:
        assert project(ours, fresh, budget) == project(plain, fresh, budget)
