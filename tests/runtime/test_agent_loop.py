"""Whole multi-step runs over HTTP (an in-memory OpenAI endpoint), chat and responses, sync and
async: tool calls, parallel calls, tool errors, malformed arguments, missing ids, max_steps."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runtime_support import make_agent, run

from compactkit import Agent, ConcurrencyError, ConfigError, FunctionCall, FunctionCallOutput, tool
from compactkit.errors import MaxStepsError
from compactkit.items import item_text
from compactkit.memory import AgentMemory
from compactkit.runtime import ModelCallEvent, ToolCallEvent
from compactkit.testing import FakeOpenAI, FakeReply, text, tool_call


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def variadic(*numbers: int) -> int:
    """Not a valid tool: the model could not name its parameters."""
    return sum(numbers)


def explode(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"boom: {reason}")


def sent_outputs(body: dict[str, Any], api: str) -> dict[str, str]:
    """Tool outputs in a request, by call id."""
    if api == "chat":
        return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    return {
        i["call_id"]: i["output"] for i in body["input"] if i.get("type") == "function_call_output"
    }


def sent_calls(body: dict[str, Any], api: str) -> list[str]:
    """Tool call ids in a request, in order."""
    if api == "chat":
        return [c["id"] for m in body["messages"] for c in m.get("tool_calls") or []]
    return [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]


def consistent(memory: AgentMemory) -> list[FunctionCall]:
    """Every stored call has exactly one output, right after its call's batch; returns calls."""
    items = memory.snapshot().items
    calls = [i for i in items if isinstance(i, FunctionCall)]
    outputs = [i.call_id for i in items if isinstance(i, FunctionCallOutput)]
    assert sorted(outputs) == sorted(c.call_id for c in calls)
    assert len(set(outputs)) == len(outputs)
    return calls


def test_tool_calls_run_until_the_answer(api: str, mode: str) -> None:
    fake = FakeOpenAI([tool_call("add", {"a": 2, "b": 3}), text("It is 5.")])
    agent = make_agent(fake, mode, tools=[add], instructions="Be brief.", api=api)
    session = agent.new_session()
    result = run(session, mode, "What is 2+3?")
    assert result.output == "It is 5."
    assert [len(step.calls) for step in result.steps] == [1, 0]
    assert result.usage.requests == 2 and result.usage.prompt_tokens > 0
    assert fake.paths == [f"/v1/{'chat/completions' if api == 'chat' else 'responses'}"] * 2
    first, second = fake.requests
    schema = first["tools"][0]["function" if api == "chat" else "parameters"]
    schema = schema["parameters"] if api == "chat" else schema
    assert schema["properties"]["a"] == {"type": "integer", "description": "The first number."}
    assert list(sent_outputs(second, api).values()) == ["5"]
    consistent(session.memory)
    kinds = [e.kind for e in result.events]
    assert kinds.count("model_call") == 2 and kinds.count("tool_call") == 1
    assert session.step == 2 and session.turn == 1


def test_errors_become_tool_outputs_the_model_reads(api: str, mode: str) -> None:
    fake = FakeOpenAI(
        [
            tool_call("explode", {"reason": "disk"}),
            tool_call("add", '{"a": 2, "b": '),  # malformed JSON
            tool_call("add", {"a": "two", "b": 3}),  # invalid arguments
            tool_call("nope", {}),  # unknown tool
            text("Gave up."),
        ]
    )
    agent = make_agent(fake, mode, tools=[add, explode], api=api)
    session = agent.new_session()
    result = run(session, mode, "go")
    assert result.output == "Gave up."
    errors = [e for e in result.events if isinstance(e, ToolCallEvent)]
    assert all(e.is_error for e in errors) and len(errors) == 4
    read = list(sent_outputs(fake.requests[-1], api).values())  # what the model was shown
    assert read[0].startswith("Error:") and "raised ValueError: boom: disk" in read[0]
    assert "not valid JSON" in read[1]
    assert "invalid arguments: a:" in read[2]
    assert "no tool named 'nope'" in read[3] and "add, explode" in read[3]
    stored = [i for i in session.memory.snapshot().items if isinstance(i, FunctionCallOutput)]
    assert all(i.is_error for i in stored)
    consistent(session.memory)


def test_missing_call_ids_are_numbered_by_step(api: str, mode: str) -> None:
    fake = FakeOpenAI(
        [tool_call("add", {"a": 1, "b": 1}, ("add", {"a": 2, "b": 2}), call_id=None), text("ok")]
    )
    session = make_agent(fake, mode, tools=[add], api=api).new_session()
    run(session, mode, "go")
    calls = consistent(session.memory)
    assert [c.call_id for c in calls] == ["tool_step_1_0", "tool_step_1_1"]
    assert sent_outputs(fake.requests[1], api) == {"tool_step_1_0": "2", "tool_step_1_1": "4"}


def test_a_server_reusing_call_ids_is_renamed_not_refused(mode: str) -> None:
    fake = FakeOpenAI(
        [
            tool_call("add", {"a": 1, "b": 1}, call_id="call_0"),
            tool_call("add", {"a": 2, "b": 2}, call_id="call_0"),
            text("ok"),
        ]
    )
    session = make_agent(fake, mode, tools=[add]).new_session()
    run(session, mode, "go")
    assert [c.call_id for c in consistent(session.memory)] == ["call_0", "tool_step_2_0"]


def test_parallel_calls_run_concurrently_and_are_recorded_in_call_order() -> None:
    started: dict[str, asyncio.Event] = {}

    async def slow(name: str) -> str:
        """Waits for the other call to start: only a concurrent run finishes."""
        started.setdefault(name, asyncio.Event()).set()
        other = "fast" if name == "slow" else "slow"
        await asyncio.wait_for(started.setdefault(other, asyncio.Event()).wait(), 5)
        if name == "slow":
            await asyncio.sleep(0.01)  # finishes last, but was called first
        return f"{name} done"

    fake = FakeOpenAI(
        [tool_call("slow", {"name": "slow"}, ("slow", {"name": "fast"})), text("both done")]
    )
    session = make_agent(fake, "async", tools=[slow]).new_session()
    result = asyncio.run(session.arun("go"))
    assert [o.output for o in result.steps[0].outputs] == ["slow done", "fast done"]
    stored = [i for i in session.memory.snapshot().items if isinstance(i, FunctionCallOutput)]
    assert [i.output for i in stored] == ["slow done", "fast done"]
    assert sent_calls(fake.requests[1], "chat") == list(sent_outputs(fake.requests[1], "chat"))


def test_a_sync_tool_never_blocks_the_event_loop() -> None:
    unblocked = threading.Event()

    def wait_for_loop() -> str:
        """Returns once the event loop got to run meanwhile."""
        return "loop ran" if unblocked.wait(5) else "loop was blocked"

    async def main() -> str:
        fake = FakeOpenAI([tool_call("wait_for_loop"), text("done")])
        session = make_agent(fake, "async", tools=[wait_for_loop]).new_session()

        async def tick() -> None:
            while not unblocked.is_set():
                await asyncio.sleep(0.001)
                items = session.memory.snapshot().items  # empty until the run adds the input
                if items and items[-1].type == "function_call":
                    unblocked.set()

        ticker = asyncio.create_task(tick())
        result = await session.arun("go")
        await ticker
        return result.steps[0].outputs[0].output

    assert asyncio.run(main()) == "loop ran"


def test_a_tool_timeout_is_an_error_output(mode: str) -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def hangs() -> str:
        """Never returns in time."""
        release.wait(5)
        return "late"

    @tool(timeout=0.05)
    async def ahangs() -> str:
        """Never returns in time either."""
        await asyncio.sleep(5)
        return "late"

    fake = FakeOpenAI([tool_call("hangs", {}, ("ahangs", {})), text("ok")])
    session = make_agent(fake, mode, tools=[hangs, ahangs]).new_session()
    result = run(session, mode, "go")
    release.set()
    outputs = result.steps[0].outputs
    assert all(o.is_error and "timed out after 0.05 s" in o.output for o in outputs)


def test_max_steps_is_a_typed_error_with_every_call_answered(mode: str) -> None:
    fake = FakeOpenAI(default=tool_call("add", {"a": 1, "b": 2}))
    agent = make_agent(fake, mode, tools=[add], max_steps=3)
    session = agent.new_session()
    with pytest.raises(MaxStepsError, match="max_steps=3") as info:
        run(session, mode, "loop forever")
    assert info.value.steps == 3 and len(fake.requests) == 3
    assert len(consistent(session.memory)) == 3
    partial = info.value.result
    assert partial is not None and len(partial.steps) == 3  # type: ignore[attr-defined]
    # run(None) continues the same session
    fake.default = text("finally")
    assert run(session, mode).output == "finally"
    assert session.step == 4


def test_two_runs_of_one_session_at_once_are_refused() -> None:
    async def main() -> None:
        gate = asyncio.Event()

        async def wait() -> str:
            """Holds the run open."""
            await gate.wait()
            return "done"

        fake = FakeOpenAI([tool_call("wait"), text("ok")])
        agent = make_agent(fake, "async", tools=[wait])
        session = agent.new_session()
        first = asyncio.create_task(session.arun("one"))
        while not [e for e in fake.requests]:
            await asyncio.sleep(0.001)
        with pytest.raises(ConcurrencyError, match="already running"):
            await session.arun("two")
        twin = agent.session(session)  # another object on the same session id
        with pytest.raises(ConcurrencyError):
            twin.run("three")
        gate.set()
        assert (await first).output == "ok"
        assert item_text(session.memory.snapshot().items[0]) == "one"

    asyncio.run(main())


def test_events_reach_on_event_and_the_result(mode: str) -> None:
    seen: list[Any] = []
    fake = FakeOpenAI([tool_call("add", {"a": 1, "b": 1}), text("2")])
    session = make_agent(fake, mode, tools=[add], on_event=seen.append).new_session()
    result = run(session, mode, "go")
    assert seen == list(result.events)
    (first, second) = [e for e in result.events if isinstance(e, ModelCallEvent)]
    assert first.tool_calls == 1 and second.tool_calls == 0 and first.step == 1
    assert first.prompt_tokens == len(json.dumps(fake.requests[0])) // 4  # what the fake bills


def test_misuse_is_a_config_error() -> None:
    fake = FakeOpenAI()
    with pytest.raises(ConfigError, match="AsyncOpenAI"):
        Agent("gpt-4o", fake.async_client()).new_session().run("hi")
    with pytest.raises(ConfigError, match="governor="):
        Agent("gpt-4o", fake.client(), governor=Agent("gpt-4o").governor, compaction=False)
    with pytest.raises(ConfigError, match="api"):
        Agent("gpt-4o", fake.client(), api="completions")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="two tools"):
        Agent("gpt-4o", fake.client(), tools=[add, add])
    with pytest.raises(ConfigError, match=r"takes \*numbers"):
        Agent("gpt-4o", fake.client(), tools=[variadic])
    with pytest.raises(ConfigError, match="tool name"):
        Agent("gpt-4o", fake.client(), tools=[lambda: None])
    with pytest.raises(ConfigError, match="max_steps"):
        Agent("gpt-4o", fake.client(), max_steps=0)
    with pytest.raises(ConfigError, match="store="):
        Agent("gpt-4o", fake.client()).resume("abc")
    with pytest.raises(ConfigError, match="empty"):
        Agent("gpt-4o", fake.client()).new_session().run()
    with pytest.raises(ConfigError, match="model_settings"):
        Agent("gpt-4o", fake.client(), model_settings={"messages": []})


def test_model_settings_are_sent() -> None:
    fake = FakeOpenAI([text("hi")])
    agent = Agent("gpt-4o", fake.client(), model_settings={"temperature": 0.2, "max_tokens": 50})
    agent.new_session().run("hello")
    assert fake.requests[0]["temperature"] == 0.2 and fake.requests[0]["max_tokens"] == 50


@st.composite
def scripts(draw: st.DrawFn) -> list[FakeReply]:
    steps = draw(st.integers(min_value=0, max_value=5))
    replies = []
    for _ in range(steps):
        calls = draw(
            st.lists(st.sampled_from(["ok", "raise", "bad", "unknown"]), min_size=1, max_size=3)
        )
        more: list[tuple[str, dict[str, Any] | str]] = [
            ("add", {"a": 1, "b": 2})
            if kind == "ok"
            else ("explode", {"reason": "x"})
            if kind == "raise"
            else ("add", "{oops")
            if kind == "bad"
            else ("ghost", {})
            for kind in calls
        ]
        no_ids = draw(st.booleans())
        replies.append(tool_call(more[0][0], more[0][1], *more[1:], call_id=None if no_ids else ""))
    replies.append(text("done"))
    return replies


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=scripts(), use_responses=st.booleans())
def test_any_script_leaves_every_call_answered_in_order(
    script: list[FakeReply], use_responses: bool
) -> None:
    api = "responses" if use_responses else "chat"
    fake = FakeOpenAI(script)
    session = make_agent(fake, "sync", tools=[add, explode], api=api).new_session()
    result = session.run("go")
    assert result.output == "done"
    calls = consistent(session.memory)
    assert len(calls) == sum(len(r.calls) for r in script)
    for body in fake.requests:  # every prompt sent has its calls answered, in call order
        assert sent_calls(body, api) == list(sent_outputs(body, api))
    assert json.dumps(fake.requests)  # bodies were JSON all along
