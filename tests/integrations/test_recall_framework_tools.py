"""The recall and expand tools in the three frameworks' own agents: a scripted model calls the
tool, and what the tool returned must reach the model's next request (captured at the
framework's model object: the SDK's ``ScriptedModel``, pydantic-ai's ``FunctionModel``, a
LangChain chat model), while the folded detail is absent from the request before."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, Runner, SQLiteSession, set_tracing_disabled
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

from compactkit import ConfigError, InMemoryMemory, Message
from compactkit.compressors import WindowedCompressor
from compactkit.errors import RecallUnsupportedError
from compactkit.integrations import langchain as lc
from compactkit.integrations import openai_agents as oa
from compactkit.integrations import pydantic_ai as pa
from compactkit.integrations.openai_agents import CompactkitSession
from compactkit.testing import block_network

MODEL = "gpt-4o-mini"
SECRET = "ECONNREFUSED 10.9.8.7:6543 while migrating shard-41"


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


def folded_memory() -> InMemoryMemory:
    """A memory whose compaction folded the turn holding ``SECRET`` out of the window."""
    memory = InMemoryMemory()
    for step in range(12):
        memory.add_user_input(f"step {step}: run the migration")
        detail = SECRET if step == 3 else f"migration {step} ok"
        memory.add_output_items([Message(role="assistant", content=detail)])
    memory.compact(WindowedCompressor(max_items=4))
    assert SECRET not in json.dumps(memory.snapshot().model_dump(mode="json"))
    return memory


def check_returned(result: str) -> None:
    """What a recall of ``SECRET`` returns: the frame, the archived item and its ref."""
    assert result.startswith("Quoted history from earlier in this conversation")
    assert '<archived ref="#8" kind="message" role="assistant">' in result
    assert SECRET in result


# -- OpenAI Agents SDK ----------------------------------------------------------------------


def test_agents_sdk_recall_tool_result_reaches_the_next_model_call() -> None:
    memory = folded_memory()
    session = CompactkitSession(memory, model=MODEL, session_id="s")
    model = ScriptedModel(
        [
            [function_call("recall", {"query": "ECONNREFUSED shard 41"}, call_id="c1")],
            [function_call("expand", {"ref": "#7-8"}, call_id="c2")],
            [assistant_message("it was the shard-41 migration")],
        ]
    )
    agent = Agent(
        name="a", instructions="Answer.", model=model, tools=oa.agents_recall_tools(memory)
    )
    result = asyncio.run(Runner.run(agent, "what failed earlier?", session=session))
    assert result.final_output == "it was the shard-41 migration"
    first, second, third = model.calls
    assert SECRET not in json.dumps(first.input, default=str)  # folded: not in the prompt
    assert [tool.name for tool in first.tools] == ["recall", "expand"]
    outputs = [item for item in second.input if item.get("type") == "function_call_output"]
    check_returned(outputs[-1]["output"])
    expanded = [item for item in third.input if item.get("type") == "function_call_output"]
    assert "step 3: run the migration" in expanded[-1]["output"]
    assert SECRET in expanded[-1]["output"]


def test_agents_sdk_session_without_an_archive_is_a_typed_error() -> None:
    with pytest.raises(RecallUnsupportedError, match="SQLiteSession does not offer recall"):
        oa.agents_recall_tools(SQLiteSession("runs"))
    with pytest.raises(ConfigError, match="max_tokens"):
        oa.agents_recall_tools(InMemoryMemory(), max_tokens=10)


# -- pydantic-ai ----------------------------------------------------------------------------


def test_pydantic_ai_toolset_over_a_memory_reaches_the_next_request() -> None:
    memory = folded_memory()
    seen: list[list[ModelMessage]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            assert [tool.name for tool in info.function_tools] == ["recall", "expand"]
            return ModelResponse(parts=[ToolCallPart("recall", {"query": "ECONNREFUSED 6543"})])
        return ModelResponse(parts=[TextPart("done")])

    agent = PydanticAgent(FunctionModel(respond), toolsets=[pa.pydantic_ai_recall_toolset(memory)])
    assert agent.run_sync("what failed?").output == "done"
    returned = [
        part
        for message in seen[1]
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart)
    ]
    check_returned(str(returned[-1].content))


def test_pydantic_ai_capability_recall_searches_what_it_folded_in_this_conversation() -> None:
    history: list[ModelMessage] = []
    for step in range(40):
        detail = SECRET if step == 5 else f"migration {step} ok " + "padding " * 60
        history.append(ModelRequest(parts=[UserPromptPart(f"step {step}: run the migration")]))
        history.append(ModelResponse(parts=[TextPart(detail)]))
    seen: list[list[ModelMessage]] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart("recall", {"query": "ECONNREFUSED shard 41"})])
        return ModelResponse(parts=[TextPart("done")])

    capability = pa.CompactkitCapability(MODEL, budget=2500, recall=True)
    agent = PydanticAgent(FunctionModel(respond), capabilities=[capability])
    result = agent.run_sync("what failed earlier?", message_history=history)
    assert result.output == "done"
    assert SECRET not in repr(seen[0])  # the capability folded that turn out of the prompt
    returned = [
        part
        for message in seen[1]
        for part in getattr(message, "parts", [])
        if isinstance(part, ToolReturnPart) and part.tool_name == "recall"
    ]
    assert returned and SECRET in str(returned[-1].content)
    assert "<archived ref=" in str(returned[-1].content)


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


def recall_call(query: str) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": "recall", "args": {"query": query}, "id": "c1"}]
    )


def test_langchain_recall_tools_over_a_memory_reach_the_next_model_call() -> None:
    memory = folded_memory()
    chat = ScriptedChat(script=[recall_call("ECONNREFUSED 10.9.8.7"), AIMessage(content="done")])
    agent = create_agent(chat, tools=lc.langchain_recall_tools(memory))
    state = agent.invoke({"messages": [HumanMessage("what failed?")]})
    assert state["messages"][-1].content == "done"
    returned = [m for m in chat.seen[1] if isinstance(m, ToolMessage)]
    check_returned(str(returned[-1].content))


def test_langchain_middleware_recall_searches_what_it_folded_in_this_thread() -> None:
    old: list[BaseMessage] = []
    for step in range(40):
        detail = SECRET if step == 5 else f"migration {step} ok " + "padding " * 60
        old += [HumanMessage(f"step {step}: run the migration"), AIMessage(content=detail)]
    chat = ScriptedChat(script=[recall_call("ECONNREFUSED shard 41"), AIMessage(content="done")])
    middleware = lc.CompactkitMiddleware(MODEL, budget=2500, recall=True)
    agent = create_agent(chat, middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    agent.invoke({"messages": [*old, HumanMessage("what failed earlier?")]}, config)
    assert SECRET not in repr(chat.seen[0])  # the middleware folded that turn out of the prompt
    returned = [m for m in chat.seen[1] if isinstance(m, ToolMessage)]
    assert returned and SECRET in str(returned[-1].content)
    assert "<archived ref=" in str(returned[-1].content)
