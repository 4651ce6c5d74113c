"""CompactkitCapability and CompactkitHistory inside real pydantic-ai agents (FunctionModel and
TestModel: what the function receives is exactly what a provider would be sent)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import UsageLimits

from compactkit import BudgetError, ConfigError, Message, counter_for
from compactkit.integrations._pydantic_ai_convert import to_items, to_tools
from compactkit.integrations.pydantic_ai import CompactkitCapability, CompactkitHistory
from compactkit.runtime.events import CompactionEvent, Event, PassthroughEvent
from compactkit.testing import block_network

MODEL = "gpt-4o-mini"
BUDGET = 2500
CALLS_PER_QUESTION = 3
QUESTIONS = [f"question {n}: what does module {n} compute?" for n in range(5)]


@pytest.fixture(autouse=True)
def _no_network() -> Any:
    with block_network():
        yield


@pytest.fixture(autouse=True)
def _event_loop() -> Any:
    # run_sync runs on the thread's event loop and leaves it open; give it one we close.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


def arun(coroutine: Any) -> Any:
    """Run a coroutine on a loop of its own, leaving the thread's event loop alone (pydantic-ai's
    ``run_sync`` keeps one per thread; ``asyncio.run`` would orphan it)."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


class Script:
    """Per user question, CALLS_PER_QUESTION tool calls then an answer; records what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[ModelMessage], AgentInfo]] = []
        self._calls: dict[str, int] = {}

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append((list(messages), info))
        prompts = [
            p.content
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, UserPromptPart) and isinstance(p.content, str)
        ]
        question = prompts[-1]
        done = self._calls.get(question, 0)
        self._calls[question] = done + 1
        if done < CALLS_PER_QUESTION:
            path = f"src/module_{len(self.seen)}.py"
            call = ToolCallPart("read_file", {"path": path}, tool_call_id=f"call_{done}")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart(f"answered {question}")])

    def prompt_tokens(self) -> list[int]:
        """Every request as compactkit counts it: instructions, messages, tool schemas."""
        counter = counter_for(MODEL)
        out = []
        for messages, info in self.seen:
            items: list[Any] = [Message(role="system", content=info.instructions or "")]
            for message in messages:
                items.extend(e for e in to_items(message, [].append) if not isinstance(e, str))
            tools = to_tools(info.function_tools)
            out.append(counter.count(items, tools=tools).tokens)
        return out

    def assert_pairs_intact(self) -> None:
        """Every ToolReturnPart the model was sent answers a ToolCallPart it was sent."""
        for messages, _ in self.seen:
            calls: set[str] = set()
            for message in messages:
                for part in message.parts:
                    if isinstance(part, ToolCallPart):
                        calls.add(part.tool_call_id)
                    elif isinstance(part, ToolReturnPart):
                        assert part.tool_call_id in calls


def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"# {path}\n" + "\n".join(f"line {n}: value = {n * 7}" for n in range(60))


def make_agent(script: Script, capabilities: list[Any]) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        FunctionModel(script),
        instructions="You answer questions about the repository. Be brief.",
        capabilities=capabilities,
    )
    agent.tool_plain(read_file)
    return agent


def search_docs(query: str) -> str:
    return "nothing found"


search_docs.__doc__ = "Search the project's documentation. " + " ".join(
    f"Rule {n}: the query must name a module, a function or a concept of section {n}."
    for n in range(40)
)


def run(agent: Agent[None, str], *, asynchronous: bool = False) -> list[list[ModelMessage]]:
    histories: list[list[ModelMessage]] = []
    history: list[ModelMessage] = []
    for question in QUESTIONS:
        if asynchronous:
            result = arun(agent.run(question, message_history=history))
        else:
            result = agent.run_sync(question, message_history=history)
        assert result.output == f"answered {question}"
        history = result.all_messages()
        histories.append(history)
    return histories


def test_without_governance_the_loop_overflows_the_budget() -> None:
    script = Script()
    run(make_agent(script, []))
    assert max(script.prompt_tokens()) > BUDGET


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run_sync", "run"])
def test_project_mode_keeps_every_request_under_budget_and_the_history_whole(
    asynchronous: bool,
) -> None:
    script = Script()
    capability = CompactkitCapability(MODEL, budget=BUDGET)
    histories = run(make_agent(script, [capability]), asynchronous=asynchronous)
    assert max(script.prompt_tokens()) <= BUDGET
    script.assert_pairs_intact()
    per_question = 2 + 2 * CALLS_PER_QUESTION
    assert [len(h) for h in histories] == [per_question * n for n in range(1, 6)]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["run_sync", "run"])
def test_compact_mode_rewrites_the_history_with_a_marked_summary(asynchronous: bool) -> None:
    script = Script()
    events: list[Event] = []
    capability = CompactkitCapability(MODEL, mode="compact", budget=BUDGET, on_event=events.append)
    histories = run(make_agent(script, [capability]), asynchronous=asynchronous)
    assert max(script.prompt_tokens()) <= BUDGET
    script.assert_pairs_intact()
    assert any(isinstance(e, CompactionEvent) and e.applied for e in events)
    final = histories[-1]
    assert len(final) < (2 + 2 * CALLS_PER_QUESTION) * len(QUESTIONS)
    first = final[0]
    assert isinstance(first, ModelRequest) and first.metadata is not None
    assert "src/module_1.py" in first.metadata["compactkit_summary"]  # facts kept
    # ...with no provenance references: the mirror's seqs are renumbered by the next reader
    assert "[#" not in first.metadata["compactkit_summary"]
    # No return in the history lost its call either.
    calls = {p.tool_call_id for m in final for p in m.parts if isinstance(p, ToolCallPart)}
    returns = {p.tool_call_id for m in final for p in m.parts if isinstance(p, ToolReturnPart)}
    assert returns <= calls


@pytest.mark.parametrize("asynchronous", [False, True], ids=["process", "aprocess"])
def test_the_history_processor_form_governs_through_process_history(asynchronous: bool) -> None:
    script = Script()
    history = CompactkitHistory(MODEL, mode="compact", budget=BUDGET)
    processor = history.aprocess if asynchronous else history.process
    histories = run(make_agent(script, [ProcessHistory(processor)]), asynchronous=asynchronous)
    assert max(script.prompt_tokens()) <= BUDGET + 400  # the processor cannot see tool schemas
    script.assert_pairs_intact()
    assert len(histories[-1]) < (2 + 2 * CALLS_PER_QUESTION) * len(QUESTIONS)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_processor_taking_the_run_context_keeps_every_request_with_its_tools_in_budget(
    asynchronous: bool,
) -> None:
    # The agent also has a tool with a long schema (~700 tokens: the plain processor, which
    # cannot see it, sends requests up to ~2,700 tokens of a 2,500 budget in this loop).
    # Taking the run's context, the processor counts the step's tools, so every request as a
    # provider would receive it (instructions, messages, tool schemas) fits the budget.
    script = Script()
    history = CompactkitHistory(MODEL, mode="compact", budget=BUDGET)
    processor = history.aprocess_with_context if asynchronous else history.process_with_context
    agent = make_agent(script, [ProcessHistory(processor)])
    agent.tool_plain(search_docs)
    histories = run(agent, asynchronous=asynchronous)
    assert max(script.prompt_tokens()) <= BUDGET
    script.assert_pairs_intact()
    assert len(histories[-1]) < (2 + 2 * CALLS_PER_QUESTION) * len(QUESTIONS)


def test_with_test_model_a_small_conversation_runs_exactly_as_without_compactkit() -> None:
    def conversation(capabilities: list[Any]) -> list[tuple[str, ...]]:
        agent: Agent[None, str] = Agent(TestModel(), capabilities=capabilities)
        agent.tool_plain(read_file)
        history: list[ModelMessage] = []
        for question in QUESTIONS:
            history = agent.run_sync(question, message_history=history).all_messages()
        return [tuple(type(p).__name__ for p in m.parts) for m in history]

    assert conversation([CompactkitCapability(MODEL)]) == conversation([])


def read_once(path: str) -> Any:
    """A model that reads ``path`` and answers as soon as it sees the file's contents."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        if isinstance(last, ModelRequest) and any(
            isinstance(p, ToolReturnPart) for p in last.parts
        ):
            return ModelResponse(parts=[TextPart("read it")])
        return ModelResponse(parts=[ToolCallPart("read_file", {"path": path})])

    return model


def test_the_tool_return_loop_pitfall_cannot_happen() -> None:
    # A processor that keeps only the last message orphans the return; pydantic-ai drops it, the
    # model never sees the result and calls again until the request limit.
    def keep_last(messages: list[ModelMessage]) -> list[ModelMessage]:
        return messages[-1:]

    limits = UsageLimits(request_limit=6)
    naive: Agent[None, str] = Agent(
        FunctionModel(read_once("a.py")), capabilities=[ProcessHistory(keep_last)]
    )
    naive.tool_plain(read_file)
    with pytest.raises(UsageLimitExceeded):
        naive.run_sync("read a.py", usage_limits=limits)

    capability = CompactkitCapability(MODEL, budget=BUDGET)
    governed: Agent[None, str] = Agent(FunctionModel(read_once("a.py")), capabilities=[capability])
    governed.tool_plain(read_file)
    assert governed.run_sync("read a.py", usage_limits=limits).output == "read it"

    # And when the newest call and its return cannot fit even masked, it says so at once.
    huge = " ".join(f"w{n}" for n in range(1500))
    stuck: Agent[None, str] = Agent(FunctionModel(read_once(huge)), capabilities=[capability])
    stuck.tool_plain(read_file)
    with pytest.raises(BudgetError, match="newest group"):
        stuck.run_sync("read it", usage_limits=limits)


def test_a_part_kind_compactkit_does_not_model_passes_through_with_a_warning() -> None:
    script = Script()
    events: list[Event] = []
    agent = make_agent(script, [CompactkitCapability(MODEL, budget=BUDGET, on_event=events.append)])
    odd = ModelResponse(parts=[TextPart("earlier"), CompactionPart(content="provider state")])
    prior: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("hello")]), odd]
    agent.run_sync(QUESTIONS[0], message_history=prior)
    # CompactionPart is a response part compactkit carries (counted by size): no warning...
    assert not [e for e in events if isinstance(e, PassthroughEvent)]
    odd_request = ModelRequest(parts=[CompactionPart(content="provider state")])
    agent.run_sync(QUESTIONS[1], message_history=[*prior, odd_request])
    # ...but as a request part it is unknown: passed through with a warning, never dropped.
    warnings = [e for e in events if isinstance(e, PassthroughEvent)]
    assert (
        warnings and warnings[0].format == "pydantic_ai" and "CompactionPart" in warnings[0].reason
    )
    assert all(
        any(isinstance(p, CompactionPart) for m in seen for p in m.parts) for seen, _ in script.seen
    )


def test_options_that_contradict_each_other_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="mode must be"):
        CompactkitCapability(MODEL, mode="trim")
    with pytest.raises(ConfigError, match="compressor must have compress"):
        CompactkitHistory(MODEL, compressor=object())  # type: ignore[arg-type]


def test_importing_without_the_extra_names_the_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "pydantic_ai", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "compactkit.integrations.pydantic_ai", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'compactkit\[pydantic-ai\]'"):
        importlib.import_module("compactkit.integrations.pydantic_ai")


def test_run_stream_is_governed_too() -> None:
    from pydantic_ai.models.function import DeltaToolCall

    seen: list[list[ModelMessage]] = []

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> Any:
        seen.append(list(messages))
        if not any(isinstance(p, ToolReturnPart) for p in messages[-1].parts):
            yield {0: DeltaToolCall(name="read_file", json_args='{"path": "a.py"}')}
        else:
            yield "read "
            yield "it"

    events: list[Event] = []
    capability = CompactkitCapability(MODEL, budget=BUDGET, on_event=events.append)
    agent: Agent[None, str] = Agent(
        FunctionModel(stream_function=stream), capabilities=[capability]
    )
    agent.tool_plain(read_file)

    async def main() -> str:
        async with agent.run_stream("read a.py") as result:
            return await result.get_output()

    assert arun(main()) == "read it"
    assert len(seen) == 2
    assert sum(e.kind == "projection" for e in events) == 2  # both requests went through it


def test_a_new_process_continues_a_compacted_history() -> None:
    # The history is stored (JSON) and loaded by another process sharing the summary key
    # (COMPACTKIT_SUMMARY_KEY): a fresh capability reads the summary back and merges the next
    # compaction into it. (pydantic-ai merges the summary's request into the next one at the
    # start of a run and drops its metadata, so the seal is what finds it there.)
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    from compactkit.items import set_summary_key

    script = Script()
    set_summary_key("the deployment's shared secret")
    try:
        first = make_agent(script, [CompactkitCapability(MODEL, mode="compact", budget=BUDGET)])
        history: list[ModelMessage] = []
        for question in QUESTIONS[:3]:
            history = first.run_sync(question, message_history=history).all_messages()
        stored = ModelMessagesTypeAdapter.dump_json(history)

        loaded = ModelMessagesTypeAdapter.validate_json(stored)
        capability = CompactkitCapability(MODEL, mode="compact", budget=BUDGET)
        result = make_agent(script, [capability]).run_sync(QUESTIONS[3], message_history=loaded)
    finally:
        set_summary_key(None)
    assert result.output == f"answered {QUESTIONS[3]}"
    summary = result.all_messages()[0].metadata["compactkit_summary"]  # type: ignore[index]
    assert "question 0" in summary and "src/module_1.py" in summary  # the old summary, merged
    assert "<compactkit_summary" not in summary  # ...not folded as if it were a user turn
    assert max(script.prompt_tokens()) <= BUDGET


def test_a_plain_function_is_the_compressor_of_a_capability() -> None:
    def keep_the_last_question(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        starts = [i for i, m in enumerate(messages) if m["role"] == "user"]
        return messages[starts[-1] :]

    script = Script()
    events: list[Event] = []
    capability = CompactkitCapability(
        MODEL,
        mode="compact",
        budget=BUDGET,
        compressor=keep_the_last_question,
        on_event=events.append,
    )
    run(make_agent(script, [capability]))
    script.assert_pairs_intact()
    assert any(
        isinstance(e, CompactionEvent) and e.applied and e.compressor == "keep_the_last_question"
        for e in events
    )
    last_request, _ = script.seen[-1]
    prompts = [
        p.content
        for m in last_request
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart)
    ]
    assert prompts[-1] == QUESTIONS[-1]
    assert QUESTIONS[0] not in prompts
