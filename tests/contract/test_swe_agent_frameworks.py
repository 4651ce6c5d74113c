"""The request contract through the three framework entry points, over SWE-agent's trajectories.

docs/agent.md, "The request contract": every request the LangChain middleware, the pydantic-ai
capability (and history processors) and the OpenAI Agents SDK input filter let reach a model keeps
rows a-g. inv21's sweep (session 21) replayed SWE-agent's own 22 trajectories (tests/data:
text-action runs whose observations are user messages, two with a demonstration before the
issue; function-calling runs, three reusing a call id after its output; system prompts of up to
1,959 tokens) through each framework's own agent loop at 4,000 / 6,000 / 16,000 tokens and the
default budget, each file as its own session and all concatenated as one. Here a slice of them
goes through each framework at ``budget=6000``, where each run compacts: the framework's model
object answers with the recorded replies, its tools with the recorded outputs, and every request
the model object receives is read back independently and checked (``SessionChecker``: rows a,
b, d, e, f, g and the order).

Replay shape (a framework run cannot end on a tool call nor take a user message mid-run): a run
is the user message(s) and the replies up to the next text reply; a run that ends on a tool
output gets a text reply, so the framework's last model call of that run is checked too. Each
run starts from the state the framework returned for the previous one. The Agents SDK refuses a
reused call id ("Model reused a completed tool call ID"), so for it a reused id gets a suffix.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from contract_support import SessionChecker, swe_agent_sessions

from compactkit.formats.chat import chat_to_items, tools_from_chat
from compactkit.formats.responses import responses_to_items
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool

MODEL = "gpt-4o"
BUDGET = 6_000
Chat = dict[str, Any]

SLICE = {
    "demo before the issue": "tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj",
    "CTF, a 1,959-token system prompt": "trajectories/demonstrations/ctf/crypto/BabyTimeCapsule.traj",
    "CTF, 43 messages": "trajectories/demonstrations/ctf/web/i_got_id_demo.traj",
    "function calling, ids reused": "trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling__install-1/marshmallow-code__marshmallow-1867.traj",
}
"""The trajectories replayed one by one (by the path in SWE-agent's repository)."""
CONCATENATED = (
    "tests/test_data/trajectories/gpt4__swe-agent-test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1/6e44b9__sweagenttestrepo-1c2844.traj",
    "trajectories/demonstrations/function_calling_simple.traj",
    "trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__default_sys-env_window100__t-0.20__p-0.95__c-2.00__install-1/marshmallow-code__marshmallow-1867.traj",
    "trajectories/demonstrations/replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source/marshmallow-code__marshmallow-1867.traj",
)
"""Replayed as one session (each run's call ids prefixed; its later system prompts mid-session)."""


def sessions() -> dict[str, list[Chat]]:
    recorded = swe_agent_sessions()
    chosen = {name: recorded[path] for name, path in SLICE.items()}
    chosen["four runs as one session"] = [
        prefixed(message, f"r{n}_")
        for n, path in enumerate(CONCATENATED)
        for message in recorded[path]
    ]
    return chosen


def prefixed(message: Chat, prefix: str) -> Chat:
    if message.get("tool_calls"):
        calls = [{**call, "id": prefix + call["id"]} for call in message["tool_calls"]]
        return {**message, "tool_calls": calls}
    if message["role"] == "tool":
        return {**message, "tool_call_id": prefix + message["tool_call_id"]}
    return message


def unique_ids(messages: list[Chat]) -> list[Chat]:
    """A call id used again gets a suffix, its output with it."""
    uses: dict[str, int] = {}
    current: dict[str, str] = {}
    out = []
    for message in messages:
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                uses[call["id"]] = uses.get(call["id"], 0) + 1
                current[call["id"]] = f"{call['id']}_{uses[call['id']]}"
                calls.append({**call, "id": current[call["id"]]})
            message = {**message, "tool_calls": calls}
        elif message["role"] == "tool":
            message = {**message, "tool_call_id": current[message["tool_call_id"]]}
        out.append(message)
    return out


def replayable(messages: list[Chat]) -> list[Chat]:
    """Every run ends with a text reply: one is added after a tool output that a user or system
    message (or the end) follows."""
    out: list[Chat] = []
    for n, message in enumerate(messages):
        out.append(message)
        following = messages[n + 1]["role"] if n + 1 < len(messages) else None
        if message["role"] == "tool" and following in (None, "user", "system"):
            out.append({"role": "assistant", "content": "(the run ends here)"})
    return out


def calls(message: Chat) -> list[tuple[str, str, str]]:
    return [
        (c["id"], c["function"]["name"], c["function"]["arguments"])
        for c in message.get("tool_calls") or []
    ]


def tool_specs(messages: list[Chat]) -> list[Chat]:
    """A Chat tool per call name, its parameters typed as recorded."""
    kinds = {str: "string", int: "integer", bool: "boolean", float: "number"}
    properties: dict[str, Chat] = {}
    for _id, name, arguments in (c for m in messages for c in calls(m)):
        fields = properties.setdefault(name, {})
        fields.update({k: {"type": kinds[type(v)]} for k, v in json.loads(arguments).items()})
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"SWE-agent's {name} command",
                "parameters": {"type": "object", "properties": fields},
            },
        }
        for name, fields in properties.items()
    ]


class Replay:
    """One recorded session: the framework's model object gets each request checked and the
    recorded reply back; its tools get the recorded outputs in order."""

    def __init__(self, messages: list[Chat], *, with_tools: bool = True) -> None:
        self.messages = replayable(messages)
        self.specs = tool_specs(self.messages)
        ref = chat_to_items(self.messages)
        self.checker = SessionChecker(ref, MODEL, BUDGET)
        self.with_tools = with_tools
        self.starts = [len(chat_to_items(self.messages[:n])) for n in range(len(self.messages))]
        self.replies = iter(n for n, m in enumerate(self.messages) if m["role"] == "assistant")
        self.outputs = iter([m["content"] for m in self.messages if m["role"] == "tool"])

    @property
    def system(self) -> str:
        return str(self.messages[0]["content"])

    def runs(self) -> Iterator[list[Chat]]:
        """Each run's opening user (or system) messages."""
        opening: list[Chat] = []
        for message in self.messages[1:]:
            if message["role"] in ("user", "system"):
                opening.append(message)
            elif opening:
                yield opening
                opening = []

    def reply(self, items: list[Item], tools: list[Tool]) -> Chat:
        n = next(self.replies)
        self.checker.check(items, tools if self.with_tools else [], self.starts[n])
        return self.messages[n]

    def output(self) -> str:
        return str(next(self.outputs))

    def done(self) -> int:
        assert next(self.replies, None) is None, "every recorded reply was asked for"
        return self.checker.checked


def via_langchain(replay: Replay, mode: str) -> int:
    from langchain.agents import create_agent
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langchain_openai.chat_models.base import _convert_message_to_dict

    from compactkit.integrations.langchain import CompactkitMiddleware

    bound: list[Tool] = []

    class Recorded(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "recorded"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            bound[:] = tools_from_chat([convert_to_openai_tool(t) for t in tools])
            return self

        def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
            # read back as ChatOpenAI would send them
            items = chat_to_items([_convert_message_to_dict(m) for m in messages])
            reply = replay.reply(items, list(bound))
            ai = AIMessage(
                reply.get("content") or "",
                tool_calls=[
                    {"name": n, "args": json.loads(a), "id": i, "type": "tool_call"}
                    for i, n, a in calls(reply)
                ],
            )
            return ChatResult(generations=[ChatGeneration(message=ai)])

    tools = [
        StructuredTool(
            name=spec["function"]["name"],
            description=spec["function"]["description"],
            args_schema=spec["function"]["parameters"],
            func=lambda **_: replay.output(),
        )
        for spec in replay.specs
    ]
    agent = create_agent(
        Recorded(),
        tools=tools,
        system_prompt=replay.system,
        middleware=[CompactkitMiddleware(MODEL, mode=mode, budget=BUDGET)],  # type: ignore[arg-type]
    )
    state: list[Any] = []
    for opening in replay.runs():
        new = [
            HumanMessage(m["content"]) if m["role"] == "user" else SystemMessage(m["content"])
            for m in opening
        ]
        state = list(agent.invoke({"messages": state + new})["messages"])  # type: ignore[arg-type]
    return replay.done()


def via_pydantic_ai(replay: Replay, mode: str) -> int:
    from pydantic_ai import Agent
    from pydantic_ai import Tool as PydanticTool
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from compactkit.integrations.pydantic_ai import CompactkitCapability, CompactkitHistory

    def read(sent: list[Any], instructions: str | None) -> list[Item]:
        items: list[Item] = [Message(role="system", content=instructions or "")]
        for part in (part for message in sent for part in message.parts):
            if isinstance(part, UserPromptPart):
                items.append(Message(role="user", content=str(part.content)))
            elif isinstance(part, SystemPromptPart):
                items.append(Message(role="system", content=part.content))
            elif isinstance(part, ToolReturnPart):
                output = part.model_response_str()
                items.append(FunctionCallOutput(call_id=part.tool_call_id, output=output))
            elif isinstance(part, TextPart):
                items.append(Message(role="assistant", content=part.content))
            else:
                assert isinstance(part, ToolCallPart), f"an unexpected part: {part!r}"
                arguments = part.args_as_json_str()
                items.append(
                    FunctionCall(
                        call_id=part.tool_call_id, name=part.tool_name, arguments=arguments
                    )
                )
        return items

    def model(sent: list[Any], info: AgentInfo) -> ModelResponse:
        tools = [
            Tool(name=t.name, description=t.description, parameters=t.parameters_json_schema)
            for t in info.function_tools
        ]
        reply = replay.reply(read(sent, info.instructions), tools)
        parts: list[Any] = [TextPart(reply["content"])] if reply.get("content") else []
        parts += [ToolCallPart(n, a, tool_call_id=i) for i, n, a in calls(reply)]
        return ModelResponse(parts=parts)

    if mode in ("processor", "processor with context"):
        governed = CompactkitHistory(MODEL, mode="compact", budget=BUDGET)
        processor = governed.process if mode == "processor" else governed.process_with_context
        capability: Any = ProcessHistory(processor)
    else:
        capability = CompactkitCapability(MODEL, mode=mode, budget=BUDGET)  # type: ignore[arg-type]
    tools = [
        PydanticTool.from_schema(
            lambda **_: replay.output(),
            name=spec["function"]["name"],
            description=spec["function"]["description"],
            json_schema=spec["function"]["parameters"],
        )
        for spec in replay.specs
    ]
    agent: Agent[None, str] = Agent(
        FunctionModel(model, model_name=MODEL),
        instructions=replay.system,
        capabilities=[capability],
        tools=tools,
    )
    history: list[Any] = []
    for opening in replay.runs():
        parts = [
            UserPromptPart(m["content"]) if m["role"] == "user" else SystemPromptPart(m["content"])
            for m in opening
        ]
        result = agent.run_sync(None, message_history=[*history, ModelRequest(parts=parts)])
        history = list(result.all_messages())
    return replay.done()


def via_openai_agents(replay: Replay, mode: str) -> int:
    from agents import Agent, FunctionTool, Model, ModelResponse, RunConfig, Runner, Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    from compactkit.integrations.openai_agents import CompactkitInputFilter

    class Recorded(Model):
        async def get_response(  # type: ignore[override]
            self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
        ) -> ModelResponse:
            offered = kwargs.get("tools", args[1] if len(args) > 1 else [])
            items = [Message(role="system", content=system_instructions or "")]
            tools = [
                Tool(name=t.name, description=t.description, parameters=t.params_json_schema)
                for t in offered
                if isinstance(t, FunctionTool)
            ]
            reply = replay.reply([*items, *responses_to_items(input)], tools)
            output: list[Any] = []
            if reply.get("content"):
                text = ResponseOutputText(type="output_text", text=reply["content"], annotations=[])
                output.append(
                    ResponseOutputMessage(
                        id="msg",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[text],
                    )
                )
            output += [
                ResponseFunctionToolCall(type="function_call", call_id=i, name=n, arguments=a)
                for i, n, a in calls(reply)
            ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    async def invoke(_context: Any, _arguments: str) -> str:
        return replay.output()

    tools = [
        FunctionTool(
            name=spec["function"]["name"],
            description=spec["function"]["description"],
            params_json_schema=spec["function"]["parameters"],
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )
        for spec in replay.specs
    ]
    agent = Agent(name="replay", instructions=replay.system, tools=tools, model=Recorded())
    config = RunConfig(
        call_model_input_filter=CompactkitInputFilter(MODEL, budget=BUDGET), tracing_disabled=True
    )
    history: list[Any] = []
    for opening in replay.runs():
        new = [{"role": m["role"], "content": m["content"]} for m in opening]
        run = Runner.run(agent, [*history, *new], run_config=config, max_turns=100)  # type: ignore[arg-type]
        history = asyncio.run(run).to_input_list()
    return replay.done()


ENTRIES: dict[str, Callable[[list[Chat]], int]] = {
    "LangChain project": lambda m: via_langchain(Replay(m), "project"),
    "LangChain compact": lambda m: via_langchain(Replay(m), "compact"),
    "pydantic-ai capability project": lambda m: via_pydantic_ai(Replay(m), "project"),
    "pydantic-ai capability compact": lambda m: via_pydantic_ai(Replay(m), "compact"),
    # a history processor never sees the tool schemas (docs/pydantic-ai.md): row a without them
    "pydantic-ai history processor": lambda m: via_pydantic_ai(
        Replay(m, with_tools=False), "processor"
    ),
    "pydantic-ai history processor with context": lambda m: via_pydantic_ai(
        Replay(m), "processor with context"
    ),
    "Agents SDK input filter": lambda m: via_openai_agents(Replay(unique_ids(m)), "filter"),
}


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_swe_agent_trajectories_keep_the_contract_through_the_framework(entry: str) -> None:
    checked = {name: ENTRIES[entry](messages) for name, messages in sessions().items()}
    assert all(checked.values()), checked
