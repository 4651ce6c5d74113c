"""CompactkitMiddleware inside a real LangChain agent: create_agent + ChatOpenAI over a mocked
OpenAI endpoint (httpx2 MockTransport), with a checkpointer, sync and async."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import httpx2
import pytest
from langchain.agents import create_agent
from langchain_core.messages import ChatMessage, HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel, Field

from compactkit import ConfigError, SummaryCompressor, Tool, chat_to_items, counter_for
from compactkit.formats import tools_from_chat
from compactkit.integrations.langchain import CompactkitMiddleware, LangChainLLM
from compactkit.runtime.events import CompactionEvent, Event, PassthroughEvent
from compactkit.testing import block_network

MODEL = "gpt-4o-mini"
BUDGET = 2500
CALLS_PER_QUESTION = 3


@pytest.fixture(autouse=True)
def _no_network() -> Any:
    with block_network():
        yield


def arun(coroutine: Any) -> Any:
    """Run a coroutine on a loop of its own, leaving the thread's event loop alone (pydantic-ai's
    ``run_sync`` keeps one per thread; ``asyncio.run`` would orphan it)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


class ScriptedOpenAI:
    """A Chat Completions endpoint: per user question, CALLS_PER_QUESTION tool calls, then an
    answer. Records every request body, so tests assert what the model was sent."""

    def __init__(self, *, reuse_ids: bool = False) -> None:
        self.requests: list[dict[str, Any]] = []
        self.summarizer_requests: list[dict[str, Any]] = []
        self._calls: dict[str, int] = {}
        self._reuse_ids = reuse_ids

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/chat/completions"
        body = json.loads(request.content)
        if "tools" not in body:  # compactkit's summarizer, through LangChainLLM
            self.summarizer_requests.append(body)
            answer = "## Decisions\n- Read each module before answering about it."
            return self._reply({"role": "assistant", "content": answer}, "stop")
        self.requests.append(body)
        question = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        done = self._calls.get(question, 0)
        self._calls[question] = done + 1
        if done < CALLS_PER_QUESTION:
            number = done + 1 if self._reuse_ids else len(self.requests)
            path = f"src/module_{len(self.requests)}.py"
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{number}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": json.dumps({"path": path})},
                    }
                ],
            }
            reason = "tool_calls"
        else:
            message, reason = {"role": "assistant", "content": f"answered {question}"}, "stop"
        return self._reply(message, reason)

    def _reply(self, message: dict[str, Any], reason: str) -> httpx2.Response:
        return httpx2.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": MODEL,
                "choices": [{"index": 0, "finish_reason": reason, "message": message}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
            },
        )

    def prompt_tokens(self) -> list[int]:
        """Every request as compactkit counts it: messages, tool schemas, reply priming."""
        counter = counter_for(MODEL)
        return [
            counter.count(
                chat_to_items(body["messages"]), tools=tools_from_chat(body.get("tools", []))
            ).tokens
            for body in self.requests
        ]


@tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"# {path}\n" + "\n".join(f"line {n}: value = {n * 7}" for n in range(60))


def llm(server: ScriptedOpenAI) -> ChatOpenAI:
    return ChatOpenAI(
        model=MODEL,
        api_key="sk-test",  # type: ignore[arg-type]
        use_responses_api=False,
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
        http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(server)),
    )


def make_agent(server: ScriptedOpenAI, middleware: list[Any]) -> Any:
    return create_agent(
        llm(server),
        tools=[read_file],
        system_prompt="You answer questions about the repository. Be brief.",
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )


QUESTIONS = [f"question {n}: what does module {n} compute?" for n in range(5)]
CONFIG = {"configurable": {"thread_id": "thread-1"}}


def run(agent: Any, *, asynchronous: bool = False) -> list[Any]:
    states = []
    for question in QUESTIONS:
        payload = {"messages": [HumanMessage(question)]}
        if asynchronous:
            states.append(arun(agent.ainvoke(payload, CONFIG)))
        else:
            states.append(agent.invoke(payload, CONFIG))
    return [state["messages"] for state in states]


def assert_well_formed(server: ScriptedOpenAI) -> None:
    """Every tool call is answered right after it, and no tool result lacks its call (checked
    turn by turn, so call ids a model reuses across turns are fine)."""
    for body in server.requests:
        assert body["messages"][0] == {
            "role": "system",
            "content": "You answer questions about the repository. Be brief.",
        }
        open_calls: set[str] = set()
        for message in body["messages"]:
            if message["role"] == "tool":
                assert message["tool_call_id"] in open_calls
                open_calls.discard(message["tool_call_id"])
                continue
            assert not open_calls  # the previous turn's calls were all answered
            open_calls = {call["id"] for call in message.get("tool_calls", [])}
        assert not open_calls


def test_without_governance_the_loop_overflows_the_budget() -> None:
    # The workload the other tests govern: it does not fit unless something governs it.
    server = ScriptedOpenAI()
    run(make_agent(server, []))
    assert max(server.prompt_tokens()) > BUDGET


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_project_mode_keeps_every_call_under_budget_and_the_state_whole(
    asynchronous: bool,
) -> None:
    server = ScriptedOpenAI()
    middleware = CompactkitMiddleware(MODEL, budget=BUDGET)
    histories = run(make_agent(server, [middleware]), asynchronous=asynchronous)

    assert max(server.prompt_tokens()) <= BUDGET
    assert_well_formed(server)
    # The checkpointed state is never changed: every message of every turn is still there.
    per_question = 2 + 2 * CALLS_PER_QUESTION
    assert [len(h) for h in histories] == [per_question * n for n in range(1, 6)]
    # The model saw less than the state holds, and always the newest tool result.
    assert len(server.requests[-1]["messages"]) < len(histories[-1]) + 1
    for body in server.requests:
        last = body["messages"][-1]
        assert last["role"] in ("user", "tool")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_compact_mode_writes_a_marked_summary_into_the_state(asynchronous: bool) -> None:
    server = ScriptedOpenAI()
    events: list[Event] = []
    middleware = CompactkitMiddleware(MODEL, mode="compact", budget=BUDGET, on_event=events.append)
    histories = run(make_agent(server, [middleware]), asynchronous=asynchronous)

    assert max(server.prompt_tokens()) <= BUDGET
    assert_well_formed(server)
    compactions = [e for e in events if isinstance(e, CompactionEvent)]
    assert compactions and all(e.applied for e in compactions)
    final = histories[-1]
    summary = final[0]
    assert summary.additional_kwargs["lc_source"] == "summarization"
    assert len(final) < 2 + 2 * CALLS_PER_QUESTION * len(QUESTIONS)  # the state was compacted
    # The digest keeps the exact file names the folded tool calls read.
    assert "src/module_1.py" in summary.text
    # ...with no provenance references: the mirror's seqs are renumbered by the next reader
    assert "[#" not in summary.text and "expand(" not in summary.text
    # The summary is sent to the model as user-side context, never as the system prompt.
    last = server.requests[-1]["messages"]
    assert last[1]["role"] == "user" and "src/module_1.py" in last[1]["content"]
    # No tool result survives without its call in the state either.
    call_ids = {c["id"] for m in final if m.type == "ai" for c in m.tool_calls}
    assert all(m.tool_call_id in call_ids for m in final if m.type == "tool")


def test_the_state_resumes_from_the_checkpointer_in_a_new_middleware() -> None:
    # Another process: the same checkpointer, a fresh middleware that mirrored nothing yet.
    server = ScriptedOpenAI()
    saver = InMemorySaver()

    def agent() -> Any:
        middleware = [CompactkitMiddleware(MODEL, mode="compact", budget=BUDGET)]
        return create_agent(
            llm(server), tools=[read_file], middleware=middleware, checkpointer=saver
        )

    first = agent()
    for question in QUESTIONS[:3]:
        first.invoke({"messages": [HumanMessage(question)]}, CONFIG)
    state = agent().invoke({"messages": [HumanMessage(QUESTIONS[3])]}, CONFIG)
    assert state["messages"][0].additional_kwargs["lc_source"] == "summarization"
    assert state["messages"][-1].content == f"answered {QUESTIONS[3]}"
    assert max(server.prompt_tokens()) <= BUDGET


def test_reused_call_ids_do_not_break_governance() -> None:
    # Scripted and test models reuse call ids across turns; the memory must not refuse them.
    server = ScriptedOpenAI(reuse_ids=True)
    histories = run(make_agent(server, [CompactkitMiddleware(MODEL, budget=BUDGET)]))
    assert max(server.prompt_tokens()) <= BUDGET
    assert_well_formed(server)
    # The model is sent the ids it produced, never compactkit's internal renames.
    sent = {
        c["id"] for b in server.requests for m in b["messages"] for c in m.get("tool_calls", [])
    }
    assert sent == {"call_1", "call_2", "call_3"}
    assert len(histories[-1]) == (2 + 2 * CALLS_PER_QUESTION) * len(QUESTIONS)


def test_a_message_kind_compactkit_does_not_model_passes_through_with_a_warning() -> None:
    server = ScriptedOpenAI()
    events: list[Event] = []
    agent = make_agent(server, [CompactkitMiddleware(MODEL, budget=BUDGET, on_event=events.append)])
    note = ChatMessage(content="reviewer note: keep answers short", role="critic")
    state = agent.invoke({"messages": [note, HumanMessage("question 0")]}, CONFIG)
    passthrough = [e for e in events if isinstance(e, PassthroughEvent)]
    assert len(passthrough) == 1
    assert passthrough[0].format == "langchain" and passthrough[0].index == 0
    assert "ChatMessage" in passthrough[0].reason
    assert state["messages"][0] is not None and state["messages"][0].content == note.content
    # Sent as it came, on every call.
    for body in server.requests:
        assert {"role": "critic", "content": note.content} in body["messages"]


def test_options_that_contradict_each_other_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="mode must be"):
        CompactkitMiddleware(MODEL, mode="trim")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="compressor must have compress"):
        CompactkitMiddleware(MODEL, policy=None, compressor=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="budget must be a positive"):
        CompactkitMiddleware(MODEL, budget=0)


class Broken:
    """A compressor whose every compaction fails (a dead summarizer)."""

    name = "broken"

    def compress(self, snapshot: Any) -> Any:
        raise RuntimeError("summarizer unreachable")


def test_a_failing_compressor_never_loses_a_message() -> None:
    server = ScriptedOpenAI()
    events: list[Event] = []
    middleware = CompactkitMiddleware(
        MODEL, mode="compact", budget=BUDGET, compressor=Broken(), on_event=events.append
    )
    histories = run(make_agent(server, [middleware]))
    failed = [e for e in events if isinstance(e, CompactionEvent)]
    assert failed and all(e.outcome == "failed" and not e.applied for e in failed)
    assert "summarizer unreachable" in (failed[0].error or "")
    # The state kept everything; every call was still projected under the budget.
    assert len(histories[-1]) == (2 + 2 * CALLS_PER_QUESTION) * len(QUESTIONS)
    assert max(server.prompt_tokens()) <= BUDGET


def test_a_vetoed_compaction_leaves_the_state_alone() -> None:
    server = ScriptedOpenAI()
    asked: list[Any] = []

    def veto(request: Any) -> bool:
        asked.append(request)
        return False

    middleware = CompactkitMiddleware(MODEL, mode="compact", budget=BUDGET, before_compaction=veto)
    histories = run(make_agent(server, [middleware]))
    assert asked
    assert len(histories[-1]) == (2 + 2 * CALLS_PER_QUESTION) * len(QUESTIONS)
    assert max(server.prompt_tokens()) <= BUDGET


def test_importing_without_the_extra_names_the_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "langchain", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "compactkit.integrations.langchain", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'compactkit\[langchain\]'"):
        importlib.import_module("compactkit.integrations.langchain")


@pytest.mark.parametrize("asynchronous", [False, True], ids=["invoke", "ainvoke"])
def test_an_llm_summary_written_by_a_langchain_model(asynchronous: bool) -> None:
    server = ScriptedOpenAI()
    summarizer = SummaryCompressor(LangChainLLM(llm(server)), target_tokens=BUDGET // 2)
    events: list[Event] = []
    middleware = CompactkitMiddleware(
        MODEL, mode="compact", budget=BUDGET, compressor=summarizer, on_event=events.append
    )
    histories = run(make_agent(server, [middleware]), asynchronous=asynchronous)
    assert server.summarizer_requests  # the summary was written by the model
    assert any(isinstance(e, CompactionEvent) and e.applied for e in events)
    summary = histories[-1][0].additional_kwargs["compactkit_summary"]
    assert "Read each module before answering about it." in summary
    assert "src/module_1.py" in summary  # exact facts the answer lacked are kept anyway
    assert max(server.prompt_tokens()) <= BUDGET
    assert_well_formed(server)


def test_langchain_llm_takes_only_a_chat_model() -> None:
    with pytest.raises(ConfigError, match="BaseChatModel"):
        LangChainLLM("gpt-4o-mini")  # type: ignore[arg-type]


def test_a_tool_result_answering_no_call_is_repaired_out_of_the_prompt() -> None:
    from langchain_core.messages import ToolMessage

    server = ScriptedOpenAI()
    agent = make_agent(server, [CompactkitMiddleware(MODEL, budget=BUDGET)])
    ghost = ToolMessage("stale result", tool_call_id="call_from_a_cut_history")
    state = agent.invoke({"messages": [HumanMessage(QUESTIONS[0]), ghost]}, CONFIG)
    assert state["messages"][1] is not None and state["messages"][1].content == "stale result"
    assert_well_formed(server)  # the provider never sees a result without its call
    assert state["messages"][-1].content == f"answered {QUESTIONS[0]}"


def test_stream_and_astream_are_governed_too() -> None:
    server = ScriptedOpenAI()
    events: list[Event] = []
    agent = make_agent(server, [CompactkitMiddleware(MODEL, budget=BUDGET, on_event=events.append)])
    payload = {"messages": [HumanMessage(QUESTIONS[0])]}
    chunks = list(agent.stream(payload, {"configurable": {"thread_id": "s1"}}))

    async def consume() -> list[Any]:
        config = {"configurable": {"thread_id": "s2"}}
        other = {"messages": [HumanMessage(QUESTIONS[1])]}
        return [chunk async for chunk in agent.astream(other, config)]

    achunks = arun(consume())
    assert chunks and achunks
    calls = 2 * (CALLS_PER_QUESTION + 1)
    assert len(server.requests) == calls
    assert sum(e.kind == "projection" for e in events) == calls


IN_A_RUNNING_LOOP = """
import asyncio, json, sys
import httpx2
from blockbuster import blockbuster_ctx
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from compactkit.integrations.langchain import CompactkitMiddleware

def reply(request):
    body = json.loads(request.content)
    answered = body["messages"][-1]["role"] == "tool"
    message = (
        {"role": "assistant", "content": "done"}
        if answered
        else {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type":
              "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]}
    )
    return httpx2.Response(200, json={"id": "x", "object": "chat.completion", "created": 1,
        "model": "gpt-4o-mini", "choices": [{"index": 0, "message": message,
        "finish_reason": "stop" if answered else "tool_calls"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}})

@tool
def read_file(path: str) -> str:
    '''Read a file.'''
    return "x = 1\\n" * 400

chat = ChatOpenAI(model="gpt-4o-mini", api_key="sk-test", use_responses_api=False,
                  http_async_client=httpx2.AsyncClient(transport=httpx2.MockTransport(reply)))

async def main():
    with blockbuster_ctx():  # LangChain's own test harness: any blocking call raises
        middleware = CompactkitMiddleware("gpt-4o-mini", mode="compact", budget=1500)
        agent = create_agent(chat, tools=[read_file], middleware=[middleware])
        for question in ("first", "second"):
            state = await agent.ainvoke({"messages": [HumanMessage(question)]})
    print(state["messages"][-1].content)

asyncio.run(main())
"""


def test_a_middleware_built_inside_a_running_loop_never_blocks_it(tmp_path: Any) -> None:
    """In a fresh process (nothing loaded yet), building the middleware inside the event loop
    and running the agent there makes no blocking call (file reads of the profiles or the
    tokenizer's rank file, bundled or cached: the same load): the tokenizer loads in the worker
    thread that counts."""
    env = {**os.environ, "COMPACTKIT_CACHE_DIR": str(tmp_path)}
    command = [sys.executable, "-c", IN_A_RUNNING_LOOP]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "done"


class Answer(BaseModel):
    """The final answer about a module."""

    text: str = Field(
        description="The answer. "
        + " ".join(
            f"Rule {n}: name the module, the function and the value it computes, section {n}."
            for n in range(40)
        )
    )


class StructuredOpenAI(ScriptedOpenAI):
    """The same endpoint, answering an ``Answer``: through the structured-output tool LangChain
    binds for ``ToolStrategy(Answer)``, or as JSON content for ``ProviderStrategy(Answer)``."""

    def __init__(self, strategy: str) -> None:
        super().__init__()
        self._strategy = strategy

    def _reply(self, message: dict[str, Any], reason: str) -> httpx2.Response:
        if reason == "stop" and self.requests:
            arguments = json.dumps({"text": message["content"]})
            if self._strategy == "provider":
                message = {"role": "assistant", "content": arguments}
            else:
                call = {"id": f"answer_{len(self.requests)}", "type": "function"}
                call["function"] = {"name": "Answer", "arguments": arguments}  # type: ignore[assignment]
                message = {"role": "assistant", "content": None, "tool_calls": [call]}
                reason = "tool_calls"
        return super()._reply(message, reason)


@pytest.mark.parametrize("strategy", ["tool", "provider"])
def test_the_response_formats_schema_counts_in_the_budget(strategy: str) -> None:
    # LangChain binds a ToolStrategy's schema as a tool (a ProviderStrategy's as the provider's
    # response format) after the middleware saw the request: ~700 tokens the request carries.
    from langchain.agents.structured_output import ProviderStrategy, ToolStrategy

    server = StructuredOpenAI(strategy)
    response_format: Any = ToolStrategy(Answer) if strategy == "tool" else ProviderStrategy(Answer)
    agent = create_agent(
        llm(server),
        tools=[read_file],
        system_prompt="You answer questions about the repository. Be brief.",
        middleware=[CompactkitMiddleware(MODEL, budget=BUDGET)],
        checkpointer=InMemorySaver(),
        response_format=response_format,
    )
    run(agent)
    counter = counter_for(MODEL)
    for body in server.requests:
        tools = tools_from_chat(body.get("tools", []))
        schema = body.get("response_format", {}).get("json_schema")
        if schema:  # the provider's response format, counted as one function's schema
            tools.append(Tool(name=schema["name"], parameters=schema["schema"]))
        assert {t.name for t in tools} >= {"read_file", "Answer"}
        assert counter.count(chat_to_items(body["messages"]), tools=tools).tokens <= BUDGET
