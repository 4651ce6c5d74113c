"""The governor's plain step (``_governor_plain.plain_step``: a step that compacts nothing, in one
pass) sends what the generic step sends and reports the same: a compactor on the plain path and
one forced onto the generic path, given the same calls, answer each call alike. The reference
also converts every list it returns from nothing (no resumed or shared conversion)."""

from __future__ import annotations

import json
import logging
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import Tool
from compactkit.errors import BudgetError
from compactkit.integrations import MessageCompactor
from compactkit.runtime import _governor_plain
from compactkit.runtime.governor import Governor

MODEL = "gpt-4o"
TOOLS = [Tool(name="read", description="read a file", parameters={"type": "object"})]

# One call of a session: what is appended first (a user turn, a parallel tool round trip with
# output sizes in lines, an abandoned call, a stray output, an answer), then what the call does
# besides (other instructions or tools, a pin, a reported usage, a provider count observed, a
# requested compaction, the list read afresh, the returned history kept or not).
TURN = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 120)),
    st.tuples(st.just("tools"), st.lists(st.integers(1, 400), min_size=1, max_size=4)),
    st.tuples(st.just("abandoned"), st.integers(1, 3)),
    st.tuples(st.just("stray"), st.integers(1, 3)),
    st.tuples(st.just("answer"), st.integers(1, 80)),
    st.tuples(st.just("huge"), st.integers(800, 2500)),
)
EXTRA = st.sampled_from(
    ["none"] * 8
    + ["instructions", "tools", "pin", "usage", "observed", "request", "afresh", "history"]
)


def _messages(turn: tuple[str, Any], n: int) -> list[dict[str, Any]]:
    kind, size = turn
    if kind == "user":
        return [{"role": "user", "content": f"request {n}: " + "detail " * size}]
    if kind == "answer":
        return [{"role": "assistant", "content": "done " * size}]
    if kind == "stray":
        return [{"role": "tool", "tool_call_id": f"gone_{n}", "content": "late " * size}]
    if kind == "abandoned":
        call = {"id": f"a_{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        return [{"role": "assistant", "content": None, "tool_calls": [call]}]
    sizes = [size] if kind == "huge" else size
    ids = [f"call_{n}_{k}" for k in range(len(sizes))]
    calls = [
        {"id": i, "type": "function", "function": {"name": "read", "arguments": f'{{"k":{n}}}'}}
        for i in ids
    ]
    outputs = [
        {"role": "tool", "tool_call_id": i, "content": "\n".join(f"{i} {j}" for j in range(lines))}
        for i, lines in zip(ids, sizes, strict=True)
    ]
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *outputs]


def _answer(result: Any) -> dict[str, Any]:
    return {
        "send": json.dumps(result.send, sort_keys=True, default=repr),
        "history": json.dumps(result.history, sort_keys=True, default=repr),
        "report": result.report,
        "tokens": result.tokens,
        "budget": result.budget,
        "compacted": result.compacted,
        "events": [repr(event) for event in result.events],
    }


def _track(compactor: MessageCompactor) -> tuple[Any, ...]:
    governor = compactor.governor
    track = governor._track(compactor.governed_memory())
    return (
        *(track.floor, track.base, track.requested, track.used, track.rearm),
        *(track.turn, track.since, track.last_usage, track.ratio, governor.calibration),
    )


def _general_remember(compactor: MessageCompactor) -> None:
    """Make ``compactor`` map each read message to its stored items by the general path (the
    items' counts taken one by one), never by the usual call's fast path."""
    remember = compactor._remember

    def general(
        fresh: Any, per_message: Any, *, summaries: bool = True, stored: Any = None
    ) -> None:
        remember(fresh, per_message, summaries=True, stored=stored)

    compactor._remember = general  # type: ignore[method-assign]


def _convert_afresh(compactor: MessageCompactor) -> None:
    """Make ``compactor`` convert every list of items it returns from nothing: no conversion
    resumes an earlier one, and none is taken from another (``WireConverter.converted_like``)."""
    converter = compactor._converter
    from_items = converter.from_items

    def afresh(*args: Any, **kwargs: Any) -> Any:
        converter._resumes.clear()
        return from_items(*args, **kwargs)

    converter.from_items = afresh  # type: ignore[method-assign]
    converter.converted_like = lambda *args, **kwargs: None  # type: ignore[method-assign]


def _originals(compactor: MessageCompactor) -> list[tuple[Any, ...]]:
    """Each message the compactor sends as given, by the seq of its first stored item, with
    those items."""
    originals = compactor._originals
    return [(seq, *originals[seq]) for seq in originals]


def _session(turns: list[tuple[tuple[str, Any], str]], budget: int) -> list[dict[str, Any]]:
    """Play ``turns`` on two compactors, one on the generic path only; every call's answer and
    the counters after it must be the same. Returns the plain path's answers."""
    seen: dict[str, list[str]] = {"plain": [], "generic": []}
    plain = MessageCompactor(MODEL, budget=budget, on_event=lambda e: seen["plain"].append(repr(e)))
    generic = MessageCompactor(
        MODEL, budget=budget, on_event=lambda e: seen["generic"].append(repr(e))
    )
    generic.governor._plain_steps = False  # the reference: every step through the scheduler
    _general_remember(generic)
    _convert_afresh(generic)
    answers: list[dict[str, Any]] = []
    lists: dict[int, list[dict[str, Any]]] = {id(plain): [], id(generic): []}
    instructions, tools = "You are terse.", TOOLS
    for n, (turn, extra) in enumerate(turns):
        new = _messages(turn, n)
        if extra == "instructions":
            instructions = f"You are terse (call {n})."
        elif extra == "tools":
            tools = [*TOOLS, Tool(name=f"t{n}", parameters={"type": "object"})]
        results: list[dict[str, Any]] = []
        for compactor in (plain, generic):
            messages = lists[id(compactor)] = [*lists[id(compactor)], *new]
            if extra == "afresh":
                messages = lists[id(compactor)] = [dict(m) for m in messages]
            if extra == "pin":
                stored = compactor.governed_memory().snapshot().items
                if stored:
                    compactor.governed_memory().pin(stored[len(stored) // 2].seq)
            if extra == "request":
                compactor.governor.request_compaction(compactor.governed_memory())
            usage = 3 * budget // 4 if extra == "usage" else None
            try:
                result = compactor(messages, instructions=instructions, tools=tools, usage=usage)
            except BudgetError as exc:  # (a pin too big for the budget, say): raised alike
                results.append({"error": str(exc)})
                continue
            if extra == "observed":  # the provider counted more: the budget tightens
                compactor.observe_usage(result.tokens * 5 // 4)
            assert result.history is not result.send  # (the caller may append to either)
            if extra == "history" or result.compacted:
                lists[id(compactor)] = list(result.history)
            results.append(_answer(result))
        mine, reference = results
        assert mine == reference, f"call {n} ({turn[0]}, {extra})"
        assert _track(plain) == _track(generic), f"call {n}"
        assert _originals(plain) == _originals(generic), f"call {n}: messages mapped to items"
        assert seen["plain"] == seen["generic"], f"call {n}: the events handed to on_event"
        answers.append(mine)
    return answers


@settings(max_examples=40, deadline=None)
@given(
    turns=st.lists(st.tuples(TURN, EXTRA), min_size=1, max_size=30),
    budget=st.sampled_from([3_000, 6_000, 20_000]),
)
def test_the_plain_step_answers_as_the_generic_step(
    turns: list[tuple[tuple[str, Any], str]], budget: int
) -> None:
    _session(turns, budget)


def test_most_steps_of_a_growing_session_take_the_plain_step(monkeypatch: Any) -> None:
    taken: list[bool] = []
    original = _governor_plain.plain_step

    def counted(*args: Any) -> Any:
        step = original(*args)
        taken.append(step is not None)
        return step

    monkeypatch.setattr("compactkit.runtime.governor.plain_step", counted)
    turns = [(("user", 20), "none"), *[(("tools", [300, 200]), "none")] * 30]
    answers = _session(turns, 6_000)
    compactions = sum(answer.get("compacted", False) for answer in answers)
    assert compactions >= 1
    assert taken.count(True) == len(turns) - compactions  # every other step: the plain one


def test_a_replaced_seam_method_takes_the_generic_step() -> None:
    compactor = MessageCompactor(MODEL)
    seen: list[str] = []
    governor = compactor.governor
    finish = governor.finish

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append("finish")
        return finish(*args, **kwargs)

    governor.finish = watched  # type: ignore[method-assign]
    compactor([{"role": "user", "content": "hi"}])
    assert seen == ["finish"]
    assert type(governor) is Governor


def test_the_plain_step_logs_its_projection(caplog: Any) -> None:
    caplog.set_level(logging.DEBUG, logger="compactkit")
    compactor = MessageCompactor(MODEL)
    compactor([{"role": "user", "content": "hi"}])
    compactor([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    logged = [record.getMessage() for record in caplog.records]
    assert sum(message.startswith("projection:") for message in logged) == 2


def _governed_with(plain: bool, trigger: Any, clock: Any) -> tuple[list[str], list[Any]]:
    """A session that grows until its policy fires, on a governor with ``trigger`` and
    ``clock``: the events it reports and the policy states its steps decided on."""
    from compactkit import CompactPolicy, InMemoryMemory

    policy = CompactPolicy(trigger, target=1_000, budget=8_000)
    governor = Governor.for_model(MODEL, policy=policy, clock=clock)
    governor._plain_steps = plain  # type: ignore[misc]
    memory = InMemoryMemory()
    kinds: list[str] = []
    states: list[Any] = []
    for step in range(8):
        memory.add_user_input(f"step {step}: " + "words " * 300)
        governed = governor.step(memory)
        kinds += [type(event).__name__ for event in governed.events]
        states.append(governed.state)
    return kinds, states


def test_a_trigger_with_state_is_asked_once_per_due_step() -> None:
    """A cooldown trigger (fires at most once a minute) decides the step once: the plain step
    hands its measure of a due step to the generic step instead of asking again."""

    def cooldown() -> Any:
        fired: list[float] = []

        def trigger(state: Any) -> bool:
            now = float(len(fired))
            if state.tokens > 1_500 and not fired:
                fired.append(now)
                return True
            return False

        return trigger

    plain = _governed_with(True, cooldown(), lambda: 0.0)
    generic = _governed_with(False, cooldown(), lambda: 0.0)
    assert plain == generic
    assert "CompactionEvent" in plain[0]


def test_the_clock_is_read_as_often_as_on_the_generic_step() -> None:
    from compactkit.governance.triggers import cache_cold, tokens_over

    def ticking() -> Any:
        now = [0.0]

        def clock() -> float:
            now[0] += 200.0
            return now[0]

        return clock, now

    runs = []
    for plain in (True, False):
        clock, now = ticking()
        kinds, states = _governed_with(plain, tokens_over(6_000) | cache_cold(after=150), clock)
        runs.append((kinds, [s.idle_seconds if s is not None else None for s in states], now[0]))
    assert runs[0] == runs[1]


def test_a_seam_method_patched_on_the_class_takes_the_generic_step(monkeypatch: Any) -> None:
    from compactkit.runtime.scheduling import ForegroundCompaction

    seen: list[str] = []
    for owner, name in ((Governor, "finish"), (Governor, "emit"), (ForegroundCompaction, "step")):
        original = owner.__dict__[name]

        def watched(*args: Any, _name: str = name, _f: Any = original, **kw: Any) -> Any:
            seen.append(_name)
            return _f(*args, **kw)

        monkeypatch.setattr(owner, name, watched)
        MessageCompactor(MODEL)([{"role": "user", "content": "hi"}])
        assert name in seen
        monkeypatch.undo()


def test_a_step_replaced_on_the_scheduler_takes_the_generic_step() -> None:
    compactor = MessageCompactor(MODEL)
    scheduler = compactor.governor.scheduler
    seen: list[str] = []
    step = scheduler.step

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append("step")
        return step(*args, **kwargs)

    scheduler.step = watched  # type: ignore[method-assign]
    compactor([{"role": "user", "content": "hi"}])
    assert seen == ["step"]
