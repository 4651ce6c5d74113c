"""Benchmark: prompt-cache hits and input cost, and the step latency of background compaction.

**Cache.** One seeded, tool-heavy coding-agent session of 1,000 model calls (a user message
every few calls, parallel tool calls, outputs from a few tokens to several thousand) is played
through four ways of building each prompt under a 32k-token budget, with the same ~1.5k-token
system prompt and the same tool schemas:

* compactkit cache-aware: ``Governor`` with a cache-aware projector (the default where the
  profile says the provider caches) and the default ladder compressor;
  (hysteresis: compact at 85 % of the budget down to 40 %);
* compactkit default: ``cache_aware=False`` and the default hysteresis (80 % down to 50 %), the
  behaviour before cache-aware mode existed;
* compactkit's projector alone (compaction off), cache-aware and not: what the projection mode
  does by itself when the memory outgrows the budget;
* LangChain ``trim_messages`` (``strategy="last"``, ``start_on="human"``, system kept) before
  each call, over the whole history;
* LangChain's real ``SummarizationMiddleware`` (trigger 80 %, keep 50 % of the budget, a fake
  summarizing model answering a fixed ~400-token text), its ``before_model`` update applied.

For every call the tokens that are a byte-identical prefix of the previous prompt (tool schemas
first, then the messages) are what a provider cache can serve. Cost uses the published input
prices and the cache rules from compactkit's profiles: gpt-5 ($1.25/M input, cached $0.125/M;
automatic from 1,024 tokens in 128-token steps) and Claude Sonnet 4.5 ($3/M input, cache reads
$0.30/M, 5-minute cache writes $3.75/M, a breakpoint at the end of every prompt for every mode).
Tokens are o200k_base counts for all modes (Claude's own tokenizer is not public).

**Latency.** The same session with a fake LLM summarizer that takes 2 s per call
(``SummaryCompressor``), stepping the governor before every simulated model call (0.25 s each;
``--model-seconds``): the time ``Governor.step`` adds, foreground compaction vs background
(``BackgroundCompaction``), p50/p99/max, with the steps that waited at the hard threshold
counted and the percentiles also given without them.

Run: ``python evals/benchmarks/bench_cache.py`` (about 10 minutes; ``--tiny`` for CI's smoke run,
with every sleep scaled down 100x). Without ``langchain`` installed only compactkit's modes run.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from compactkit.budget.profiles import get_profile
from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors.summary import SummaryCompressor
from compactkit.governance._cache import CACHE_TARGET, CACHE_TRIGGER
from compactkit.governance.policy import CompactPolicy, tokens_over
from compactkit.governance.projector import ContextProjector
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool
from compactkit.memory.in_memory import InMemoryMemory
from compactkit.runtime.background import BackgroundCompaction
from compactkit.runtime.events import BackgroundCompactionEvent
from compactkit.runtime.governor import Governor
from compactkit.testing import FunctionLLM

COUNTER = TiktokenCounter("o200k_base")
BUDGET = 32_000
TRIGGER, TARGET = int(0.8 * BUDGET), int(0.5 * BUDGET)
WORDS = (
    "the agent reads src/app/config.py and runs pytest -q; KeyError 'user_id' at line 42 "
    "refactor parser timeout=30 retry backoff commit 9f2c1ab https://example.com/docs "
    "def handler(request): return response; assert status == 200; import json; logging"
).split()
INSTRUCTIONS = "You are a careful coding agent working in a Python repository. " + " ".join(
    WORDS[i % len(WORDS)] for i in range(900)
)
TOOLS = [
    Tool(
        name=name,
        description=f"{name.replace('_', ' ')} in the workspace.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    )
    for name in ("read_file", "write_file", "run_tests", "grep")
]
TOOL_TOKENS = COUNTER.count_overhead(TOOLS) - COUNTER.count_overhead(())
PRIMING = COUNTER.count_overhead(())
GPT5 = get_profile("gpt-5").prompt_cache
CLAUDE = get_profile("claude-sonnet-4-5").prompt_cache
assert GPT5 is not None and CLAUDE is not None
PRICES = {  # $ per 1M input tokens: https://openai.com/api/pricing/ , https://www.anthropic.com/pricing
    "gpt-5": 1.25,
    "claude-sonnet-4-5": 3.00,
}


# -- the session ---------------------------------------------------------------------------------


def session(calls: int, seed: int = 18) -> list[list[Item]]:
    """``calls`` batches of new items, each followed by a model call."""
    rng = random.Random(seed)

    def text(tokens: int) -> str:
        return " ".join(rng.choices(WORDS, k=max(1, int(tokens / 1.6))))

    batches: list[list[Item]] = []
    call = 0
    while len(batches) < calls:
        batches.append([Message(role="user", content=text(rng.randint(20, 150)))])
        for _ in range(rng.randint(3, 12)):  # a tool loop: one model call per round
            ids = [f"call_{call + k}" for k in range(rng.choice((1, 1, 1, 2, 3)))]
            call += len(ids)
            batch: list[Item] = [
                FunctionCall(call_id=cid, name=rng.choice(TOOLS).name, arguments='{"path": "a"}')
                for cid in ids
            ]
            for cid in ids:
                size = min(8000, int(rng.lognormvariate(5.3, 1.0)))  # median ~200, a long tail
                batch.append(FunctionCallOutput(call_id=cid, output=text(size)))
            batches.append(batch)
        batches.append([Message(role="assistant", content=text(rng.randint(20, 120)))])
    return batches[:calls]


def add(memory: InMemoryMemory, batch: Iterable[Item]) -> None:
    for item in batch:
        if isinstance(item, FunctionCallOutput):
            memory.add_tool_output(item.call_id, item.output)
        elif isinstance(item, Message) and item.role == "user":
            memory.add_user_input(item)
        else:
            memory.add_output_items([item])


# -- what each prompt costs ------------------------------------------------------------------------


@dataclass
class Tally:
    name: str
    calls: int = 0
    prompt_tokens: int = 0
    prefix_tokens: int = 0
    gpt5_cached_tokens: int = 0
    over_budget: int = 0
    max_prompt: int = 0
    compactions: int = 0
    gpt5_cached_usd: float = 0.0
    gpt5_uncached_usd: float = 0.0
    claude_cached_usd: float = 0.0
    claude_uncached_usd: float = 0.0
    seconds: float = 0.0

    def record(self, prompt: list[tuple[object, int]], previous: list[tuple[object, int]]) -> None:
        """One call: ``prompt`` as (element, tokens) pairs, elements compared for identity."""
        tokens = TOOL_TOKENS + PRIMING + sum(t for _, t in prompt)
        shared = TOOL_TOKENS if previous or self.calls else 0
        if previous:
            for (a, ta), (b, _) in zip(prompt, previous, strict=False):
                if a is not b and a != b:
                    break
                shared += ta
        self.calls += 1
        self.prompt_tokens += tokens
        self.prefix_tokens += shared
        self.over_budget += tokens > BUDGET
        self.max_prompt = max(self.max_prompt, tokens)
        assert GPT5 is not None and CLAUDE is not None
        cached = GPT5.cached_tokens(shared)
        self.gpt5_cached_tokens += cached
        price = PRICES["gpt-5"] / 1e6
        self.gpt5_cached_usd += (tokens - cached) * price + cached * price * GPT5.cached_input_ratio
        self.gpt5_uncached_usd += tokens * price
        read = CLAUDE.cached_tokens(shared)
        price = PRICES["claude-sonnet-4-5"] / 1e6
        written = (tokens - read) * price * CLAUDE.cache_write_ratio
        self.claude_cached_usd += read * price * CLAUDE.cached_input_ratio + written
        self.claude_uncached_usd += tokens * price

    @property
    def share(self) -> float:
        return self.prefix_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def run_compactkit(
    batches: list[list[Item]], *, cache_aware: bool, compaction: bool = True
) -> Tally:
    name = "compactkit cache-aware" if cache_aware else "compactkit default (not cache-aware)"
    if not compaction:
        name = f"compactkit projector only, {'cache-aware' if cache_aware else 'not cache-aware'}"
    tally = Tally(name)
    projector = ContextProjector(COUNTER, budget=BUDGET, cache_aware=cache_aware)
    # What Governor.for_model picks: the cache-aware hysteresis fires later and aims lower.
    trigger, target = (CACHE_TRIGGER, CACHE_TARGET) if cache_aware else (0.8, 0.5)
    policy = CompactPolicy(
        tokens_over(int(trigger * BUDGET)), target=int(target * BUDGET), budget=BUDGET
    )
    governor = Governor(projector, policy=policy if compaction else None)
    memory = InMemoryMemory()
    previous: list[tuple[object, int]] = []
    start = time.perf_counter()
    for batch in batches:
        add(memory, batch)
        step = governor.step(memory, instructions=INSTRUCTIONS, tools=TOOLS)
        tally.compactions += step.compacted
        prompt = [(item, COUNTER.count_item(item)) for item in step.items]
        tally.record(prompt, previous)
        previous = prompt
    tally.seconds = time.perf_counter() - start
    return tally


class _LangChain:
    """Converts the session to LangChain messages once, counting each with compactkit's counter
    (the same numbers as the compactkit modes)."""

    def __init__(self) -> None:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

        self.ai, self.human, self.tool = AIMessage, HumanMessage, ToolMessage
        self.system = SystemMessage(INSTRUCTIONS, id="system")
        self.tokens: dict[int, tuple[Any, int]] = {}
        self._remember(
            self.system, COUNTER.count_item(Message(role="system", content=INSTRUCTIONS))
        )

    def _remember(self, message: Any, tokens: int) -> None:
        self.tokens[id(message)] = (message, tokens)

    def count_one(self, message: Any) -> int:
        entry = self.tokens.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        role = "user" if message.type in ("human", "system") else "assistant"
        tokens = COUNTER.count_item(Message(role=role, content=str(message.content)))
        self._remember(message, tokens)
        return tokens

    def count(self, messages: Iterable[Any]) -> int:
        return sum(self.count_one(m) for m in messages) + PRIMING

    def convert(self, batch: list[Item], counter: int) -> list[Any]:
        out: list[Any] = []
        calls: list[FunctionCall] = []
        for item in batch:
            if isinstance(item, FunctionCall):
                calls.append(item)
                continue
            if calls:
                out.append(self._calls(calls, counter + len(out)))
                calls = []
            tokens = COUNTER.count_item(item)
            if isinstance(item, FunctionCallOutput):
                message = self.tool(item.text, tool_call_id=item.call_id, id=f"t{item.call_id}")
            elif isinstance(item, Message) and item.role == "user":
                message = self.human(item.text, id=f"h{counter + len(out)}")
            else:
                message = self.ai(item.text, id=f"a{counter + len(out)}")
            self._remember(message, tokens)
            out.append(message)
        if calls:
            out.append(self._calls(calls, counter + len(out)))
        return out

    def _calls(self, calls: list[FunctionCall], number: int) -> Any:
        tool_calls = [
            {"name": c.name, "args": c.parsed_arguments(), "id": c.call_id} for c in calls
        ]
        message = self.ai("", tool_calls=tool_calls, id=f"a{number}")
        self._remember(message, sum(COUNTER.count_item(c) for c in calls))
        return message


def run_trim_messages(batches: list[list[Item]]) -> Tally | None:
    try:
        from langchain_core.messages import trim_messages
    except ImportError:
        return None
    lc = _LangChain()
    tally = Tally("LangChain trim_messages before each call")
    history: list[Any] = [lc.system]
    previous: list[tuple[object, int]] = []
    start = time.perf_counter()
    for batch in batches:
        history += lc.convert(batch, len(history))
        prompt = trim_messages(
            history,
            max_tokens=BUDGET - TOOL_TOKENS,
            token_counter=lc.count,
            strategy="last",
            include_system=True,
            start_on="human",
        )
        pairs = [(m, lc.count_one(m)) for m in prompt]
        tally.record(pairs, previous)
        previous = pairs
    tally.seconds = time.perf_counter() - start
    return tally


def run_summarization_middleware(batches: list[list[Item]]) -> Tally | None:
    try:
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
    except ImportError:
        return None
    summary = "## SESSION INTENT\n" + " ".join(WORDS[i % len(WORDS)] for i in range(300))

    class FixedSummaryModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "fixed-summary-fake"

        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=summary))])

    lc = _LangChain()
    middleware = SummarizationMiddleware(
        FixedSummaryModel(),
        trigger=("tokens", TRIGGER - TOOL_TOKENS - lc.count_one(lc.system)),
        keep=("tokens", TARGET),
        token_counter=lc.count,
    )
    tally = Tally("LangChain SummarizationMiddleware")
    messages: list[Any] = []
    previous: list[tuple[object, int]] = []
    start = time.perf_counter()
    for batch in batches:
        messages += lc.convert(batch, len(messages) + tally.calls * 1000)
        update = middleware.before_model({"messages": messages}, None)  # type: ignore[arg-type]
        if update is not None:
            new = update["messages"]
            assert isinstance(new[0], RemoveMessage)
            messages = list(new[1:])
            tally.compactions += 1
        prompt = [lc.system, *messages]  # create_agent sends the system prompt beside the state
        pairs = [(m, lc.count_one(m)) for m in prompt]
        tally.record(pairs, previous)
        previous = pairs
    tally.seconds = time.perf_counter() - start
    return tally


# -- step latency: foreground vs background compaction ---------------------------------------------


@dataclass
class Latency:
    name: str
    steps: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    compactions: int
    hard_waits: int = 0
    p99_outside_waits_ms: float | None = None
    max_outside_waits_ms: float | None = None
    discarded: int = 0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def run_latency(
    batches: list[list[Item]], *, background: bool, summary_s: float, model_s: float
) -> Latency:
    def summarizer(_messages: list[dict[str, str]]) -> str:
        time.sleep(summary_s)
        update = "## Decisions and why\n- " + " ".join(WORDS[i % len(WORDS)] for i in range(200))
        return update + "\n\n## Current state\n- working\n\n## Next steps\n- continue"

    compressor = SummaryCompressor(
        FunctionLLM(summarizer), keep_tokens=int(0.3 * BUDGET), counter=COUNTER
    )
    worker = BackgroundCompaction() if background else None
    governor = Governor(
        ContextProjector(COUNTER, budget=BUDGET, cache_aware=True),
        policy=CompactPolicy(tokens_over(TRIGGER), target=TARGET, budget=BUDGET),
        compressor=compressor,
        background=worker,
    )
    memory = InMemoryMemory()
    times: list[float] = []
    waited: list[bool] = []
    compactions = 0
    for batch in batches:
        add(memory, batch)
        start = time.perf_counter()
        step = governor.step(memory, instructions=INSTRUCTIONS, tools=TOOLS)
        times.append((time.perf_counter() - start) * 1000)
        compactions += step.compacted
        waited.append(
            any(
                isinstance(e, BackgroundCompactionEvent) and e.waited_s is not None
                for e in step.events
            )
        )
        time.sleep(model_s)  # the model call the prompt is for
    name = "background" if background else "foreground"
    latency = Latency(
        f"compactkit {name} compaction",
        len(times),
        round(statistics.median(times), 2),
        round(percentile(times, 0.99), 2),
        round(max(times), 2),
        compactions,
    )
    if worker is not None:
        worker.close()
        outside = [t for t, w in zip(times, waited, strict=True) if not w] or [0.0]
        latency.hard_waits = worker.stats.hard_waits
        latency.discarded = worker.stats.discarded
        latency.p99_outside_waits_ms = round(percentile(outside, 0.99), 2)
        latency.max_outside_waits_ms = round(max(outside), 2)
    return latency


# -- the report ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="a quick smoke run (CI)")
    parser.add_argument("--calls", type=int, default=1000, help="model calls in the session")
    parser.add_argument("--model-seconds", type=float, default=0.25, help="simulated model call")
    parser.add_argument("--summary-seconds", type=float, default=2.0, help="fake summarizer call")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    calls, scale = (150, 0.01) if args.tiny else (args.calls, 1.0)
    batches = session(calls)

    runners: list[Callable[[], Tally | None]] = [
        lambda: run_compactkit(batches, cache_aware=True),
        lambda: run_compactkit(batches, cache_aware=False),
        lambda: run_compactkit(batches, cache_aware=True, compaction=False),
        lambda: run_compactkit(batches, cache_aware=False, compaction=False),
        lambda: run_trim_messages(batches),
        lambda: run_summarization_middleware(batches),
    ]
    tallies = [t for t in (run() for run in runners) if t is not None]
    latencies = [
        run_latency(
            batches,
            background=background,
            summary_s=args.summary_seconds * scale,
            model_s=args.model_seconds * scale,
        )
        for background in (False, True)
    ]
    if args.json:
        print(
            json.dumps(
                {"cache": [asdict(t) for t in tallies], "latency": [asdict(x) for x in latencies]}
            )
        )
        return
    ours = tallies[0]
    print(
        f"{calls:,} model calls, {BUDGET:,}-token budget, system {COUNTER.count_text(INSTRUCTIONS):,} tokens"
    )
    print(
        f"{'mode':46} {'cacheable':>9} {'gpt5 hit':>8} {'over':>4} {'max':>6} {'compact':>7} "
        f"{'gpt-5 $ cached/uncached':>24} {'claude $ cached/uncached':>25}"
    )
    for t in tallies:
        print(
            f"{t.name:46} {t.share:9.1%} {t.gpt5_cached_tokens / t.prompt_tokens:8.1%} "
            f"{t.over_budget:4} {t.max_prompt:6,} {t.compactions:7} "
            f"{t.gpt5_cached_usd:11.2f} / {t.gpt5_uncached_usd:10.2f} "
            f"{t.claude_cached_usd:12.2f} / {t.claude_uncached_usd:10.2f}"
        )
    print("cost ratio, compactkit cache-aware / peer (with caching):")
    for t in tallies[1:]:
        print(
            f"  vs {t.name:40} gpt-5 {ours.gpt5_cached_usd / t.gpt5_cached_usd:5.2f}x   "
            f"claude {ours.claude_cached_usd / t.claude_cached_usd:5.2f}x"
        )
    print(
        f"step latency added by Governor.step (summarizer {args.summary_seconds * scale:g} s, "
        f"model call {args.model_seconds * scale:g} s):"
    )
    for x in latencies:
        extra = (
            f"; hard-threshold waits {x.hard_waits}, discarded {x.discarded}, outside the waits "
            f"p99 {x.p99_outside_waits_ms} ms, max {x.max_outside_waits_ms} ms"
            if x.p99_outside_waits_ms is not None
            else ""
        )
        print(
            f"  {x.name:34} p50 {x.p50_ms:8.2f} ms  p99 {x.p99_ms:8.2f} ms  max {x.max_ms:8.2f} ms"
            f"  compactions {x.compactions}{extra}"
        )


if __name__ == "__main__":
    main()
