"""The OpenAI Agents SDK integration, with the real ``Runner`` and the SDK's ``ScriptedModel``."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from agents import (
    Agent,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from agents.testing import ScriptedModel, assistant_message, function_call

from compactkit import InMemoryMemory, MemorySnapshot, Tool, counter_for
from compactkit.formats import responses_to_items, validate_responses
from compactkit.integrations import CompactkitInputFilter, CompactkitSession
from compactkit.items import FunctionCall, FunctionCallOutput, Message
from compactkit.runtime import PassthroughEvent

MODEL = "gpt-4"  # an 8k window: 6,021 usable input tokens
COUNTER = counter_for(MODEL)
INSTRUCTIONS = "You fix failing tests."
OUTPUT_LINES = 300  # each read returns ~600 tokens: a dozen reads overflow the window


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield


@function_tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return "\n".join(f"{path}:{n}: x = {n}" for n in range(OUTPUT_LINES))


TOOLS = [
    Tool(
        name=read_file.name,
        description=read_file.description,
        parameters=read_file.params_json_schema,
    )
]


def tool_loop(reads: int, run: int = 0) -> list[Any]:
    """One run's script: ``reads`` tool calls, one per model call, then the answer."""
    steps: list[Any] = [
        [function_call("read_file", {"path": f"src/f{run}_{n}.py"}, call_id=f"call_{run}_{n}")]
        for n in range(reads)
    ]
    steps.append([assistant_message(f"fixed {run}", item_id=f"msg_{run}")])
    return steps


def prompt_tokens(model_input: list[Any]) -> int:
    """What the request the model saw counts: its input, the instructions, the tool schema."""
    plain = [json.loads(json.dumps(item, default=str)) for item in model_input]
    items = [Message(role="system", content=INSTRUCTIONS), *responses_to_items(plain)]
    return COUNTER.count(items, tools=TOOLS).tokens


def check_calls(model: ScriptedModel) -> list[int]:
    """Every call: under budget, every call with its output. Returns the prompt sizes."""
    sizes = []
    for call in model.calls:
        assert call.system_instructions == INSTRUCTIONS
        validate_responses(call.input, mode="raise")
        sizes.append(prompt_tokens(call.input))
    budget = CompactkitInputFilter(MODEL).governor.projector.budget
    assert budget is not None and max(sizes) <= budget
    return sizes


def agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="fixer", instructions=INSTRUCTIONS, model=model, tools=[read_file])


def test_the_filter_keeps_every_call_of_a_long_tool_loop_under_budget() -> None:
    model = ScriptedModel(tool_loop(20))
    store = SQLiteSession("loop")
    result = asyncio.run(
        Runner.run(
            agent(model),
            "fix the tests",
            session=store,
            run_config=RunConfig(call_model_input_filter=CompactkitInputFilter(MODEL)),
            max_turns=50,
        )
    )
    assert result.final_output == "fixed 0"
    model.assert_complete()
    sizes = check_calls(model)
    assert len(sizes) == 21
    # The filter changed only what the model saw: the session stored every item of the run.
    stored = asyncio.run(store.get_items())
    assert len(stored) == 1 + 2 * 20 + 1
    assert prompt_tokens(model.calls[-1].input) < prompt_tokens(stored)


def test_without_the_filter_the_same_loop_overflows() -> None:
    model = ScriptedModel(tool_loop(20))
    asyncio.run(
        Runner.run(agent(model), "fix the tests", session=SQLiteSession("raw"), max_turns=50)
    )
    sizes = [prompt_tokens(call.input) for call in model.calls]
    budget = CompactkitInputFilter(MODEL).governor.projector.budget
    assert budget is not None and max(sizes) > budget  # the case the filter exists for


def test_the_session_keeps_full_history_and_returns_summary_and_kept_items() -> None:
    async def scenario() -> None:
        store = SQLiteSession("runs")
        session = CompactkitSession(store, model=MODEL)
        model = ScriptedModel([])
        config = RunConfig(call_model_input_filter=session.input_filter())
        for run in range(4):
            model.extend(tool_loop(6, run))
            result = await Runner.run(
                agent(model), f"task {run}", session=session, run_config=config
            )
            assert result.final_output == f"fixed {run}"
        model.assert_complete()
        check_calls(model)
        stored = await store.get_items()
        assert len(stored) == 4 * (1 + 2 * 6 + 1)  # every item of every run, untouched
        governed = await session.get_items()
        assert len(governed) < len(stored)
        assert MemorySnapshot.from_items(responses_to_items(governed)).summary
        # The latest run's first call started from the session's summary, not from the full list.
        first_of_last_run = next(
            call for call in model.calls if call.input[-1].get("content") == "task 3"
        )
        assert MemorySnapshot.from_items(responses_to_items(first_of_last_run.input)).summary

    asyncio.run(scenario())


def test_a_compactkit_memory_as_the_store_keeps_summary_and_originals() -> None:
    async def scenario() -> None:
        memory = InMemoryMemory()
        session = CompactkitSession(memory, model=MODEL, session_id="mem")
        model = ScriptedModel([])
        config = RunConfig(call_model_input_filter=session.input_filter())
        for run in range(4):
            model.extend(tool_loop(6, run))
            result = await Runner.run(
                agent(model), f"task {run}", session=session, run_config=config
            )
        check_calls(model)
        history = memory.history()  # every original item, folded ones included
        assert sum(isinstance(i, FunctionCallOutput) for i in history) == 24
        assert memory.summary  # the compaction was stored in the memory
        governed = await session.get_items()
        assert MemorySnapshot.from_items(responses_to_items(governed)).summary
        calls = {i.call_id for i in responses_to_items(governed) if isinstance(i, FunctionCall)}
        outputs = {
            i.call_id for i in responses_to_items(governed) if isinstance(i, FunctionCallOutput)
        }
        assert calls == outputs
        popped = await session.pop_item()
        assert popped == result.to_input_list()[-1]  # exactly the item the run stored
        await session.clear_session()
        assert await session.get_items() == []

    asyncio.run(scenario())


def test_limit_keeping_groups_never_starts_with_an_output_without_its_call() -> None:
    async def scenario() -> None:
        store = SQLiteSession("limit")
        session = CompactkitSession(store, model=MODEL, compaction=False, limit_keeps_groups=True)
        model = ScriptedModel(tool_loop(3))
        await Runner.run(agent(model), "go", session=session)
        everything = await session.get_items()
        for limit in range(len(everything) + 1):
            tail = await session.get_items(limit=limit)
            assert len(tail) >= limit
            validate_responses(tail, mode="raise")

    asyncio.run(scenario())


def test_limit_by_default_returns_exactly_the_latest_n_as_the_sdk_does() -> None:
    async def scenario() -> None:
        store = SQLiteSession("limit-exact")
        session = CompactkitSession(store, model=MODEL, compaction=False)
        model = ScriptedModel(tool_loop(3))
        await Runner.run(agent(model), "go", session=session)
        everything = await session.get_items()
        for limit in range(len(everything) + 1):
            assert await session.get_items(limit=limit) == everything[len(everything) - limit :]

    asyncio.run(scenario())


def test_items_compactkit_does_not_model_pass_through_the_session() -> None:
    async def scenario() -> None:
        events: list[Any] = []
        store = SQLiteSession("opaque")
        # (an OpenAI compaction item is modelled now: an item reference is the unknown shape)
        compaction = {"type": "item_reference", "id": "msg_0123"}
        await store.add_items([compaction, {"role": "user", "content": "hello"}])
        session = CompactkitSession(store, model=MODEL, on_event=events.append)
        items = await session.get_items()
        assert items[0] == compaction
        assert [type(e) for e in events if isinstance(e, PassthroughEvent)] == [PassthroughEvent]

    asyncio.run(scenario())


def test_a_store_that_is_neither_is_a_config_error() -> None:
    from compactkit import ConfigError

    with pytest.raises(ConfigError, match="Agents SDK Session"):
        CompactkitSession([], model=MODEL)  # type: ignore[arg-type]


def test_importing_without_the_extra_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agents", None)
    monkeypatch.delitem(sys.modules, "compactkit.integrations.openai_agents", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'compactkit\[openai-agents\]'"):
        importlib.import_module("compactkit.integrations.openai_agents")
