"""The governor's plain step (``_governor_plain.plain_step``: a step that compacts nothing, in one
pass) sends what the generic step sends and reports the same: a compactor on the plain path and
one forced onto the generic path, given the same calls, answer each call alike."""

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


def _session(turns: list[tuple[tuple[str, Any], str]], budget: int) -> list[dict[str, Any]]:
    """Play ``turns`` on two compactors, one on the generic path only; every call's answer and
    the counters after it must be the same. Returns the plain path's answers."""
    seen: dict[str, list[str]] = {"plain": [], "generic": []}
    plain = MessageCompactor(MODEL, budget=budget, on_event=lambda e: seen["plain"].append(repr(e)))
    generic = MessageCompactor(
        MODEL, budget=budget, on_event=lambda e: seen["generic"].append(repr(e))
    )
    generic.governor._plain_steps = False  # the reference: every step through the scheduler
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
            if extra == "history" or result.compacted:
                lists[id(compactor)] = list(result.history)
            results.append(_answer(result))
        mine, reference = results
        assert mine == reference, f"call {n} ({turn[0]}, {extra})"
        assert _track(plain) == _track(generic), f"call {n}"
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
