"""After a compaction the projector reads the new history afresh, but measures the groups it
kept of the history before from that history's totals (``governance/_carry.py``). Held here to
a fresh projector: at every step of random conversations with compactions (kept groups, folded
ones, outputs masked by the compaction, the latest user input kept ahead, pins, parallel and
unanswered calls, stray outputs, reused call ids, bulky outputs), the prompt, its tokens and its
report are the ones a projector that never saw the earlier histories builds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import EstimateCounter
from compactkit.errors import BudgetError
from compactkit.governance.projector import ContextProjector, Projection
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Reasoning
from compactkit.items.snapshot import MemorySnapshot
from compactkit.items.view import ItemsView

COUNTER = EstimateCounter(4)
THRESHOLD = 30


def projector() -> ContextProjector:
    return ContextProjector(COUNTER, mask_threshold=THRESHOLD)


def grow(items: list[Item], data: st.DataObject, calls: list[int]) -> None:
    """Append one random turn to ``items`` (``calls``: a counter for fresh call ids)."""
    kind = data.draw(
        st.sampled_from(["user", "text", "tools", "tools", "pending", "orphan", "reused"])
    )
    pinned = data.draw(st.integers(0, 9)) == 0
    if kind == "user":
        size = data.draw(st.sampled_from([5, 40, 400]))
        items.append(Message(role="user", content="u" * size, pinned=pinned))
    elif kind == "text":
        items.append(Message(role="assistant", content="a" * data.draw(st.integers(1, 80))))
    elif kind in ("tools", "pending", "reused"):
        width = data.draw(st.integers(1, 3))
        ids = [f"c{calls[0] + k}" for k in range(width)]
        if kind == "reused" and calls[0]:
            ids[0] = "c0"  # an id an earlier group used
        calls[0] += width
        if data.draw(st.booleans()):
            items.append(Reasoning(format="responses", payload={"type": "reasoning"}))
        items.extend(FunctionCall(call_id=i, name="tool", arguments="{}") for i in ids)
        answered = ids[:-1] if kind == "pending" else ids
        for call_id in answered:
            size = data.draw(st.sampled_from([8, 60, 300, 1200]))
            items.append(FunctionCallOutput(call_id=call_id, output="o" * size, pinned=pinned))
    else:
        items.append(FunctionCallOutput(call_id="nobody", output="stray"))


def compacted(items: list[Item], data: st.DataObject) -> list[Item]:
    """A history a compaction could leave: a suffix of ``items`` with some groups folded away
    and some outputs replaced (new objects), the latest user input kept ahead of it."""
    start = data.draw(st.integers(0, len(items)))
    kept: list[Item] = []
    users = [item for item in items[:start] if isinstance(item, Message) and item.role == "user"]
    if users and data.draw(st.booleans()):
        kept.append(users[-1])
    for item in items[start:]:
        fate = data.draw(st.sampled_from(["keep", "keep", "keep", "drop", "mask"]))
        if fate == "drop":
            continue
        if fate == "mask" and isinstance(item, FunctionCallOutput):
            item = item.model_copy(update={"output": "[masked]"})
        kept.append(item)
    return kept


def snapshot(items: Sequence[Item], summary: str, as_view: bool) -> MemorySnapshot:
    held = ItemsView(list(items)) if as_view else tuple(items)
    return MemorySnapshot.model_construct(summary=summary, items=held, version=None)


def outcome(projector: ContextProjector, snap: MemorySnapshot, budget: int) -> object:
    try:
        projection: Projection = projector.project(snap, budget=budget)
    except BudgetError as error:
        return ("BudgetError", str(error))
    report = replace(projection.report, cached_prefix_tokens=0)  # (a session's own history)
    return tuple(projection.items), projection.tokens, projection.budget, report


@settings(deadline=None, max_examples=120)
@given(st.data())
def test_every_prompt_is_a_fresh_projectors(data: st.DataObject) -> None:
    governed = projector()
    items: list[Item] = [Message(role="system", content="rules")]
    summary = ""
    calls = [0]
    for _ in range(data.draw(st.integers(1, 40))):
        if len(items) > 3 and data.draw(st.integers(0, 4)) == 0:
            governed.forget(snapshot(items, summary, as_view=False))
            items = [items[0], *compacted(items[1:], data)]
            summary = f"{summary} folded {len(items)}."
        for _ in range(data.draw(st.integers(1, 4))):
            grow(items, data, calls)
        snap = snapshot(items, summary, as_view=data.draw(st.booleans()))
        budget = data.draw(st.sampled_from([60, 250, 800, 4000]))
        assert outcome(governed, snap, budget) == outcome(projector(), snap, budget)


@settings(deadline=None, max_examples=60)
@given(st.data())
def test_a_history_that_keeps_nothing_of_the_one_before_is_measured_anew(
    data: st.DataObject,
) -> None:
    """A forgotten history's measurements are offered to the next history read anew, whatever
    it is: one sharing no item with it gets no measurement from it."""
    governed = projector()
    calls = [0]
    first: list[Item] = [Message(role="user", content="first")]
    for _ in range(data.draw(st.integers(1, 8))):
        grow(first, data, calls)
    governed.project(snapshot(first, "", as_view=False), budget=4000)
    governed.forget(snapshot(first, "", as_view=False))
    other: list[Item] = [Message(role="user", content="other")]
    for _ in range(data.draw(st.integers(1, 8))):
        grow(other, data, calls)
    snap = snapshot(other, "", as_view=True)
    assert outcome(governed, snap, 800) == outcome(projector(), snap, 800)


def test_kept_groups_are_carried_and_give_the_fresh_prompt() -> None:
    """The kept groups are carried (the compaction's prompt needs no new measurement of
    them); the prompt is still the fresh projector's."""
    items: list[Item] = [Message(role="system", content="rules")]
    for turn in range(30):
        items.append(Message(role="user", content=f"request {turn}"))
        items.append(FunctionCall(call_id=f"c{turn}", name="read", arguments="{}"))
        items.append(FunctionCallOutput(call_id=f"c{turn}", output="line\n" * 60))
    governed = projector()
    governed.project(snapshot(items, "", as_view=True), budget=2000)
    governed.forget(snapshot(items, "", as_view=True))
    kept = [items[0], *items[46:]]
    snap = snapshot(kept, "the first fifteen requests", as_view=True)
    view = governed._memo.view(snap.items)
    assert view.carried is not None
    measured = view.carried.measured(view.group(1), list(snap.items))
    assert measured is not None and measured[1]  # the bulky output's mask, as measured before
    assert outcome(governed, snap, 2000) == outcome(projector(), snap, 2000)
