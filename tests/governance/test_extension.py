"""The cache-aware projection's one-pass extension (``StablePrefix.extend_front``, taken by
``ContextProjector.project_checked``: the governor's plain step) returns what ``project``
returns, and leaves the projector's caches as ``project`` leaves them: a projector that takes it
whenever it can, mixed with ``project`` calls at random (the generic step may take any call),
answers every call as a projector that never takes it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.errors import BudgetError
from compactkit.governance import _cache
from compactkit.governance.projector import ContextProjector, Projection
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory.in_memory import InMemoryMemory

COUNTER = TiktokenCounter("o200k_base")
TOOLS = (Tool(name="read", description="Read a file.", parameters={"type": "object"}),)
OTHER_TOOLS = (*TOOLS, Tool(name="grep", parameters={"type": "object"}))


def words(n: int, tag: str) -> str:
    return " ".join(f"{tag}{i % 7}" for i in range(n))


STEP = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 80)),
    st.tuples(st.just("tools"), st.lists(st.integers(1, 500), min_size=1, max_size=3)),
    st.tuples(st.just("pending"), st.integers(1, 2)),  # calls whose outputs come next step
    st.tuples(st.just("abandoned"), st.integers(1, 2)),  # calls never answered
    st.tuples(st.just("stray"), st.integers(1, 40)),  # an output answering no call
    st.tuples(st.just("answer"), st.integers(1, 60)),
    st.tuples(st.just("nothing"), st.just(0)),  # a call with nothing appended
)
# What a call does besides appending: the other session of the projector, a change of the
# request (instructions, tools, a summary: restored into the memory, or only ``labelled`` on
# this call's snapshot of the same list), a pin, a lower budget, or the plain ``project``.
EXTRA = st.sampled_from(
    ["none"] * 10
    + ["other", "instructions", "tools", "summary", "labelled", "pin", "budget", "project"]
)


class Session:
    """One session's memory, grown by steps (identical items in both memories' copies)."""

    def __init__(self) -> None:
        self.memory = InMemoryMemory(accept_unknown_call_ids=True)
        self.memory.add_read_items([Message(role="system", content="You are a coding agent.")])
        self.waiting: list[str] = []
        self.n = 0

    def grow(self, step: tuple[str, Any]) -> None:
        kind, size = step
        self.n += 1
        n = self.n
        items: list[Item] = [FunctionCallOutput(call_id=c, output="ok") for c in self.waiting]
        self.waiting = []
        if kind == "user":
            items.append(Message(role="user", content=words(size, f"u{n}")))
        elif kind == "answer":
            items.append(Message(role="assistant", content=words(size, f"a{n}")))
        elif kind == "stray":
            items.append(FunctionCallOutput(call_id=f"gone{n}", output=words(size, "s")))
        elif kind in ("tools", "pending", "abandoned"):
            count = len(size) if kind == "tools" else size
            ids = [f"c{n}_{k}" for k in range(count)]
            items += [FunctionCall(call_id=i, name="read", arguments="{}") for i in ids]
            if kind == "tools":
                items += [
                    FunctionCallOutput(call_id=i, output=words(lines, i))
                    for i, lines in zip(ids, size, strict=True)
                ]
            elif kind == "pending":
                self.waiting = ids
        if items:
            self.memory.add_read_items(items)


def same(a: Projection, b: Projection) -> None:
    assert tuple(a.items) == tuple(b.items)
    assert (a.tokens, a.budget, a.report) == (b.tokens, b.budget, b.report)


def remembered(projector: ContextProjector) -> list[tuple[Any, ...]]:
    """What the projector's cache-aware caches hold, comparable across projectors: each plan
    (history length, summary, where its last group starts, its prompt) and each prompt the
    prefix tracker keeps (length, tokens)."""
    memo = projector._memo
    plans = [
        (len(p.items), p.summary, p.tail_start, tuple(p.prompt.items), p.prompt.tokens)
        for p in memo._stable._plans
    ]
    return [*plans, *((len(e.items), e.tokens, e.tools) for e in memo._prefixes._entries)]


@settings(deadline=None, max_examples=80)
@given(
    steps=st.lists(st.tuples(STEP, EXTRA), min_size=1, max_size=40),
    budget=st.sampled_from([400, 1_200, 3_000, 20_000]),
)
def test_the_one_pass_extension_answers_as_project(
    steps: list[tuple[tuple[str, Any], str]], budget: int
) -> None:
    play(steps, budget)


@pytest.mark.parametrize("extra", ["labelled", "instructions", "tools", "summary", "other"])
def test_a_changed_request_is_planned_afresh_as_project_plans_it(extra: str) -> None:
    tools_round = ("tools", [3])
    play([(("user", 5), "none"), (tools_round, "none"), (tools_round, extra)], 20_000)


def play(steps: list[tuple[tuple[str, Any], str]], budget: int) -> None:
    """Play ``steps`` on a projector taking the one-pass extension where it can and on one
    that never does: every answer and what both remember must be the same."""
    fast = ContextProjector(COUNTER, budget=budget, mask_threshold=100, cache_aware=True)
    reference = ContextProjector(COUNTER, budget=budget, mask_threshold=100, cache_aware=True)
    # Each projector serves two sessions (its own memories, grown alike).
    sessions = {key: (Session(), Session()) for key in ("a", "b")}
    instructions, tools, active = "Be terse.", TOOLS, "a"
    for n, (step, extra) in enumerate(steps):
        if extra == "other":
            active = "b" if active == "a" else "a"
        elif extra == "instructions":
            instructions = f"Be terse ({n})."
        elif extra == "tools":
            tools = OTHER_TOOLS if tools is TOOLS else TOOLS
        mine, theirs = sessions[active]
        for session in (mine, theirs):
            session.grow(step)
            if extra == "summary":
                snapshot = session.memory.snapshot()
                session.memory.restore(
                    MemorySnapshot(summary=f"summary {n}", items=snapshot.items[1:])
                )
            elif extra == "pin" and len(session.memory.snapshot().items) > 2:
                items = session.memory.snapshot().items
                seq = items[len(items) // 2].seq
                assert seq is not None
                session.memory.pin(seq)
        this_budget = budget * 3 // 4 if extra == "budget" else None
        got: list[Projection | str] = []
        for projector, session in ((fast, mine), (reference, theirs)):
            snapshot = session.memory.snapshot()
            if extra == "labelled":
                snapshot = snapshot.model_copy(update={"summary": f"label {n}"})
            try:
                if projector is fast and extra != "project":
                    got.append(
                        projector.project_checked(snapshot, instructions, tools, this_budget)
                    )
                else:
                    got.append(
                        projector.project(
                            snapshot, instructions=instructions, tools=tools, budget=this_budget
                        )
                    )
            except BudgetError as exc:
                got.append(str(exc))
        a, b = got
        if isinstance(a, str) or isinstance(b, str):
            assert a == b, f"call {n}"
        else:
            same(a, b)
        assert remembered(fast) == remembered(reference), f"call {n}"


def test_a_growing_session_extends_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[bool] = []
    original = _cache.StablePrefix.extend_front

    def counted(self: _cache.StablePrefix, *args: Any) -> Projection | None:
        projection = original(self, *args)
        taken.append(projection is not None)
        return projection

    monkeypatch.setattr(_cache.StablePrefix, "extend_front", counted)
    projector = ContextProjector(COUNTER, budget=20_000, cache_aware=True)
    session = Session()
    for n in range(30):
        session.grow(("tools", [5]) if n % 3 else ("user", 5))
        projector.project_checked(session.memory.snapshot(), "Be terse.", TOOLS, None)
    assert taken.count(True) == 29  # every call but the first (a fresh plan)


@settings(deadline=None, max_examples=150)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.booleans(),
            st.sampled_from(["same", "same", "other", "new"]),
            st.sampled_from([0, 0, 0, 1]),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_observing_an_extension_is_observing(steps: list[tuple[int, bool, str, int]]) -> None:
    """``PrefixTracker.observe_extension`` answers as ``observe`` and keeps what it keeps, for
    prompts that extend their session's previous one (the front entry's, another session's
    in between, or one the tracker no longer holds), with the tools changing and the running
    totals pruned now and then, and now and then another counter."""
    from compactkit.governance._prefix import PrefixTracker
    from compactkit.items.view import ItemsView

    fast, reference = PrefixTracker(size=3), PrefixTracker(size=3)
    lists: list[list[Item]] = [[Message(role="user", content="start")]]
    last: dict[int, ItemsView] = {0: ItemsView(lists[0], 1)}
    counters = (COUNTER, TiktokenCounter("o200k_base"))
    for n, (grow, other_tools, source, counter_at) in enumerate(steps):
        if source == "other":  # a session seen before, or a new one
            at = n % (len(lists) + 1)
            if at == len(lists):
                lists.append([Message(role="user", content=f"other {n}")])
                last[at] = ItemsView(lists[at], 1)
        elif source == "new":  # a re-planned prompt: a new list
            lists.append([*lists[-1][: max(1, len(lists[-1]) - 1)]])
            at = len(lists) - 1
            last[at] = ItemsView(lists[at], len(lists[at]))
        else:
            at = len(lists) - 1
        items = lists[at]
        items += [Message(role="assistant", content=words(k + 1, f"m{n}")) for k in range(grow)]
        prompt = ItemsView(items, len(items))
        tools = OTHER_TOOLS if other_tools else TOOLS
        tokens = 50 + 10 * len(items)
        counter = counters[counter_at]
        if n % 4 == 3:  # prune at this prompt (which then takes ``observe``)
            fast._prune_at = reference._prune_at = -1
        a = fast.observe_extension(counter, prompt, tools, tokens, last[at])
        b = reference.observe(counter, prompt, tools, tokens)
        assert a == b, f"step {n}"
        assert [(len(e.items), e.tokens, e.tools) for e in fast._entries] == [
            (len(e.items), e.tokens, e.tools) for e in reference._entries
        ]
        assert fast._totals.keys() == reference._totals.keys()
        last[at] = prompt


def test_observing_an_extension_prunes_when_observe_would() -> None:
    from compactkit.governance._prefix import PrefixTracker
    from compactkit.items.view import ItemsView

    tracker = PrefixTracker()
    items: list[Item] = [Message(role="user", content="start")]
    first = ItemsView(items, 1)
    tracker.observe(COUNTER, first, TOOLS, 60)
    gone: list[Item] = []
    tracker._totals[(id(COUNTER), id(gone))] = (gone, COUNTER, [0])  # a forgotten prompt's
    tracker._prune_at = -1
    items.append(Message(role="user", content="more"))
    tracker.observe_extension(COUNTER, ItemsView(items, 2), TOOLS, 70, first)
    assert (id(COUNTER), id(gone)) not in tracker._totals


@pytest.mark.parametrize("one_pass", [True, False])
def test_an_extended_prompt_notes_its_pending_calls_and_repairs_stray_outputs(
    one_pass: bool,
) -> None:
    projector = ContextProjector(COUNTER, budget=20_000, cache_aware=True)

    def project(session: Session) -> Projection:
        snapshot = session.memory.snapshot()
        if one_pass:
            return projector.project_checked(snapshot, None, TOOLS, None)
        return projector.project(snapshot, tools=TOOLS)

    session = Session()
    session.grow(("user", 5))
    project(session)
    session.grow(("pending", 1))
    prompt = project(session)
    assert any("pending call" in note for note in prompt.report.notes)
    session.grow(("stray", 3))  # (the pending call's output comes first)
    session.grow(("user", 5))
    prompt = project(session)
    assert not any("pending call" in note for note in prompt.report.notes)
    assert not any(getattr(item, "call_id", None) == "gone3" for item in prompt.items)


@pytest.mark.parametrize("one_pass", [True, False])
def test_a_plan_made_meanwhile_by_another_thread_is_kept_behind(
    monkeypatch: pytest.MonkeyPatch, one_pass: bool
) -> None:
    """Another thread's plan, put in front while a session's turn was being extended, stays
    (second); the extended plan replaces its previous one wherever it now is and goes first —
    on the one-pass path and on ``project`` alike (a stale plan left behind would answer a
    later call of an older snapshot differently on the two paths)."""
    projector = ContextProjector(COUNTER, budget=20_000, cache_aware=True)
    mine, other = Session(), Session()
    other.grow(("answer", 3))
    for session in (other, mine):
        session.grow(("user", 5))
        projector.project_checked(session.memory.snapshot(), None, TOOLS, None)
    stable = projector._memo._stable
    previous, theirs = stable._plans
    grown = _cache.StablePrefix._grown

    def meanwhile(self: _cache.StablePrefix, plan: Any, new: Any) -> Any:
        with self._lock:
            self._plans.remove(theirs)
            self._plans.insert(0, theirs)  # another thread projected the other session
        return grown(self, plan, new)

    monkeypatch.setattr(_cache.StablePrefix, "_grown", meanwhile)
    mine.grow(("user", 5))
    if one_pass:
        prompt = projector.project_checked(mine.memory.snapshot(), None, TOOLS, None)
    else:
        prompt = projector.project(mine.memory.snapshot(), tools=TOOLS)
    assert list(stable._plans[0].prompt.items) == list(prompt.items)  # (``project`` returns
    # the plan's prompt with its cached prefix noted: an equal copy)
    assert stable._plans[1:] == [theirs]
    assert all(plan is not previous for plan in stable._plans)
