"""Benchmark: what compaction costs with prompt caching counted — ``cache_cold`` vs the default
trigger, and whether the cost report adds up.

One seeded, long scripted session (user turns of tool calls with bulky outputs; most turns a
minute apart, every third after a 45-minute break) is run twice through the real ``Agent`` on
the official ``openai`` SDK, against an in-process OpenAI-compatible endpoint (``FakeOpenAI``)
that bills like OpenAI's automatic prompt cache: the prefix a request shares with the previous
one is served from the cache (1,024 tokens, then steps of 128) when that request was less than
the cache lifetime (30 minutes here) ago. The summarizer is ``gpt-4o-mini`` on a second
endpoint; the agent is ``gpt-4o``; both priced from their bundled profiles.

* **default**: the model's default trigger (80 % of the budget);
* **cache_cold**: the same, or 50 % of the budget when the cache has gone cold anyway
  (``ratio_over(0.8) | (ratio_over(0.5) & cache_cold(after=1800))``);
* **off**: no compaction (the projection drops the oldest turns to fit the budget): the
  counterfactual the compactions' modelled cost is compared with.

Reported per arm: total cost (``RunResult.cost(prices)`` summed over the runs), of which the
summarizer, compactions, requests, the share of prompt tokens served from the cache; the ratio
cache_cold / default; the check that the cost report equals the sum recomputed from the
requests the endpoints received (exact, to the cent's billionth); and the compactions' modelled
net cost until the next compaction (``CompactionCost.net_until_next`` summed) beside the
measured difference to the ``off`` arm (a model of each compaction's horizon, not of the whole
run: the two are compared, not required to be equal).

Run: ``python evals/benchmarks/bench_control.py`` (``--tiny`` for CI's smoke run, seconds).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, field
from typing import Any

from compactkit import Agent, Governor
from compactkit.budget import Prices, counter_for, get_profile
from compactkit.compressors import DigestCompressor
from compactkit.compressors.summary import SummaryCompressor
from compactkit.compressors.summary.llm import OpenAIChatLLM
from compactkit.governance import cache_cold, ratio_over
from compactkit.items import Message
from compactkit.runtime.result import RunResult
from compactkit.testing import FakeOpenAI, FakeReply, tool_call

MODEL, SUMMARIZER = "gpt-4o", "gpt-4o-mini"
BUDGET = 20_000
TTL = 1_800.0  # seconds the endpoint keeps a prefix cached (and what cache_cold is told)
SUMMARY = "## Current state\n- reading the report part by part\n\n## Next steps\n- read on"


@dataclass
class Endpoint:
    """The agent's model: scripted tool calls, billed like OpenAI's prefix cache."""

    rng: random.Random
    clock: list[float]
    calls_per_turn: int
    last: tuple[list[str], float] | None = None
    billed: list[tuple[int, int, int]] = field(default_factory=list)
    """(prompt, cached, completion) of every request, as reported."""
    calls_left: int = 0
    part: int = 0

    def reply(self, body: dict[str, Any]) -> FakeReply:
        self.clock[0] += 5.0  # a model call takes a few seconds
        messages = [json.dumps(m, sort_keys=True) for m in body["messages"]]
        sizes = [len(m) // 4 for m in messages]
        prompt = sum(sizes) + len(json.dumps(body.get("tools", []))) // 4
        cached = 0
        if self.last is not None and self.clock[0] - self.last[1] < TTL:
            shared = 0
            for before, now in zip(self.last[0], messages, strict=False):
                if before != now:
                    break
                shared += 1
            prefix = sum(sizes[:shared])
            if prefix >= 1024:
                cached = 1024 + (prefix - 1024) // 128 * 128
        self.last = (messages, self.clock[0])
        if self.calls_left > 0:
            self.calls_left -= 1
            self.part += 1
            reply = tool_call("read", {"n": self.part})
            completion = 20
        else:
            reply = FakeReply(text="Done with this part.")
            completion = 10
        self.billed.append((prompt, cached, completion))
        return FakeReply(
            text=reply.text,
            calls=reply.calls,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
        )


@dataclass
class Arm:
    name: str
    total: float = 0.0
    summarizer: float = 0.0
    recomputed: float = 0.0
    compactions: int = 0
    modelled: float | None = 0.0
    requests: int = 0
    prompt: int = 0
    cached: int = 0


def play(name: str, turns: int, calls_per_turn: int, output_tokens: int, seed: int) -> Arm:
    rng = random.Random(seed)
    clock = [0.0]
    endpoint = Endpoint(rng, clock, calls_per_turn)
    model = FakeOpenAI(default=endpoint.reply, model=MODEL)
    summarizer = FakeOpenAI(default=SUMMARY, model=SUMMARIZER)
    counter = counter_for(MODEL)
    compressor = SummaryCompressor(
        OpenAIChatLLM(SUMMARIZER, client=summarizer.client()),
        target_tokens=BUDGET // 2,
        counter=counter,
        fallback=DigestCompressor(target_tokens=BUDGET // 2, counter=counter),
    )
    trigger = ratio_over(0.8)
    if name == "cache_cold":
        trigger = trigger | (ratio_over(0.5) & cache_cold(after=TTL))
    governor = (
        Governor.for_model(MODEL, budget=BUDGET, compaction=False, clock=lambda: clock[0])
        if name == "off"
        else Governor.for_model(
            MODEL,
            budget=BUDGET,
            trigger=trigger,
            target=0.4,
            compressor=compressor,
            clock=lambda: clock[0],
        )
    )
    words = [f"token{n}" for n in range(500)]

    def read(n: int) -> str:
        """Read one part of the report."""
        return f"part {n}: " + " ".join(rng.choice(words) for _ in range(output_tokens))

    agent = Agent(MODEL, model.client(), tools=[read], governor=governor, max_steps=50)
    session = agent.new_session()
    arm = Arm(name)
    prices = get_profile(MODEL).prices
    mini = get_profile(SUMMARIZER).prices
    assert prices is not None and mini is not None
    results: list[RunResult] = []
    for turn in range(turns):
        clock[0] += 45 * 60.0 if turn % 3 == 2 else 60.0  # a break, or a minute
        endpoint.calls_left = calls_per_turn
        result = session.run(f"Turn {turn}: read the next {calls_per_turn} parts and report.")
        results.append(result)
        cost = result.cost(prices)
        assert cost is not None, "both models have prices"
        arm.total += cost
        arm.summarizer += result.compaction_cost.summarizer or 0.0
        arm.compactions += sum(1 for c in result.compactions if c.changed)
        net = result.compaction_cost.net_until_next
        arm.modelled = None if net is None or arm.modelled is None else arm.modelled + net
    arm.requests = len(endpoint.billed)
    arm.prompt = sum(p for p, _, _ in endpoint.billed)
    arm.cached = sum(c for _, c, _ in endpoint.billed)
    arm.recomputed = _recompute(endpoint, summarizer, prices, mini, counter)
    return arm


def _recompute(
    endpoint: Endpoint, summarizer: FakeOpenAI, prices: Prices, mini: Prices, counter: Any
) -> float:
    """The cost from what the endpoints received and answered, independently of the report."""
    total = sum(
        ((p - c) * prices.input + c * (prices.cached_input or 0.0) + o * prices.output) / 1e6
        for p, c, o in endpoint.billed
    )
    answer = counter.count_text(SUMMARY)
    for body in summarizer.requests:  # every request was answered: no faults here
        items = [Message(role="user", content=m["content"]) for m in body["messages"]]
        total += (counter.count(items).tokens * mini.input + answer * mini.output) / 1e6
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="a small run for CI (seconds)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    turns, calls, size = (9, 3, 300) if args.tiny else (60, 4, 700)
    names = ("default", "cache_cold", "off")
    arms = [play(name, turns, calls, size, args.seed) for name in names]
    print(f"{turns} user turns x {calls} tool calls, outputs ~{size} words, budget {BUDGET:,}")
    print(
        f"{'arm':<11} {'total $':>10} {'summ. $':>9} {'compact.':>8} {'requests':>8} "
        f"{'cached':>7} {'modelled net $':>14} {'measured vs off $':>17}"
    )
    off = arms[-1]
    for arm in arms:
        share = arm.cached / arm.prompt if arm.prompt else 0.0
        modelled = "n/a" if arm.modelled is None else f"{arm.modelled:+.4f}"
        measured = "" if arm is off else f"{arm.total - off.total:+.4f}"
        print(
            f"{arm.name:<11} {arm.total:>10.4f} {arm.summarizer:>9.5f} {arm.compactions:>8} "
            f"{arm.requests:>8} {share:>7.1%} {modelled:>14} {measured:>17}"
        )
        if abs(arm.total - arm.recomputed) > 1e-9:
            print(f"{arm.name}: report {arm.total!r} != recomputed {arm.recomputed!r}")
            return 1
    default, cold, _ = arms
    print("cost report == sum recomputed from the requests: exact (every arm)")
    print(f"cache_cold / default total cost: {cold.total / default.total:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
