"""``budget_visible=True`` in the three frameworks' own agents: every model request ends with
the budget status line (captured at the framework's model object: the SDK's
``ScriptedModel``, pydantic-ai's ``FunctionModel``, a LangChain chat model), the line is never
in the history the framework keeps, and after the scripted model calls ``compact_context`` the
next request is compacted (the oldest turn is gone, the newest is whole)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from compactkit import ConfigError
from compactkit.integrations import langchain as lc
from compactkit.integrations import openai_agents as oa
from compactkit.integrations import pydantic_ai as pa
from compactkit.runtime.governor import Governor
from compactkit.testing import block_network

MODEL = "gpt-4o-mini"
BUDGET = 3000
STATUS = re.compile(r"<context-status>context (\d+)% used; compaction at 80%</context-status>")
NEWEST = "subtask 6: now the tests"


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    with block_network():
        yield


@pytest.fixture(autouse=True)
def _event_loop() -> Iterator[None]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    set_tracing_disabled(True)
    yield
    asyncio.set_event_loop(None)
    loop.close()


def turns() -> list[tuple[str, str]]:
    """Six finished subtasks, about 60 % of the budget: over the target, under the trigger."""
    return [
        (f"subtask {k}: look at file-{k}.py", f"turn-{k} detail: " + "checked line " * 140)
        for k in range(6)
    ]


def share(text: str) -> int:
    match = STATUS.fullmatch(text)
    assert match, text
    return int(match.group(1))


def check_compacted(first: str, second: str, first_share: int, second_share: int) -> None:
    assert "turn-0 detail" in first
    assert "turn-0 detail" not in second
    assert NEWEST in second
    assert 50 < first_share < 80
    assert second_share < first_share


# -- OpenAI Agents SDK ----------------------------------------------------------------------


def test_agents_sdk_filter_status_line_and_requested_compaction() -> None:
    flt = oa.CompactkitInputFilter(MODEL, budget=BUDGET, budget_visible=True)
    model = ScriptedModel(
        [
            [function_call("compact_context", {}, call_id="c1")],
            [assistant_message("subtask 6 done")],
        ]
    )
    agent = Agent(name="a", instructions="Work.", model=model, tools=flt.tools())
    history: list[Any] = []
    for user, answer in turns():
        history += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    from agents import RunConfig

    result = asyncio.run(
        Runner.run(
            agent,
            [*history, {"role": "user", "content": NEWEST}],
            run_config=RunConfig(call_model_input_filter=flt),
        )
    )
    assert result.final_output == "subtask 6 done"
    first, second = model.calls
    assert [tool.name for tool in first.tools] == ["compact_context"]
    shares = []
    for call in (first, second):
        last = call.input[-1]
        assert last["role"] == "user"
        shares.append(share(last["content"]))
    answer = [i for i in second.input if i.get("type") == "function_call_output"][-1]["output"]
    assert answer.startswith("Compaction requested: it runs before your next request")
    check_compacted(str(first.input), str(second.input), *shares)
    # What the run keeps (its items, the next run's input) holds no status line.
    assert "<context-status>" not in str(result.to_input_list())


def test_agents_sdk_filter_with_a_governor_without_the_line_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="budget_visible=True needs the governor"):
        oa.CompactkitInputFilter(MODEL, governor=Governor.for_model(MODEL), budget_visible=True)


# -- pydantic-ai ----------------------------------------------------------------------------


def pydantic_history() -> list[ModelMessage]:
    history: list[ModelMessage] = []
    for user, answer in turns():
        history.append(ModelRequest(parts=[UserPromptPart(user)]))
        history.append(ModelResponse(parts=[TextPart(answer)]))
    return history


def last_text(messages: list[ModelMessage]) -> str:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    part = last.parts[-1]
    assert isinstance(part, UserPromptPart)
    return str(part.content)


@pytest.mark.parametrize("mode", ["project", "compact"])
def test_pydantic_ai_capability_status_line_and_requested_compaction(mode: str) -> None:
    seen: list[list[ModelMessage]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            assert [tool.name for tool in info.function_tools] == ["compact_context"]
            return ModelResponse(parts=[ToolCallPart("compact_context", {})])
        return ModelResponse(parts=[TextPart("subtask 6 done")])

    capability = pa.CompactkitCapability(MODEL, mode=mode, budget=BUDGET, budget_visible=True)  # type: ignore[arg-type]
    agent = PydanticAgent(FunctionModel(respond), capabilities=[capability])
    result = agent.run_sync(NEWEST, message_history=pydantic_history())
    assert result.output == "subtask 6 done"
    first, second = seen
    returned = [
        part
        for message in second
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart)
    ]
    assert str(returned[-1].content).startswith("Compaction requested: it runs before")
    check_compacted(repr(first), repr(second), share(last_text(first)), share(last_text(second)))
    assert "<context-status>" not in repr(result.all_messages())


def test_pydantic_ai_history_processor_refuses_the_line() -> None:
    history = pa.CompactkitHistory(MODEL, budget_visible=True)
    with pytest.raises(ConfigError, match="use CompactkitCapability"):
        history.process([ModelRequest(parts=[UserPromptPart("hi")])])


# -- LangChain ------------------------------------------------------------------------------


class ScriptedChat(BaseChatModel):
    """A chat model that answers from a script and records the messages of every call."""

    script: list[AIMessage]
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=self.script[len(self.seen) - 1])])

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:  # type: ignore[override]
        return self


@pytest.mark.parametrize("mode", ["project", "compact"])
def test_langchain_middleware_status_line_and_requested_compaction(mode: str) -> None:
    call = AIMessage(content="", tool_calls=[{"name": "compact_context", "args": {}, "id": "c1"}])
    chat = ScriptedChat(script=[call, AIMessage(content="subtask 6 done")])
    middleware = lc.CompactkitMiddleware(MODEL, mode=mode, budget=BUDGET, budget_visible=True)  # type: ignore[arg-type]
    assert [tool.name for tool in middleware.tools] == ["compact_context"]
    agent = create_agent(chat, middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    old: list[BaseMessage] = []
    for user, answer in turns():
        old += [HumanMessage(user), AIMessage(content=answer)]
    state = agent.invoke({"messages": [*old, HumanMessage(NEWEST)]}, config)
    assert state["messages"][-1].content == "subtask 6 done"
    first, second = chat.seen
    for sent in (first, second):
        assert isinstance(sent[-1], HumanMessage)
    returned = [m for m in second if isinstance(m, ToolMessage)]
    assert str(returned[-1].content).startswith("Compaction requested: it runs before")
    check_compacted(
        repr(first), repr(second), share(str(first[-1].content)), share(str(second[-1].content))
    )
    # The checkpointed state never holds the line.
    assert "<context-status>" not in repr(state["messages"])
    saved = agent.get_state(config).values["messages"]  # type: ignore[arg-type]
    assert "<context-status>" not in repr(saved)
