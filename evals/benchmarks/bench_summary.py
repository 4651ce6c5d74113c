"""Benchmark: what an LLM summarizer is asked, per 1,000 agent turns — compactkit vs LangChain.

One seeded coding-agent run (tool calls with bulky outputs, the odd user message) is played turn
by turn through two summarizing compactors at the same trigger and keep:

* compactkit's ``SummaryCompressor`` with its default policy (summarizer window 32k tokens,
  2,000-token summary cap, huge outputs cut at 2,000 tokens), compacting whenever the whole
  request reaches the trigger and keeping the newest ``keep`` tokens;
* LangChain's real ``SummarizationMiddleware`` (``langchain`` 1.x) with ``trigger=("tokens", T)``
  and ``keep=("tokens", K)``, its ``before_model`` hook called every turn and its state update
  applied, exactly as an agent graph would.

Both summarizers are fakes that record what they are sent and answer with a fixed-size text, so
the numbers are about the compactors, not a model. Token counts use o200k_base for both (the
LangChain middleware is given a token counter built on it). Reported per 1,000 turns:
summarizer calls, summarizer input tokens, the share of the folded span each summarizer saw
(tokens of the replaced history that reached a summarizer request / tokens replaced), and how
often the previous summary reached the summarizer.

Run: ``python evals/benchmarks/bench_summary.py`` (``--tiny`` for CI's smoke run, a few seconds).
Without ``langchain`` installed, only compactkit's side runs.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors._plan import request_tokens
from compactkit.compressors.summary import SummaryCompressor
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.snapshot import MemorySnapshot
from compactkit.testing import FunctionLLM

COUNTER = TiktokenCounter("o200k_base")
WORDS = (
    "the agent reads src/app/config.py and runs pytest -q; KeyError 'user_id' at line 42 "
    "refactor parser timeout=30 retry backoff commit 9f2c1ab https://example.com/docs "
    "def handler(request): return response; assert status == 200; import json; logging"
).split()
SCENARIOS = (
    ("autonomous (a user message every 25 steps)", 25),
    ("interactive (a user message every 2 steps)", 2),
)
SUMMARY_WORDS = 300  # what each fake summarizer answers with, in words (about 400 tokens)


# -- the simulated agent run ------------------------------------------------------------------


def agent_turns(turns: int, user_every: int, seed: int = 11) -> list[list[Item]]:
    """``turns`` steps of a coding agent, a user message every ``user_every`` steps; each step
    is a list of new items."""
    rng = random.Random(seed)
    steps: list[list[Item]] = [[Message(role="user", content="Make the acme-api tests pass.")]]
    for turn in range(1, turns):
        step: list[Item] = []
        if turn % user_every == 0:
            step.append(
                Message(role="user", content=f"Also check module {turn}; never touch main.")
            )
        call_id = f"call_{turn}"
        tool = rng.choice(["read_file", "bash", "grep"])
        args = {"path": f"src/mod{turn % 40}.py"} if tool != "bash" else {"command": "pytest -q"}
        step.append(Message(role="assistant", content=_words(rng, 10, 40)))
        step.append(FunctionCall(call_id=call_id, name=tool, arguments=json.dumps(args)))
        size = int(rng.lognormvariate(5.8, 0.9))  # median ~330 words, a long tail of huge outputs
        step.append(FunctionCallOutput(call_id=call_id, output=_words(rng, size, size)))
        steps.append(step)
    return steps


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def summary_text(prefix: str = "") -> str:
    return prefix + " ".join(WORDS[i % len(WORDS)] for i in range(SUMMARY_WORDS))


# -- what each side reports -------------------------------------------------------------------


@dataclass
class Tally:
    name: str
    compactions: int = 0
    calls: int = 0
    input_tokens: int = 0
    folded_tokens: int = 0
    seen_tokens: int = 0
    previous_summaries: int = 0
    previous_seen: int = 0
    max_request_tokens: int = 0
    placeholders: int = 0
    """Compactions whose "summary" was a fixed text, written without calling the summarizer."""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def per_thousand(self, value: float, turns: int) -> float:
        return value * 1000 / turns


def run_compactkit(steps: list[list[Item]], trigger: int, keep: int) -> Tally:
    tally = Tally("compactkit SummaryCompressor")
    requests: list[int] = []

    def summarizer(messages: list[dict[str, str]]) -> str:
        requests.append(sum(COUNTER.count_text(m["content"]) + 4 for m in messages) + 3)
        update = summary_text("## Decisions and why\n- ")
        return update + "\n\n## Current state\n- working\n\n## Next steps\n- continue"

    compressor = SummaryCompressor(FunctionLLM(summarizer), keep_tokens=keep, counter=COUNTER)
    snapshot = MemorySnapshot.of([Message(role="system", content="You are a coding agent.")])
    start = time.perf_counter()
    for step in steps:
        snapshot = snapshot.model_copy(update={"items": (*snapshot.items, *step)})
        if request_tokens(snapshot, COUNTER) < trigger:
            continue
        had_summary = bool(snapshot.summary)
        calls_before = len(requests)
        result = compressor.compress(snapshot)
        if result.outcome != "compacted":
            tally.notes.append(f"{result.outcome}: {result.error}")
            continue
        details = result.stats.details
        tally.compactions += 1
        tally.calls += details["summarizer_calls"]
        tally.input_tokens += details["summarizer_input_tokens"]
        old = COUNTER.count_text(snapshot.summary) if had_summary else 0
        tally.folded_tokens += details["folded_tokens"] + old
        tally.seen_tokens += details["tokens_seen"] + old  # the old summary is always sent whole
        tally.previous_summaries += had_summary
        tally.previous_seen += had_summary  # reserved first: every request carries it
        tally.max_request_tokens = max([tally.max_request_tokens, *requests[calls_before:]])
        snapshot = result.snapshot
    tally.seconds = time.perf_counter() - start
    return tally


def run_langchain(steps: list[list[Item]], trigger: int, keep: int) -> Tally | None:
    try:
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import (
            AIMessage,
            AnyMessage,
            BaseMessage,
            HumanMessage,
            RemoveMessage,
            ToolMessage,
            get_buffer_string,
        )
        from langchain_core.outputs import ChatGeneration, ChatResult
    except ImportError:
        return None

    tally = Tally("LangChain SummarizationMiddleware")
    prompts: list[str] = []

    class RecordingChatModel(BaseChatModel):
        """A fake chat model that records every prompt and answers with a fixed summary."""

        @property
        def _llm_type(self) -> str:
            return "recording-fake"

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            prompts.append("\n".join(str(m.content) for m in messages))
            reply = AIMessage(content=summary_text("## SESSION INTENT\n"))
            return ChatResult(generations=[ChatGeneration(message=reply)])

    cache: dict[tuple[str | None, int], int] = {}

    def count(messages: Any) -> int:
        total = 0
        for message in messages:
            key = (message.id, len(str(message.content)))
            if message.id is None or key not in cache:
                tokens = COUNTER.count_text(get_buffer_string([message])) + 3
                if message.id is None:
                    total += tokens
                    continue
                cache[key] = tokens
            total += cache[key]
        return total + 3

    class MeasuredMiddleware(SummarizationMiddleware):  # type: ignore[type-arg]
        """The real middleware; only measures what its trimming step lets through."""

        def _trim_messages_for_summary(self, messages: list[AnyMessage]) -> list[AnyMessage]:
            trimmed = super()._trim_messages_for_summary(messages)
            tally.folded_tokens += count(messages) - 3
            tally.seen_tokens += count(trimmed) - 3 if trimmed else 0
            previous = [m for m in messages if m.additional_kwargs.get("lc_source")]
            if previous:
                tally.previous_summaries += 1
                kept = {id(m) for m in trimmed}
                # allow_partial may keep a cut copy: count it seen if its text opens the same
                texts = {str(m.content)[:200] for m in trimmed}
                if any(id(m) in kept or str(m.content)[:200] in texts for m in previous):
                    tally.previous_seen += 1
            return trimmed

    middleware = MeasuredMiddleware(
        RecordingChatModel(),
        trigger=("tokens", trigger),
        keep=("tokens", keep),
        token_counter=count,
    )
    # create_agent passes the system prompt beside the state, never in it: the state holds only
    # the conversation.
    messages: list[AnyMessage] = []
    start = time.perf_counter()
    for step in steps:
        messages.extend(_to_langchain(step, AIMessage, HumanMessage, ToolMessage))
        calls_before = len(prompts)
        update = middleware.before_model({"messages": messages}, None)  # type: ignore[arg-type]
        if update is None:
            continue
        new = update["messages"]
        assert isinstance(new[0], RemoveMessage)
        messages = list(new[1:])
        tally.compactions += 1
        tally.placeholders += "Previous conversation was too long to summarize." in str(
            messages[0].content
        )
        tally.calls += len(prompts) - calls_before
        for prompt in prompts[calls_before:]:
            tokens = COUNTER.count_text(prompt) + 7
            tally.input_tokens += tokens
            tally.max_request_tokens = max(tally.max_request_tokens, tokens)
    tally.seconds = time.perf_counter() - start
    return tally


def _to_langchain(step: list[Item], ai: Any, human: Any, tool: Any) -> list[Any]:
    out: list[Any] = []
    for item in step:
        if isinstance(item, Message) and item.role == "user":
            out.append(human(content=item.text, id=f"h{id(item)}"))
        elif isinstance(item, Message):
            out.append(ai(content=item.text, id=f"a{id(item)}"))
        elif isinstance(item, FunctionCall):
            call = {"name": item.name, "args": item.parsed_arguments(), "id": item.call_id}
            previous = out[-1] if out and isinstance(out[-1], ai) else None
            if previous is not None:
                previous.tool_calls.append({**call, "type": "tool_call"})
            else:
                out.append(ai(content="", tool_calls=[call], id=f"a{id(item)}"))
        elif isinstance(item, FunctionCallOutput):
            out.append(tool(content=item.text, tool_call_id=item.call_id, id=f"t{id(item)}"))
    return out


# -- report -------------------------------------------------------------------------------------


def report(title: str, turns: int, trigger: int, keep: int, tallies: list[Tally]) -> str:
    def pct(part: int, whole: int) -> str:
        return f"{100 * part / whole:.1f}%" if whole else "-"

    rows = [
        ("compactions", lambda t: f"{t.per_thousand(t.compactions, turns):,.1f}"),
        ("summarizer calls", lambda t: f"{t.per_thousand(t.calls, turns):,.1f}"),
        ("summarizer input tokens", lambda t: f"{t.per_thousand(t.input_tokens, turns):,.0f}"),
        ("largest summarizer request", lambda t: f"{t.max_request_tokens:,}"),
        ("history replaced (tokens)", lambda t: f"{t.per_thousand(t.folded_tokens, turns):,.0f}"),
        ("share of it the summarizer saw", lambda t: pct(t.seen_tokens, t.folded_tokens)),
        (
            "previous summary reached it",
            lambda t: (
                f"{t.previous_seen}/{t.previous_summaries}"
                + (
                    f" ({pct(t.previous_seen, t.previous_summaries)})"
                    if t.previous_summaries
                    else ""
                )
            ),
        ),
        ("placeholder summaries (no call)", lambda t: f"{t.placeholders}/{t.compactions}"),
        ("wall time (s)", lambda t: f"{t.seconds:.2f}"),
    ]
    width = max(len(label) for label, _ in rows) + 2
    columns = [max(len(t.name), 12) + 2 for t in tallies]
    lines = [
        f"{title}: {turns:,} turns, trigger {trigger:,} tokens, keep {keep:,} tokens; "
        "per 1,000 turns:",
        "".ljust(width) + "".join(t.name.rjust(c) for t, c in zip(tallies, columns, strict=True)),
    ]
    for label, cell in rows:
        values = "".join(cell(t).rjust(c) for t, c in zip(tallies, columns, strict=True))
        lines.append(label.ljust(width) + values)
    for tally in tallies:
        for note in dict.fromkeys(tally.notes):
            lines.append(f"note ({tally.name}): {note}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="a small run for CI (seconds)")
    parser.add_argument("--turns", type=int, default=None)
    parser.add_argument(
        "--trigger", type=int, default=None, help="tokens that trigger a compaction"
    )
    parser.add_argument("--keep", type=int, default=None, help="newest tokens kept verbatim")
    args = parser.parse_args(argv)
    turns = args.turns or (150 if args.tiny else 1000)
    trigger = args.trigger or (24_000 if args.tiny else 100_000)
    keep = args.keep or (6_000 if args.tiny else 25_000)
    status = 0
    for title, user_every in SCENARIOS:
        steps = agent_turns(turns, user_every)
        tallies = [run_compactkit(steps, trigger, keep)]
        langchain = run_langchain(steps, trigger, keep)
        if langchain is None:
            print("langchain is not installed: pip install langchain (showing compactkit only)")
        else:
            tallies.append(langchain)
        print(report(title, turns, trigger, keep, tallies), end="\n\n")
        if tallies[0].compactions == 0:
            print("error: compactkit never compacted; the run is too short for the trigger")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
