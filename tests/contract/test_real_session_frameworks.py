"""Contract row b through the three framework entry points, on a real session.

docs/agent.md, row b: the newest group reaches the model verbatim and last; only "an output
larger than the whole budget is cut". inv20's sweep (session 20) replayed the bundled real
session (mini-SWE-agent, ``evals/benchmarks/data``) through LangChain's ``create_agent`` with
``CompactkitMiddleware``, pydantic-ai's ``Agent`` with ``CompactkitCapability`` /
``CompactkitHistory`` and the OpenAI Agents SDK's ``Runner`` with ``CompactkitInputFilter``, at
``budget=6000``: on the same requests as ``compact_messages`` (inv19) the newest tool output
(317 / 176 tokens) reached the framework's model object cut with the marker, while the request
left room for it beside a smaller summary (before the projection fitted the summary to the room
the budget leaves, docs/projector.md rule 6).

Here each framework is handed the first 1,316 / 2,670 messages as its history and makes one
model call; the model object records what it receives. The session's runs end with a call that
no output answers (mini-SWE-agent's ``submit``); a framework's history cannot hold such a call
before a later turn, so that message is given as a text reply (its text and the call's
arguments), as the sweep replayed it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from contract_support import real_prefix

from compactkit.budget import counter_for
from compactkit.formats.chat import chat_to_items
from compactkit.formats.responses import responses_to_items
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool
from compactkit.items.snapshot import is_summary_message

MODEL = "gpt-4o"
BUDGET = 6_000
COUNTER = counter_for(MODEL)
DONE = "done"


def history(count: int) -> list[dict[str, Any]]:
    """The first ``count`` messages of the bundled session (Chat Completions), every call no
    output answers given as a text reply."""
    messages = real_prefix(count)
    out: list[dict[str, Any]] = []
    for n, message in enumerate(messages):
        calls = message.get("tool_calls") or []
        answered = n + 1 < len(messages) and messages[n + 1]["role"] == "tool"
        if calls and not answered:
            text = "\n".join(
                [message.get("content") or "", *(c["function"]["arguments"] for c in calls)]
            )
            message = {"role": "assistant", "content": text.strip()}
        out.append(message)
    return out


def calls(message: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (c["id"], c["function"]["name"], c["function"]["arguments"])
        for c in message.get("tool_calls") or []
    ]


Seen = list[tuple[list[Item], list[Tool]]]


def via_langchain(messages: list[dict[str, Any]], mode: str) -> Seen:
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langchain_openai.chat_models.base import _convert_message_to_dict

    from compactkit.formats.chat import tools_from_chat
    from compactkit.integrations.langchain import CompactkitMiddleware

    seen: Seen = []
    bound: list[Tool] = []

    class Recording(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "recording"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            bound[:] = tools_from_chat([convert_to_openai_tool(t) for t in tools])
            return self

        def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
            # read back as ChatOpenAI would send them
            seen.append((chat_to_items([_convert_message_to_dict(m) for m in messages]), bound))
            return ChatResult(generations=[ChatGeneration(message=AIMessage(DONE))])

    @tool
    def bash(command: str) -> str:
        """Run a bash command."""
        raise AssertionError("not called")

    state: list[Any] = []
    for message in messages[1:]:
        if message["role"] == "user":
            state.append(HumanMessage(message["content"]))
        elif message["role"] == "tool":
            state.append(ToolMessage(message["content"], tool_call_id=message["tool_call_id"]))
        else:
            state.append(
                AIMessage(
                    message.get("content") or "",
                    tool_calls=[
                        {"name": n, "args": json.loads(a), "id": i, "type": "tool_call"}
                        for i, n, a in calls(message)
                    ],
                )
            )
    agent = create_agent(
        Recording(),
        tools=[bash],
        system_prompt=messages[0]["content"],
        middleware=[CompactkitMiddleware(MODEL, mode=mode, budget=BUDGET)],  # type: ignore[arg-type]
    )
    agent.invoke({"messages": state})  # type: ignore[arg-type]
    return seen


def via_pydantic_ai(messages: list[dict[str, Any]], mode: str) -> Seen:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from compactkit.integrations.pydantic_ai import CompactkitCapability, CompactkitHistory

    seen: Seen = []

    def read(sent: list[Any], instructions: str | None) -> list[Item]:
        items: list[Item] = [Message(role="system", content=instructions or "")]
        for message in sent:
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    items.append(Message(role="user", content=str(part.content)))
                elif isinstance(part, ToolReturnPart):
                    items.append(
                        FunctionCallOutput(
                            call_id=part.tool_call_id, output=part.model_response_str()
                        )
                    )
                elif isinstance(part, TextPart):
                    items.append(Message(role="assistant", content=part.content))
                elif isinstance(part, ToolCallPart):
                    items.append(
                        FunctionCall(
                            call_id=part.tool_call_id,
                            name=part.tool_name,
                            arguments=part.args_as_json_str(),
                        )
                    )
                else:
                    raise AssertionError(f"an unexpected part: {part!r}")
        return items

    def model(sent: list[Any], info: AgentInfo) -> ModelResponse:
        tools = [
            Tool(name=t.name, description=t.description, parameters=t.parameters_json_schema)
            for t in info.function_tools
        ]
        seen.append((read(sent, info.instructions), tools))
        return ModelResponse(parts=[TextPart(DONE)])

    past: list[Any] = []
    for message in messages[1:]:
        if message["role"] == "user":
            past.append(ModelRequest(parts=[UserPromptPart(message["content"])]))
        elif message["role"] == "tool":
            part = ToolReturnPart("bash", message["content"], tool_call_id=message["tool_call_id"])
            past.append(ModelRequest(parts=[part]))
        else:
            parts: list[Any] = [TextPart(message["content"])] if message.get("content") else []
            parts += [ToolCallPart(n, a, tool_call_id=i) for i, n, a in calls(message)]
            past.append(ModelResponse(parts=parts))
    if mode in ("processor", "processor with context"):
        history = CompactkitHistory(MODEL, mode="compact", budget=BUDGET)
        capability: Any = ProcessHistory(
            history.process if mode == "processor" else history.process_with_context
        )
    else:
        capability = CompactkitCapability(MODEL, mode=mode, budget=BUDGET)  # type: ignore[arg-type]
    agent: Agent[None, str] = Agent(
        FunctionModel(model, model_name=MODEL),
        instructions=messages[0]["content"],
        capabilities=[capability],
    )

    @agent.tool_plain
    def bash(command: str) -> str:
        """Run a bash command."""
        raise AssertionError("not called")

    agent.run_sync(None, message_history=past)
    return seen


def via_openai_agents(messages: list[dict[str, Any]], mode: str) -> Seen:
    from agents import (
        Agent,
        FunctionTool,
        Model,
        ModelResponse,
        RunConfig,
        Runner,
        Usage,
        function_tool,
    )
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    from compactkit.formats.responses import items_to_responses
    from compactkit.integrations.openai_agents import CompactkitInputFilter

    seen: Seen = []

    class Recording(Model):
        async def get_response(  # type: ignore[override]
            self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
        ) -> ModelResponse:
            tools = kwargs.get("tools", args[1] if len(args) > 1 else [])
            items: list[Item] = [Message(role="system", content=system_instructions or "")]
            seen.append(
                (
                    [*items, *responses_to_items(input)],
                    [
                        Tool(
                            name=t.name, description=t.description, parameters=t.params_json_schema
                        )
                        for t in tools
                        if isinstance(t, FunctionTool)
                    ],
                )
            )
            text = ResponseOutputText(type="output_text", text=DONE, annotations=[])
            reply = ResponseOutputMessage(
                id="msg_done", type="message", role="assistant", status="completed", content=[text]
            )
            return ModelResponse(output=[reply], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    @function_tool
    def bash(command: str) -> str:
        """Run a bash command."""
        raise AssertionError("not called")

    agent = Agent(
        name="replay", instructions=messages[0]["content"], tools=[bash], model=Recording()
    )
    config = RunConfig(
        call_model_input_filter=CompactkitInputFilter(MODEL, budget=BUDGET), tracing_disabled=True
    )
    wire = items_to_responses(chat_to_items(messages[1:]))
    asyncio.run(Runner.run(agent, wire, run_config=config))  # type: ignore[arg-type]
    return seen


ENTRIES: dict[str, Callable[[list[dict[str, Any]]], Seen]] = {
    "LangChain project": lambda m: via_langchain(m, "project"),
    "LangChain compact": lambda m: via_langchain(m, "compact"),
    "pydantic-ai capability project": lambda m: via_pydantic_ai(m, "project"),
    "pydantic-ai capability compact": lambda m: via_pydantic_ai(m, "compact"),
    "pydantic-ai history processor": lambda m: via_pydantic_ai(m, "processor"),
    "pydantic-ai history processor with context": lambda m: via_pydantic_ai(
        m, "processor with context"
    ),
    "Agents SDK input filter": lambda m: via_openai_agents(m, "filter"),
}


@pytest.mark.parametrize("count", [1316, 2670])  # newest outputs of 317 and 176 tokens
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_a_small_newest_output_of_a_real_session_reaches_the_framework_model_verbatim(
    entry: str, count: int
) -> None:
    messages = history(count)
    newest = messages[-1]
    assert newest["role"] == "tool"
    seen = ENTRIES[entry](messages)
    assert len(seen) == 1, "one model call"
    items, tools = seen[0]
    if entry == "pydantic-ai history processor":
        tools = []  # without the run's context it cannot see the tool schemas (docs/pydantic-ai.md)
    assert COUNTER.count(items, tools=tools).tokens <= BUDGET
    assert items[0] == Message(role="system", content=messages[0]["content"])
    assert any(is_summary_message(item) for item in items), "the prefix was folded"
    last = items[-1]
    assert isinstance(last, FunctionCallOutput)
    assert last.call_id == newest["tool_call_id"]
    assert last.text == newest["content"], (
        f"the newest output ({COUNTER.count_text(newest['content'])} tokens) reached the model "
        f"as {COUNTER.count_text(last.text)} tokens"
    )
