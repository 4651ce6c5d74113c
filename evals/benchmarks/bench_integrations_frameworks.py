"""Benchmark: compactkit inside LangChain and pydantic-ai agents, against their own mechanisms.

1. One long tool loop that overflows without governance: a research agent answering questions
   by reading files (every read returns ~800 tokens holding the file's path and a checksum, the
   facts a later question may need) on an 8k model (gpt-4's profile: 6,021 usable input tokens).
   - LangChain: the same scripted ``ChatOpenAI`` (Chat Completions over a mocked transport)
     inside ``create_agent`` with a checkpointer, with no middleware, ``SummarizationMiddleware``
     (trigger at 80 % of the budget, its default ``keep=("messages", 20)``), ``ContextEditingMiddleware``
     (``ClearToolUsesEdit`` at 80 %, keep 3) and ``CompactkitMiddleware`` (project, compact).
     The summarizer both ``SummarizationMiddleware`` and compactkit's ``SummaryCompressor``
     (through ``LangChainLLM``) call is the same best-case stand-in: it writes every path and
     checksum it is shown into its summary, so what a summary loses is what the middleware
     never showed its summarizer (or dropped from the answer).
   - pydantic-ai: the same script as a ``FunctionModel``, with no capability, the
     "keep the last N messages" processor (``ProcessHistory``) users write, and
     ``CompactkitCapability`` (project, compact).
   Per strategy: model calls, prompts over budget (counted by compactkit exactly, tool schemas and
   system prompt included), tool-pair splits (a call without its result or the reverse in one
   prompt), summarizer calls, and facts kept (paths and checksums read earlier that the last
   prompt still holds).
2. Per-call overhead at 100 / 1,000 / 10,000 messages (a history growing by one message per
   call, median): ``CompactkitMiddleware.wrap_model_call`` against ``ContextEditingMiddleware``
   and ``SummarizationMiddleware``'s per-call check (triggers out of reach, so only their counting
   runs), and ``CompactkitCapability``'s step. compactkit converts and counts only what was
   appended (and converts back only the new tail of a prompt that extends the previous one), so
   its cost stays nearly flat as the history grows, on the 117k model (where the prompt window
   grows with the history) as on the 8k model (a fixed window).
3. Lines a user adds to an existing agent.

Run: ``python evals/benchmarks/bench_integrations_frameworks.py`` (``--tiny`` for CI's smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
from langchain.agents import create_agent
from langchain.agents.middleware import (
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    SummarizationMiddleware,
)
from langchain.agents.middleware.types import ModelRequest as LCRequest
from langchain.agents.middleware.types import ModelResponse as LCResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.exceptions import UsageLimitExceeded
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import UsageLimits

from compactkit import Message, SummaryCompressor, chat_to_items, counter_for
from compactkit.budget import budget_for
from compactkit.formats import tools_from_chat
from compactkit.integrations._pydantic_ai_convert import to_items, to_tools
from compactkit.integrations.langchain import CompactkitMiddleware, LangChainLLM
from compactkit.integrations.pydantic_ai import CompactkitCapability, CompactkitHistory

LOOP_MODEL = "gpt-4"  # 6,021 usable input tokens
SCALE_MODEL = "gpt-4o-mini"  # 117,411 usable input tokens
SYSTEM = "You are a research agent. Answer questions about the repository by reading files."
PATH = re.compile(r"src/part_\d+\.py")
CHECKSUM = re.compile(r"checksum [0-9a-f]{12}")


@dataclass
class Workload:
    questions: int
    reads: int  # tool calls per question
    lines: int  # lines per file read


def checksum(path: str) -> str:
    return f"checksum {hashlib.sha256(path.encode()).hexdigest()[:12]}"


def file_text(path: str, lines: int) -> str:
    body = "\n".join(f"def f{k}(x): return x * {k} + {len(path)}" for k in range(lines))
    return f"# {path} ({checksum(path)})\n{body}"


# -- the scripted model: the same decisions for every strategy ---------------------------------


class Script:
    """Per question, ``reads`` tool calls then an answer, whatever the prompt kept."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.calls: dict[str, int] = {}
        self.paths: list[str] = []

    def decide(self, question: str) -> str | None:
        """The path to read next for ``question``, or ``None`` to answer."""
        done = self.calls.get(question, 0)
        self.calls[question] = done + 1
        if done >= self.workload.reads:
            return None
        path = f"src/part_{len(self.paths) + 1}.py"
        self.paths.append(path)
        return path


@dataclass
class Tally:
    """What one strategy's run did, per model call."""

    calls: int = 0
    no_task: int = 0
    over: int = 0
    splits: int = 0
    max_tokens: int = 0
    summarizer_calls: int = 0
    paths: float = 0.0
    checksums: float = 0.0
    failed: str = ""
    notes: list[str] = field(default_factory=list)

    def row(self) -> str:
        facts = (
            f"{self.paths:>5.0%} {self.checksums:>9.0%}" if not self.failed else "    -         -"
        )
        return (
            f"{self.calls:>5} {self.no_task:>7} {self.over:>9} {self.splits:>11} {self.max_tokens:>10,} "
            f"{self.summarizer_calls:>10} {facts}  {self.failed}"
        )


def facts(text: str, script: Script) -> tuple[float, float]:
    """Of the files read before the last question: the share of paths and of checksums that
    ``text`` (the last prompt) still holds."""
    read = script.paths[: -script.workload.reads] or script.paths
    kept_paths = sum(1 for path in read if path in text) / max(1, len(read))
    kept_sums = sum(1 for path in read if checksum(path) in text) / max(1, len(read))
    return kept_paths, kept_sums


# -- 1a. LangChain ------------------------------------------------------------------------------


def chat_pairs_split(messages: list[dict[str, Any]]) -> bool:
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            if message.get("tool_call_id") not in open_calls:
                return True
            open_calls.discard(message["tool_call_id"])
            continue
        if open_calls:
            return True
        open_calls = {call["id"] for call in message.get("tool_calls") or []}
    return bool(open_calls)


def langchain_run(workload: Workload, middleware: Callable[[ChatOpenAI], list[Any]]) -> Tally:
    script = Script(workload)
    tally = Tally()
    budget = budget_for(LOOP_MODEL).usable_input
    counter = counter_for(LOOP_MODEL)
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        messages = body["messages"]
        if "tools" not in body:  # a summarizer, either middleware's: the best case
            tally.summarizer_calls += 1
            shown = "\n".join(str(m.get("content")) for m in messages)
            return completion({"role": "assistant", "content": best_case_summary(shown)})
        bodies.append(body)
        asked = [m["content"] for m in messages if m["role"] == "user"]
        question = str(asked[-1]) if asked else ""
        if not question.startswith("question"):
            tally.no_task += 1  # the prompt lost the question: the model can only give up
            return completion({"role": "assistant", "content": "I do not know what was asked."})
        path = script.decide(question)
        if path is None:
            return completion({"role": "assistant", "content": f"answered {question}"})
        call = {
            "id": f"call_{len(bodies)}",
            "type": "function",
            "function": {"name": "read_file", "arguments": json.dumps({"path": path})},
        }
        return completion({"role": "assistant", "content": None, "tool_calls": [call]})

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return file_text(path, workload.lines)

    llm = ChatOpenAI(
        model=LOOP_MODEL,
        api_key="sk-test",  # type: ignore[arg-type]
        use_responses_api=False,
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    agent = create_agent(
        llm,
        tools=[read_file],
        system_prompt=SYSTEM,
        middleware=middleware(llm),
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 200}
    try:
        for n in range(workload.questions):
            agent.invoke(
                {"messages": [HumanMessage(f"question {n}: what does part {n} do?")]}, config
            )
    except Exception as exc:  # a strategy that breaks the run is a result, not a crash
        tally.failed = f"{type(exc).__name__}: {str(exc)[:60]}"
    for body in bodies:
        tokens = counter.count(
            chat_to_items(body["messages"]), tools=tools_from_chat(body["tools"])
        ).tokens
        tally.calls += 1
        tally.over += tokens > budget
        tally.splits += chat_pairs_split(body["messages"])
        tally.max_tokens = max(tally.max_tokens, tokens)
    if bodies:
        last = json.dumps(bodies[-1]["messages"])
        tally.paths, tally.checksums = facts(last, script)
    return tally


def best_case_summary(shown: str) -> str:
    """What a perfect summarizer writes: every path and checksum it was shown, nothing lost."""
    paths = sorted(set(PATH.findall(shown)), key=lambda p: int(p.split("_")[1].split(".")[0]))
    sums = sorted(set(CHECKSUM.findall(shown)))
    files = "\n".join(f"- `{path}` — read" for path in paths)
    ids = "\n".join(f"- `{value}`" for value in sums)
    return f"## Files read\n{files or '- none'}\n\n## Identifiers\n{ids or '- none'}"


def completion(message: dict[str, Any]) -> httpx2.Response:
    reason = "tool_calls" if message.get("tool_calls") else "stop"
    return httpx2.Response(
        200,
        json={
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 1,
            "model": LOOP_MODEL,
            "choices": [{"index": 0, "finish_reason": reason, "message": message}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    )


def langchain_strategies() -> dict[str, Callable[[ChatOpenAI], list[Any]]]:
    budget = budget_for(LOOP_MODEL).usable_input
    trigger = int(budget * 0.8)
    return {
        "no middleware": lambda llm: [],
        "SummarizationMiddleware": lambda llm: [
            SummarizationMiddleware(llm, trigger=("tokens", trigger))
        ],
        "SummarizationMiddleware (keep 50% tokens)": lambda llm: [
            SummarizationMiddleware(llm, trigger=("tokens", trigger), keep=("tokens", budget // 2))
        ],
        "ContextEditingMiddleware": lambda llm: [
            ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=trigger, keep=3)])
        ],
        "CompactkitMiddleware (project)": lambda llm: [CompactkitMiddleware(LOOP_MODEL)],
        "CompactkitMiddleware (compact)": lambda llm: [
            CompactkitMiddleware(LOOP_MODEL, mode="compact")
        ],
        "CompactkitMiddleware (compact, LLM summary)": lambda llm: [
            CompactkitMiddleware(
                LOOP_MODEL,
                mode="compact",
                compressor=SummaryCompressor(
                    LangChainLLM(llm), target_tokens=budget_for(LOOP_MODEL).target_tokens
                ),
            )
        ],
    }


# -- 1b. pydantic-ai ----------------------------------------------------------------------------


def pydantic_ai_run(workload: Workload, capabilities: list[Any]) -> Tally:
    script = Script(workload)
    tally = Tally()
    SUMMARIZER[0] = 0
    budget = budget_for(LOOP_MODEL).usable_input
    counter = counter_for(LOOP_MODEL)
    seen: list[tuple[list[ModelMessage], AgentInfo]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append((list(messages), info))
        prompts = [
            p.content
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, UserPromptPart)
        ]
        if not prompts or not str(prompts[-1]).startswith("question"):
            tally.no_task += 1  # the prompt lost the question: the model can only give up
            return ModelResponse(parts=[TextPart("I do not know what was asked.")])
        path = script.decide(str(prompts[-1]))
        if path is None:
            return ModelResponse(parts=[TextPart(f"answered {prompts[-1]}")])
        return ModelResponse(parts=[ToolCallPart("read_file", {"path": path})])

    agent: Agent[None, str] = Agent(
        FunctionModel(model), instructions=SYSTEM, capabilities=capabilities
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return file_text(path, workload.lines)

    history: list[ModelMessage] = []
    limits = UsageLimits(request_limit=4 * (workload.reads + 1))
    loop = asyncio.new_event_loop()
    try:
        for n in range(workload.questions):
            run = agent.run(
                f"question {n}: what does part {n} do?",
                message_history=history,
                usage_limits=limits,
            )
            history = loop.run_until_complete(run).all_messages()
    except UsageLimitExceeded:
        tally.failed = "UsageLimitExceeded (the tool-return loop)"
    finally:
        loop.close()
    for messages, info in seen:
        items: list[Any] = [Message(role="system", content=info.instructions or "")]
        for message in messages:
            items.extend(e for e in to_items(message, [].append) if not isinstance(e, str))
        tokens = counter.count(items, tools=to_tools(info.function_tools)).tokens
        tally.calls += 1
        tally.over += tokens > budget
        tally.splits += _parts_split(messages)
        tally.max_tokens = max(tally.max_tokens, tokens)
    tally.summarizer_calls = SUMMARIZER[0]
    if seen and not tally.failed:
        text = repr(seen[-1][0])
        tally.paths, tally.checksums = facts(text, script)
    return tally


def _parts_split(messages: list[ModelMessage]) -> bool:
    calls: set[str] = set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                calls.add(part.tool_call_id)
            elif isinstance(part, ToolReturnPart) and part.tool_call_id not in calls:
                return True
    return False


def keep_last(n: int) -> Callable[[list[ModelMessage]], list[ModelMessage]]:
    def processor(messages: list[ModelMessage]) -> list[ModelMessage]:
        return messages[-n:]

    return processor


def pydantic_ai_strategies() -> dict[str, Callable[[], list[Any]]]:
    return {
        "no capability": lambda: [],
        "ProcessHistory(keep last 6 messages)": lambda: [ProcessHistory(keep_last(6))],
        "CompactkitCapability (project)": lambda: [CompactkitCapability(LOOP_MODEL)],
        "CompactkitCapability (compact)": lambda: [
            CompactkitCapability(LOOP_MODEL, mode="compact")
        ],
        "CompactkitCapability (compact, LLM summary)": lambda: [
            CompactkitCapability(
                LOOP_MODEL,
                mode="compact",
                compressor=SummaryCompressor(
                    CountingLLM(), target_tokens=budget_for(LOOP_MODEL).target_tokens
                ),
            )
        ],
    }


class CountingLLM:
    """The best-case summarizer as a compactkit ``LLM``; counts its calls into ``SUMMARIZER``."""

    def complete(self, messages: Any) -> str:
        SUMMARIZER[0] += 1
        return best_case_summary("\n".join(str(m["content"]) for m in messages))

    async def acomplete(self, messages: Any) -> str:
        return self.complete(messages)


SUMMARIZER = [0]


# -- 2. per-call overhead -----------------------------------------------------------------------


def langchain_history(n: int) -> list[Any]:
    out: list[Any] = []
    turn = 0
    while len(out) < n:
        call = f"call_{turn}"
        out += [
            HumanMessage(f"step {turn}: what does part {turn} do?", id=f"h{turn}"),
            AIMessage(
                "",
                tool_calls=[{"name": "read_file", "args": {"path": f"p{turn}.py"}, "id": call}],
                id=f"a{turn}",
            ),
            ToolMessage(file_text(f"p{turn}.py", 8), tool_call_id=call, id=f"t{turn}"),
            AIMessage(f"part {turn} multiplies", id=f"b{turn}"),
        ]
        turn += 1
    return out[:n]


def langchain_overhead(n: int, calls: int, model: str = SCALE_MODEL) -> dict[str, float]:
    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return path

    llm = ChatOpenAI(model=model, api_key="sk-test")  # type: ignore[arg-type]
    system = SystemMessage(SYSTEM)
    base = langchain_history(n)
    extra = [HumanMessage(f"and step {k}?", id=f"x{k}") for k in range(calls)]
    reply = LCResponse(result=[AIMessage("ok")])
    results: dict[str, float] = {}

    def timed(step: Callable[[list[Any]], object]) -> float:
        messages = list(base)
        step(messages)  # the first call reads the whole history: not timed
        times = []
        for message in extra:
            messages = [*messages, message]
            start = time.perf_counter()
            step(messages)
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    def wrapper(middleware: Any) -> Callable[[list[Any]], object]:
        def step(messages: list[Any]) -> object:
            request = LCRequest(
                model=llm,
                messages=messages,
                system_message=system,
                tool_choice=None,
                tools=[read_file],
                response_format=None,
                state={"messages": messages},  # type: ignore[typeddict-item]
                runtime=None,  # type: ignore[arg-type]
            )
            return middleware.wrap_model_call(request, lambda r: reply)

        return step

    results["CompactkitMiddleware"] = timed(wrapper(CompactkitMiddleware(model)))
    if model != SCALE_MODEL:
        return results
    editing = ContextEditingMiddleware(edits=[ClearToolUsesEdit(trigger=10**9)])
    results["ContextEditingMiddleware"] = timed(wrapper(editing))
    summarizing = SummarizationMiddleware(llm, trigger=("tokens", 10**9))
    results["SummarizationMiddleware"] = timed(
        lambda messages: summarizing.before_model({"messages": messages}, None)  # type: ignore[arg-type,typeddict-item]
    )
    return results


def pydantic_ai_overhead(n: int, calls: int, model: str = SCALE_MODEL) -> float:
    history = CompactkitHistory(model)
    parameters = ModelRequestParameters(
        function_tools=[ToolDefinition(name="read_file", parameters_json_schema={"type": "object"})]
    )
    base: list[ModelMessage] = []
    turn = 0
    while len(base) < n:
        base += [
            ModelRequest(parts=[UserPromptPart(f"step {turn}: what does part {turn} do?")]),
            ModelResponse(
                parts=[ToolCallPart("read_file", {"path": f"p{turn}.py"}, tool_call_id=f"c{turn}")]
            ),
            ModelRequest(
                parts=[
                    ToolReturnPart(
                        "read_file", file_text(f"p{turn}.py", 8), tool_call_id=f"c{turn}"
                    )
                ]
            ),
            ModelResponse(parts=[TextPart(f"part {turn} multiplies")]),
        ]
        turn += 1
    messages = base[:n]
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(history.govern(messages, parameters=parameters))
        times = []
        for k in range(calls):
            messages = [*messages, ModelRequest(parts=[UserPromptPart(f"and step {k}?")])]
            start = time.perf_counter()
            loop.run_until_complete(history.govern(messages, parameters=parameters))
            times.append(time.perf_counter() - start)
    finally:
        loop.close()
    return statistics.median(times) * 1e3


# -- 3. lines a user adds -----------------------------------------------------------------------

LINES = [
    ("CompactkitMiddleware", 2, "import + middleware=[CompactkitMiddleware(model)]"),
    (
        "SummarizationMiddleware",
        2,
        "import + middleware=[SummarizationMiddleware(model, trigger=...)]",
    ),
    ("ContextEditingMiddleware", 2, "import + middleware=[ContextEditingMiddleware(edits=[...])]"),
    ("CompactkitCapability", 2, "import + capabilities=[CompactkitCapability(model)]"),
    ("ProcessHistory(keep last N)", 4, "a processor function + capabilities=[ProcessHistory(fn)]"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="a seconds-long smoke run (CI)")
    args = parser.parse_args()
    workload = Workload(3, 2, 30) if args.tiny else Workload(10, 4, 60)
    sizes = [100, 300] if args.tiny else [100, 1_000, 10_000]
    calls = 5 if args.tiny else 30

    budget = budget_for(LOOP_MODEL).usable_input
    print(
        f"1. one tool loop: {workload.questions} questions x {workload.reads} file reads on "
        f"{LOOP_MODEL} (budget {budget:,} tokens)"
    )
    header = (
        f"{'':<44} {'calls':>5} {'no task':>7} {'over bud.':>9} {'pair splits':>11} {'max tokens':>10} "
        f"{'summarizer':>10} {'paths':>5} {'checksums':>9}"
    )
    print("LangChain create_agent + ChatOpenAI (mocked transport)")
    print(header)
    for name, middleware in langchain_strategies().items():
        print(f"{name:<44} {langchain_run(workload, middleware).row()}")
    print("pydantic-ai Agent + FunctionModel")
    print(header)
    for name, capabilities in pydantic_ai_strategies().items():
        print(f"{name:<44} {pydantic_ai_run(workload, capabilities()).row()}")

    print(f"\n2. per-call overhead, ms (median of {calls} calls, one message appended per call)")
    rows: dict[str, list[float]] = {}
    for n in sizes:
        for name, ms in langchain_overhead(n, calls).items():
            rows.setdefault(name, []).append(ms)
        rows.setdefault("CompactkitCapability", []).append(pydantic_ai_overhead(n, calls))
        small = langchain_overhead(n, calls, LOOP_MODEL)["CompactkitMiddleware"]
        rows.setdefault(f"CompactkitMiddleware, {LOOP_MODEL}", []).append(small)
        rows.setdefault(f"CompactkitCapability, {LOOP_MODEL}", []).append(
            pydantic_ai_overhead(n, calls, LOOP_MODEL)
        )
    print(
        f"{SCALE_MODEL} ({budget_for(SCALE_MODEL).usable_input:,} tokens: the prompt window grows "
        f"with the history up to that), and {LOOP_MODEL} ({budget:,} tokens: a fixed window)"
    )
    print(f"{'':<34}" + "".join(f"{n:>10,}" for n in sizes) + f"{'last/first':>12}")
    for name, values in rows.items():
        ratio = values[-1] / values[0] if values[0] else float("nan")
        print(f"{name:<34}" + "".join(f"{v:>10.2f}" for v in values) + f"{ratio:>11.1f}x")

    print("\n3. lines a user adds to an existing agent")
    for name, lines, what in LINES:
        print(f"{name:<30} {lines}  ({what})")


if __name__ == "__main__":
    main()
