"""Benchmark: governing a plain message list and an Agents SDK tool loop, against the peers.

1. Per-call overhead on a growing chat list of 100 / 1,000 / 10,000 messages: the stateful
   ``MessageCompactor`` (compacting, and project-only), the stateless ``compact_messages``, and
   LangChain's ``trim_messages`` (``strategy="last"``, its approximate counter, the
   ``start_on="human"`` set-up its docs recommend), same lists, same run. Each call appends one
   message and governs the whole list; the median of the timed calls is reported.
2. One long tool loop that overflows without governance (a coding agent reading files on an 8k
   model, gpt-4's profile: 6,021 usable input tokens): prompts over budget (counted exactly,
   tool schemas included), tool-pair splits (a call without its output or the reverse), prompts
   without the task (the latest user message) — for no governance, ``MessageCompactor``,
   ``trim_messages`` (with and without ``start_on``), and, through the real Agents SDK
   ``Runner`` (``ScriptedModel``), ``CompactkitInputFilter``, the SDK's ``ToolOutputTrimmer``
   and ``OpenAIResponsesCompactionSession`` (its ``/responses/compact`` answered offline).

Run: ``python evals/benchmarks/bench_integrations_messages.py`` (``--tiny`` for CI's smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import httpx2
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.extensions import ToolOutputTrimmer
from agents.memory import OpenAIResponsesCompactionSession
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately, trim_messages
from openai import AsyncOpenAI

from compactkit import Message, Tool, chat_to_items, counter_for
from compactkit.budget import budget_for
from compactkit.formats import (
    responses_to_items,
    to_plain,
    tools_from_chat,
    validate_chat,
    validate_responses,
)
from compactkit.integrations import CompactkitInputFilter, MessageCompactor, compact_messages

SCALE_MODEL = "gpt-4o-mini"  # 117,411 usable input tokens
LOOP_MODEL = "gpt-4"  # 6,021 usable input tokens
SYSTEM = "You are a coding agent. Fix the failing tests."
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file of the repository.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
]


# -- 1. per-call overhead ----------------------------------------------------------------------


def chat_history(n: int) -> list[dict[str, Any]]:
    """``n`` messages of a coding session: user turns, tool round trips, answers."""
    out: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    turn = 0
    while len(out) < n:
        call_id = f"call_{turn}"
        out += [
            {"role": "user", "content": f"step {turn}: test_{turn} fails with KeyError 'id'"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": f'{{"path": "m{turn}.py"}}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": "\n".join(f"line {k}: value_{turn}_{k} = {k}" for k in range(12)),
            },
            {"role": "assistant", "content": f"fixed test_{turn} by guarding the lookup"},
        ]
        turn += 1
    return out[:n]


def to_langchain(messages: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for m in messages:
        if m["role"] == "system":
            out.append(SystemMessage(m["content"]))
        elif m["role"] == "user":
            out.append(HumanMessage(m["content"]))
        elif m["role"] == "tool":
            out.append(ToolMessage(m["content"], tool_call_id=m["tool_call_id"]))
        else:
            calls = [
                {
                    "name": c["function"]["name"],
                    "args": json.loads(c["function"]["arguments"]),
                    "id": c["id"],
                    "type": "tool_call",
                }
                for c in m.get("tool_calls", [])
            ]
            out.append(AIMessage(m.get("content") or "", tool_calls=calls))
    return out


def per_call(n: int, calls: int) -> dict[str, float]:
    """Median ms per call on a list of about ``n`` messages growing by one per call."""
    budget = budget_for(SCALE_MODEL).usable_input
    base = chat_history(n)
    extra = [{"role": "user", "content": f"and step {k}?"} for k in range(calls)]
    results: dict[str, float] = {}

    def run(name: str, step: Callable[[list[Any]], list[Any]], *, warm: bool = True) -> None:
        """``step`` governs a list and returns the list to keep (its ``history``)."""
        messages = step(list(base)) if warm else list(base)  # the first read is not timed
        times = []
        for message in extra:
            messages = [*messages, message]
            start = time.perf_counter()
            messages = step(messages)
            times.append(time.perf_counter() - start)
        results[name] = statistics.median(times) * 1e3

    compactor = MessageCompactor(SCALE_MODEL, tools=CHAT_TOOLS)
    run("MessageCompactor", lambda ms: compactor(ms).history)
    projector = MessageCompactor(SCALE_MODEL, tools=CHAT_TOOLS, compaction=False)
    run("MessageCompactor (project only)", lambda ms: projector(ms).history)
    run(
        "compact_messages (stateless)",
        lambda ms: compact_messages(ms, model=SCALE_MODEL, tools=CHAT_TOOLS).history,
        warm=False,
    )
    lc_base = to_langchain(base)
    lc_extra = iter(to_langchain(extra))

    def trim(ms: list[Any]) -> None:
        trim_messages(
            ms,
            max_tokens=budget,
            token_counter=count_tokens_approximately,
            strategy="last",
            start_on="human",
            include_system=True,
        )

    times = []
    lc_messages = list(lc_base)
    for _ in extra:
        lc_messages = [*lc_messages, next(lc_extra)]
        start = time.perf_counter()
        trim(lc_messages)
        times.append(time.perf_counter() - start)
    results["trim_messages"] = statistics.median(times) * 1e3
    return results


# -- 2. one long tool loop ----------------------------------------------------------------------

OUTPUT_LINES = 120  # ~1,100 tokens per read: six reads overflow the 8k model


def read_output(n: int) -> str:
    return "\n".join(
        f"src/m{n}.py:{k}: value_{n}_{k} = compute({k}, {n})" for k in range(OUTPUT_LINES)
    )


class Tally:
    """Counts, per model call, what a provider would refuse or the task would lose."""

    def __init__(self) -> None:
        self.calls = self.over = self.splits = self.no_task = self.max_tokens = 0

    def row(self) -> str:
        return (
            f"{self.calls:>5} {self.over:>10} {self.splits:>11} {self.no_task:>8} "
            f"{self.max_tokens:>10,}"
        )


def check_chat(tally: Tally, sent: list[dict[str, Any]], task: str) -> None:
    counter = counter_for(LOOP_MODEL)
    budget = budget_for(LOOP_MODEL).usable_input
    tally.calls += 1
    tokens = counter.count(chat_to_items(sent), tools=tools_from_chat(CHAT_TOOLS)).tokens
    tally.max_tokens = max(tally.max_tokens, tokens)
    tally.over += tokens > budget
    _, problems = validate_chat(sent, mode="repair")
    tally.splits += bool(problems)
    tally.no_task += not any(m.get("role") == "user" and m.get("content") == task for m in sent)


def chat_loop(reads: int, govern: Callable[[list[Any]], list[dict[str, Any]]]) -> Tally:
    """The loop an agent runs: govern the list, 'call the model', append its call and output."""
    tally = Tally()
    task = "fix the failing tests in src/"
    messages: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
    for n in range(reads + 1):
        sent = govern(messages)
        check_chat(tally, sent, task)
        if n == reads:
            break
        call_id = f"call_{n}"
        messages = [
            *messages,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": f'{{"path": "m{n}.py"}}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": read_output(n)},
        ]
    return tally


def governed_chat() -> Callable[[list[Any]], list[dict[str, Any]]]:
    compactor = MessageCompactor(LOOP_MODEL, tools=CHAT_TOOLS)
    return lambda messages: [to_plain(m) for m in compactor(messages).send]


def trimmed_chat(start_on: str | None) -> Callable[[list[Any]], list[dict[str, Any]]]:
    budget = budget_for(LOOP_MODEL).usable_input

    def govern(messages: list[Any]) -> list[dict[str, Any]]:
        options: dict[str, Any] = {"start_on": start_on} if start_on else {}
        kept = trim_messages(
            to_langchain(messages),
            max_tokens=budget,
            token_counter=count_tokens_approximately,
            strategy="last",
            include_system=True,
            **options,
        )
        return _from_langchain(kept)

    return govern


def _from_langchain(messages: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, HumanMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, ToolMessage):
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        else:
            message: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
                    }
                    for c in m.tool_calls
                ]
            out.append(message)
    return out


@function_tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return read_output(int("".join(ch for ch in path if ch.isdigit()) or 0))


AGENT_TOOLS = [
    Tool(
        name=read_file.name,
        description=read_file.description,
        parameters=read_file.params_json_schema,
    )
]


def agents_loop(reads: int, how: str) -> tuple[Tally, int]:
    """The same loop through the Agents SDK's Runner; returns the tally and /compact calls."""
    steps: list[Any] = [
        ModelStep(output=[function_call("read_file", {"path": f"m{n}.py"}, call_id=f"call_{n}")])
        for n in range(reads)
    ]
    steps.append(ModelStep(output=[assistant_message("fixed", item_id="msg_final")]))
    model = ScriptedModel(steps)
    agent = Agent(name="fixer", instructions=SYSTEM, model=model, tools=[read_file])
    compacts = 0

    def compact_api(request: httpx2.Request) -> httpx2.Response:
        nonlocal compacts
        compacts += 1
        body = json.loads(request.content)
        users = [i for i in body.get("input", []) if i.get("role") == "user"]
        output = [
            *[
                {
                    "type": "message",
                    "role": "user",
                    "id": f"u{k}",
                    "status": "completed",
                    "content": [{"type": "input_text", "text": str(u.get("content"))}],
                }
                for k, u in enumerate(users)
            ],
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "x" * 400},
        ]
        return httpx2.Response(
            200,
            json={
                "id": "cmpresp_1",
                "created_at": 1,
                "object": "response.compaction",
                "output": output,
                "usage": {
                    "input_tokens": 1,
                    "output_tokens": 1,
                    "total_tokens": 2,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            },
        )

    session: Any = SQLiteSession(f"bench-{how}")
    config = RunConfig()
    if how == "CompactkitInputFilter":
        config = RunConfig(call_model_input_filter=CompactkitInputFilter(LOOP_MODEL))
    elif how == "ToolOutputTrimmer":
        config = RunConfig(call_model_input_filter=ToolOutputTrimmer())
    elif how == "OpenAIResponsesCompactionSession":
        client = AsyncOpenAI(
            api_key="sk-test",
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(compact_api)),
        )
        session = OpenAIResponsesCompactionSession("bench", session, client=client, model="gpt-4.1")
    asyncio.run(
        Runner.run(
            agent,
            "fix the failing tests in src/",
            session=session,
            run_config=config,
            max_turns=reads + 5,
        )
    )
    tally = Tally()
    counter = counter_for(LOOP_MODEL)
    budget = budget_for(LOOP_MODEL).usable_input
    for call in model.calls:
        plain = [json.loads(json.dumps(item, default=str)) for item in call.input]
        known = [i for i in plain if i.get("type") != "compaction"]
        items = [Message(role="system", content=SYSTEM), *responses_to_items(known)]
        opaque = sum(len(i.get("encrypted_content", "")) // 4 for i in plain if i not in known)
        tokens = counter.count(items, tools=AGENT_TOOLS).tokens + opaque
        tally.calls += 1
        tally.max_tokens = max(tally.max_tokens, tokens)
        tally.over += tokens > budget
        _, problems = validate_responses(known, mode="repair")
        tally.splits += bool(problems)
        tally.no_task += not any(
            i.get("role") == "user" and "fix the failing tests" in json.dumps(i) for i in plain
        )
    return tally, compacts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="a smoke run for CI")
    args = parser.parse_args()
    set_tracing_disabled(True)
    sizes, calls, reads = ([100], 3, 8) if args.tiny else ([100, 1_000, 10_000], 25, 30)

    print(f"1. per-call overhead, ms (median of {calls} calls, one message appended per call)")
    print(
        f"{'messages':>9} {'MessageCompactor':>17} {'project-only':>13} {'stateless':>10} "
        f"{'trim_messages':>14} {'trim/compactor':>15}"
    )
    for n in sizes:
        r = per_call(n, calls)
        ratio = r["trim_messages"] / r["MessageCompactor"]
        print(
            f"{n:>9,} {r['MessageCompactor']:>17.3f} {r['MessageCompactor (project only)']:>13.3f} "
            f"{r['compact_messages (stateless)']:>10.3f} {r['trim_messages']:>14.3f} {ratio:>14.1f}x"
        )

    print(
        f"\n2. one tool loop of {reads} file reads on {LOOP_MODEL} "
        f"({budget_for(LOOP_MODEL).usable_input:,} usable input tokens)"
    )
    print(
        f"{'mechanism':<44} {'calls':>5} {'over budget':>10} {'pair splits':>11} "
        f"{'no task':>8} {'max tokens':>10}"
    )
    rows: list[tuple[str, Tally]] = [
        ("plain list: no governance", chat_loop(reads, lambda ms: [to_plain(m) for m in ms])),
        ("plain list: MessageCompactor", chat_loop(reads, governed_chat())),
        ("plain list: trim_messages(start_on='human')", chat_loop(reads, trimmed_chat("human"))),
        ("plain list: trim_messages (no start_on)", chat_loop(reads, trimmed_chat(None))),
    ]
    for how in (
        "none",
        "CompactkitInputFilter",
        "ToolOutputTrimmer",
        "OpenAIResponsesCompactionSession",
    ):
        tally, compacts = agents_loop(reads, how)
        label = f"Agents Runner: {how}" + (f" ({compacts} /compact)" if compacts else "")
        rows.append((label, tally))
    for label, tally in rows:
        print(f"{label:<44} {tally.row()}")


if __name__ == "__main__":
    main()
