"""The request contract (rows a-g, docs/agent.md), held by every entry point on every request.

One set of scenarios (``contract_scenarios.SCENARIOS``) is played against each entry point; the
scripted model (``Brain``) receives each request where it leaves compactkit's hands — the HTTP
body the ``openai`` SDK sent (``Agent``, the Agents SDK's ``Runner``, LangChain's
``ChatOpenAI``), the messages pydantic-ai's ``FunctionModel`` was called with, the prompt a
``Governor`` step or ``compact_messages`` handed back — and checks every row on it.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from contract_scenarios import (
    FAULT_SCENARIOS,
    INSTRUCTIONS,
    MODEL,
    SCENARIOS,
    TASK,
    Brain,
    Scenario,
    as_chat,
)
from contract_support import body_items
from runtime_support import NO_WAIT

from compactkit import Agent
from compactkit.compressors import DigestCompressor
from compactkit.compressors.summary import RetryPolicy, SummaryCompressor
from compactkit.errors import SummarizationError
from compactkit.formats.chat import chat_to_items, tools_from_chat, tools_to_chat
from compactkit.governance import is_budget_status
from compactkit.integrations import MessageCompactor, compact_messages
from compactkit.items import Tool
from compactkit.memory import InMemoryMemory
from compactkit.runtime.background import BackgroundCompaction
from compactkit.runtime.governor import Governor
from compactkit.sessions import FileSessionStore
from compactkit.testing import FakeOpenAI, FakeReply, FunctionLLM, block_network

READ = Tool(
    name="read",
    description="Read one part of the report.",
    parameters={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
)


VISIBLE: dict[str, Any] = {}
"""Options every entry point that offers it is built with (``budget_visible=True`` for the
budget-visible run of the contract; empty otherwise)."""


@pytest.fixture(autouse=True)
def _offline() -> Iterator[None]:
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    with block_network():
        yield


def summarizer(brain: Brain) -> SummaryCompressor | None:
    """For ``failing_summarizer``: an LLM summary that answers twice, then fails for good; for
    a ``fault``, the faulty summarizer (``faulty_summarizer``)."""
    if brain.scenario.fault is not None:
        return faulty_summarizer(brain, brain.scenario.fault)
    if not brain.scenario.failing_summarizer:
        return None

    def answer(messages: list[dict[str, str]]) -> str:
        brain.summarizer_calls += 1
        if brain.summarizer_calls > 2:
            raise TimeoutError("the summarizer timed out")
        return "## Current state\n- reading the report\n\n## Next steps\n- read the next part"

    from compactkit.budget import counter_for

    return SummaryCompressor(
        FunctionLLM(answer),
        target_tokens=2_500,
        counter=counter_for(MODEL),
        retry=RetryPolicy.never(),
    )


GOOD_ANSWER = "## Current state\n- reading the report\n\n## Next steps\n- read the next part"
ATTEMPTS = 3  # the retry policy's attempts per summarizer call
SMALL_WINDOW = 2_400


def faulty_summarizer(brain: Brain, fault: str) -> SummaryCompressor:
    """A summary compressor whose LLM misbehaves as ``fault`` says, the digest its fallback."""
    from compactkit.budget import counter_for

    def answer(messages: list[dict[str, str]]) -> str:
        brain.summarizer_calls += 1
        brain.summarizer_log.append(brain.requests)
        if fault == "bigger-than-its-source":
            lines = "\n".join(f"- decided step {n}: kept option {n} of many" for n in range(900))
            return f"## Decisions\n{lines}\n\n## Current state\n- reading the report"
        if fault == "empty":
            return ""
        if fault in ("refusal", "refusal-unreachable-fallback"):
            return "I'm sorry, but I can't help with that request."
        if fault == "ten-500s" and brain.summarizer_calls <= 10:
            raise SummarizationError("'summarizer' answered HTTP 500: error", transient=True)
        return GOOD_ANSWER

    counter = counter_for(MODEL)
    return SummaryCompressor(
        FunctionLLM(answer),
        target_tokens=2_500,
        counter=counter,
        summary_cap_tokens=400 if fault == "small-window" else None,
        summarizer_window_tokens=SMALL_WINDOW if fault == "small-window" else 32_000,
        retry=RetryPolicy(attempts=ATTEMPTS, initial_wait=0.0, jitter=0.0),
        fallback=(
            DigestCompressor(target_tokens=2_500, counter=counter)
            if fault == "refusal-unreachable-fallback"
            else DigestCompressor(keep_last_groups=2, counter=counter)
        ),
    )


def http_reply(brain: Brain) -> Callable[[dict[str, Any]], FakeReply]:
    def answer(body: dict[str, Any]) -> FakeReply:
        items, tools = body_items(body)
        reply = brain.reply(items, tools)
        calls = tuple((name, json.dumps(a), cid) for name, a, cid in reply.calls)
        return FakeReply(text=reply.text, calls=calls, prompt_tokens=-1)

    return answer


# -- the entry points -------------------------------------------------------------------------


def play_agent(brain: Brain, *, api: str, mode: str, tmp: Path) -> None:
    fake = FakeOpenAI(default=http_reply(brain), model=MODEL)

    def read(n: int) -> str:
        """Read one part of the report."""
        return brain.tool(n)

    store = FileSessionStore(tmp / "sessions")

    def agent() -> Agent:
        client = fake.client() if mode == "run" else fake.async_client()
        compressor = summarizer(brain)
        return Agent(
            MODEL,
            client,
            tools=[read],
            instructions=INSTRUCTIONS,
            api=api,  # type: ignore[arg-type]
            store=store,
            max_steps=100,
            retry=NO_WAIT,
            **({"compressor": compressor} if compressor else {}),
            **VISIBLE,
        )

    def run(session: Any, text: str) -> None:
        if mode == "run":
            session.run(text)
        else:
            asyncio.run(session.arun(text))

    session = agent().new_session()
    run(session, TASK)
    if brain.scenario.resumed:
        session = agent().resume(session.session_id)
    run(session, brain.second_input)


def play_governor(brain: Brain, *, mode: str, background: bool = False) -> None:
    compressor = summarizer(brain)
    governor = Governor.for_model(
        MODEL,
        **({"compressor": compressor} if compressor else {}),
        **({"background": BackgroundCompaction()} if background else {}),
        **VISIBLE,
    )
    memory = InMemoryMemory()
    for text in (TASK, brain.second_input):
        memory.add_user_input(text)
        while True:
            if mode == "step":
                step = governor.step(memory, instructions=INSTRUCTIONS, tools=[READ])
            else:
                step = asyncio.run(governor.astep(memory, instructions=INSTRUCTIONS, tools=[READ]))
            reply = brain.reply(step.items, [READ])
            memory.add_output_items([as_chat(reply)])
            if reply.text is not None:
                break
            for _, arguments, call_id in reply.calls:
                memory.add_tool_output(call_id, brain.tool(arguments["n"]))
        if brain.scenario.resumed:  # a new memory from the snapshot, as a store would give back
            restored = InMemoryMemory()
            restored.restore(memory.snapshot())
            memory = restored


def play_messages(brain: Brain, *, stateful: bool, background: bool = False) -> None:
    compressor = summarizer(brain)
    options: dict[str, Any] = {"compressor": compressor} if compressor else {}
    if background:
        options["background"] = BackgroundCompaction()
    compactor = MessageCompactor(MODEL, format="chat", **options) if stateful else None
    tools = tools_to_chat([READ])
    messages: list[dict[str, Any]] = [{"role": "system", "content": INSTRUCTIONS}]
    for text in (TASK, brain.second_input):
        messages.append({"role": "user", "content": text})
        while True:
            if compactor is not None:
                turn = compactor(messages, tools=tools)
            else:
                turn = compact_messages(
                    messages, model=MODEL, tools=tools, format="chat", **options
                )
            reply = brain.reply(chat_to_items(turn.send), tools_from_chat(tools))
            messages = [*turn.history, as_chat(reply)]
            if reply.text is not None:
                break
            for _, arguments, call_id in reply.calls:
                messages.append(
                    {"role": "tool", "tool_call_id": call_id, "content": brain.tool(arguments["n"])}
                )


def play_openai_agents(brain: Brain, *, hook: str, tmp: Path) -> None:
    from agents import Agent as SDKAgent
    from agents import OpenAIResponsesModel, RunConfig, Runner, SQLiteSession, function_tool

    from compactkit.integrations import CompactkitSession
    from compactkit.integrations.openai_agents import CompactkitInputFilter

    fake = FakeOpenAI(default=http_reply(brain), model=MODEL)

    @function_tool
    def read(n: int) -> str:
        """Read one part of the report."""
        return brain.tool(n)

    compressor = summarizer(brain)
    options: dict[str, Any] = {"compressor": compressor} if compressor else {}
    agent = SDKAgent(
        name="reader",
        instructions=INSTRUCTIONS,
        tools=[read],
        model=OpenAIResponsesModel(model=MODEL, openai_client=fake.async_client()),
    )
    path = str(tmp / "agents.db")

    def session() -> Any:
        return CompactkitSession(SQLiteSession("conversation", path), model=MODEL, **options)

    # The session bounds what is stored and read back; only the filter sees the instructions and
    # tool schemas of each call, so the budget of a request is the filter's (docs/openai-agents.md:
    # the two are used together). "filter" runs the filter alone over the SDK's own session.
    def wiring() -> tuple[Any, RunConfig]:
        if hook == "session":
            governed = session()
            return governed, RunConfig(call_model_input_filter=governed.input_filter())
        filter = CompactkitInputFilter(MODEL, **options, **VISIBLE)
        return SQLiteSession("conversation", path), RunConfig(call_model_input_filter=filter)

    current, config = wiring()
    for text in (TASK, brain.second_input):
        asyncio.run(Runner.run(agent, text, session=current, run_config=config, max_turns=100))
        if brain.scenario.resumed:  # a new process: new objects over the same store
            current, config = wiring()


def play_langchain(brain: Brain, *, mode: str, asynchronous: bool) -> None:
    import httpx2
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    from compactkit.integrations.langchain import CompactkitMiddleware

    fake = FakeOpenAI(default=http_reply(brain), model=MODEL)
    transport = httpx2.MockTransport(fake.handle)
    llm = ChatOpenAI(
        model=MODEL,
        api_key="sk-test",  # type: ignore[arg-type]
        use_responses_api=False,
        max_retries=0,
        http_client=httpx2.Client(transport=transport),
        http_async_client=httpx2.AsyncClient(transport=transport),
    )

    @tool
    def read(n: int) -> str:
        """Read one part of the report."""
        return brain.tool(n)

    compressor = summarizer(brain)
    options: dict[str, Any] = {"compressor": compressor} if compressor else {}
    agent = create_agent(
        llm,
        tools=[read],
        system_prompt=INSTRUCTIONS,
        middleware=[CompactkitMiddleware(MODEL, mode=mode, **options, **VISIBLE)],  # type: ignore[arg-type]
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 500}
    for text in (TASK, brain.second_input):
        state = {"messages": [HumanMessage(text)]}
        if asynchronous:
            asyncio.run(agent.ainvoke(state, config))  # type: ignore[arg-type]
        else:
            agent.invoke(state, config)  # type: ignore[arg-type]


def play_pydantic_ai(brain: Brain, *, mode: str, asynchronous: bool) -> None:
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    from compactkit.integrations._pydantic_ai_convert import to_items, to_tools
    from compactkit.integrations.pydantic_ai import CompactkitCapability
    from compactkit.items import Message
    from compactkit.items.snapshot import summary_message

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        items: list[Any] = [Message(role="system", content=info.instructions or "")]
        for message in messages:
            for entry in (lambda c: [c] if isinstance(c, str) else c)(to_items(message, [].append)):
                items.append(summary_message(entry) if isinstance(entry, str) else entry)
        reply = brain.reply(items, to_tools(info.function_tools))
        if reply.text is not None:
            return ModelResponse(parts=[TextPart(reply.text)])
        return ModelResponse(
            parts=[ToolCallPart(name, a, tool_call_id=cid) for name, a, cid in reply.calls]
        )

    compressor = summarizer(brain)
    options: dict[str, Any] = {"compressor": compressor} if compressor else {}
    agent: PydanticAgent[None, str] = PydanticAgent(
        FunctionModel(model, model_name=MODEL),
        instructions=INSTRUCTIONS,
        capabilities=[CompactkitCapability(MODEL, mode=mode, **options, **VISIBLE)],  # type: ignore[arg-type]
    )

    @agent.tool_plain
    def read(n: int) -> str:
        """Read one part of the report."""
        return brain.tool(n)

    limits = UsageLimits(request_limit=200)
    history: list[Any] = []
    for text in (TASK, brain.second_input):
        if asynchronous:
            loop = asyncio.new_event_loop()
            try:
                result = loop.run_until_complete(
                    agent.run(text, message_history=history, usage_limits=limits)
                )
            finally:
                loop.close()
        else:
            result = agent.run_sync(text, message_history=history, usage_limits=limits)
        history = result.all_messages()


ENTRY_POINTS: dict[str, Callable[[Brain, Path], None]] = {
    "Agent chat run": lambda b, t: play_agent(b, api="chat", mode="run", tmp=t),
    "Agent chat arun": lambda b, t: play_agent(b, api="chat", mode="arun", tmp=t),
    "Agent responses run": lambda b, t: play_agent(b, api="responses", mode="run", tmp=t),
    "Agent responses arun": lambda b, t: play_agent(b, api="responses", mode="arun", tmp=t),
    "Governor.step": lambda b, t: play_governor(b, mode="step"),
    "Governor.astep": lambda b, t: play_governor(b, mode="astep"),
    "compact_messages": lambda b, t: play_messages(b, stateful=False),
    "MessageCompactor": lambda b, t: play_messages(b, stateful=True),
    "MessageCompactor background": lambda b, t: play_messages(b, stateful=True, background=True),
    "Agents SDK session + filter": lambda b, t: play_openai_agents(b, hook="session", tmp=t),
    "Agents SDK input filter": lambda b, t: play_openai_agents(b, hook="filter", tmp=t),
    "LangChain project invoke": lambda b, t: play_langchain(b, mode="project", asynchronous=False),
    "LangChain project ainvoke": lambda b, t: play_langchain(b, mode="project", asynchronous=True),
    "LangChain compact invoke": lambda b, t: play_langchain(b, mode="compact", asynchronous=False),
    "LangChain compact ainvoke": lambda b, t: play_langchain(b, mode="compact", asynchronous=True),
    "pydantic-ai project run_sync": lambda b, t: play_pydantic_ai(
        b, mode="project", asynchronous=False
    ),
    "pydantic-ai project run": lambda b, t: play_pydantic_ai(b, mode="project", asynchronous=True),
    "pydantic-ai compact run_sync": lambda b, t: play_pydantic_ai(
        b, mode="compact", asynchronous=False
    ),
    "pydantic-ai compact run": lambda b, t: play_pydantic_ai(b, mode="compact", asynchronous=True),
}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_request_keeps_the_contract(entry: str, scenario: Scenario, tmp_path: Path) -> None:
    brain = Brain(scenario)
    brain.where = entry
    ENTRY_POINTS[entry](brain, tmp_path)
    brain.done()


@pytest.mark.parametrize("scenario", FAULT_SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_a_faulty_summarizer_never_breaks_progress(
    entry: str, scenario: Scenario, tmp_path: Path
) -> None:
    """Guaranteed progress (issue 29): whatever the summarizer does, every request keeps the
    contract (under budget, nothing lost, the rules and the task present), the run finishes,
    and no governance step calls the summarizer more than its retries and chunks allow."""
    brain = Brain(scenario)
    brain.where = entry
    ENTRY_POINTS[entry](brain, tmp_path)
    brain.done()
    assert brain.summarizer_calls > 0, f"{entry}: the summarizer was never asked"
    per_step = max(Counter(brain.summarizer_log).values())
    # one chunk per call but for the small window; never a loop of attempts
    chunks = 12 if scenario.fault == "small-window" else 1
    # a background entry may finish a compaction off the hot path and run one in the step
    compactions = 2 if "background" in entry else 1
    assert per_step <= ATTEMPTS * chunks * compactions, f"{entry}: {per_step} calls in a step"
    if scenario.fault == "ten-500s":  # the breaker opens after 5 failed requests in a row
        assert brain.summarizer_calls <= 5, f"{entry}: {brain.summarizer_calls} calls"


VISIBLE_ENTRY_POINTS = [
    "Agent chat run",
    "Agent responses arun",
    "Governor.step",
    "Agents SDK input filter",
    "LangChain project invoke",
    "LangChain compact ainvoke",
    "pydantic-ai project run_sync",
    "pydantic-ai compact run",
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("entry", VISIBLE_ENTRY_POINTS)
def test_every_request_keeps_the_contract_with_the_budget_visible(
    entry: str, scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``budget_visible=True`` (issue 29): every request ends with the status line and still
    keeps every row, the line's tokens counted in the budget (row a)."""
    monkeypatch.setitem(VISIBLE, "budget_visible", True)
    brain = Brain(scenario)
    brain.where = entry
    reply = brain.reply

    def checked(items: Any, tools: Any = ()) -> Any:
        listed = list(items)
        assert is_budget_status(listed[-1]), f"{entry}: request ends with {listed[-1]!r:.120}"
        return reply(listed, tools)

    brain.reply = checked  # type: ignore[method-assign]
    ENTRY_POINTS[entry](brain, tmp_path)
    brain.done()
