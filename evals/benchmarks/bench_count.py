"""Benchmark: counting a long transcript vs the bare tokenizer loop, and recounting after growth.

Targets (issue: foundation): a first count of a 10,000-message transcript costs <= 1.2x a loop of
``len(enc.encode_ordinary(text))`` over the same texts (single thread), and a recount after
appending one message costs only that message. Issue 18: a stateless recount — a fresh counter
over new objects with the same content, as a ``compact_messages`` call or a CLI run makes — is
served by the process-wide text counts (the "first count" clears them before each round, so it
stays a cold count).

Run: ``python evals/benchmarks/bench_count.py`` (``--tiny`` for CI's smoke run).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from compactkit.budget._encodings import text_counts
from compactkit.budget.tokens import TiktokenCounter, get_encoding
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

WORDS = (
    "the agent reads file src/app.py and runs pytest; error: KeyError 'user_id' at line 42 "
    "refactor parser config value timeout=30 retry commit 9f2c1ab https://example.com/docs"
).split()


def make_transcript(n: int, seed: int = 7) -> list[Item]:
    """A deterministic mixed transcript: user turns, tool calls, tool outputs, answers."""
    rng = random.Random(seed)
    items: list[Item] = []
    i = 0
    while len(items) < n:
        text = " ".join(rng.choices(WORDS, k=rng.randint(5, 120)))
        kind = i % 4
        if kind == 0:
            items.append(Message(role="user", content=text))
        elif kind == 1:
            items.append(
                FunctionCall(call_id=f"c{i}", name="read_file", arguments=f'{{"p": "{i}"}}')
            )
        elif kind == 2:
            items.append(FunctionCallOutput(call_id=f"c{i - 1}", output=text * 3))
        else:
            items.append(Message(role="assistant", content=text))
        i += 1
    return items


def texts_of(items: list[Item]) -> list[str]:
    out = []
    for item in items:
        if isinstance(item, FunctionCall):
            out += [item.name, item.arguments]
        elif isinstance(item, Message | FunctionCallOutput):
            out.append(item.text)
    return out


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="CI smoke run")
    args = parser.parse_args()
    n, repeats = (200, 1) if args.tiny else (args.messages, args.repeats)

    items = make_transcript(n)
    texts = texts_of(items)
    encode = get_encoding("o200k_base").encode_ordinary

    baseline = best_of(repeats, lambda: sum(len(encode(t)) for t in texts))
    shared = text_counts("o200k_base")
    shared("x")  # the tokenizer loads once per process (bench_plain_lists times that load)

    def cold() -> object:
        shared.clear()
        return TiktokenCounter("o200k_base").count(items)

    first = best_of(repeats, cold)
    copies = [[type(i).model_validate(i.model_dump()) for i in items] for _ in range(repeats)]
    stateless = best_of(repeats, lambda: TiktokenCounter("o200k_base").count(copies.pop()))

    counter = TiktokenCounter("o200k_base")
    counter.count(items)
    grown = [*items, Message(role="user", content="one more message " * 20)]
    recount = best_of(repeats, lambda: counter.count(grown))
    one_message = best_of(repeats, lambda: len(encode("one more message " * 20)))
    cached_walk = best_of(repeats, lambda: counter.count(items))

    print(f"messages: {n}")
    print(f"bare tokenizer loop:           {baseline * 1e3:9.2f} ms")
    print(f"compactkit first count:        {first * 1e3:9.2f} ms   ratio {first / baseline:5.2f}x")
    print(
        f"stateless recount (new objects, fresh counter): {stateless * 1e3:.2f} ms   "
        f"ratio {stateless / baseline:5.2f}x the bare loop"
    )
    print(f"recount after +1 message:      {recount * 1e3:9.2f} ms")
    print(f"  of which the new message:    {one_message * 1e3:9.3f} ms")
    print(f"  cached walk over old items:  {cached_walk * 1e3:9.3f} ms")
    print(f"recount / first count:         {recount / first:9.4f}")
    print(f"recount / bare loop:           {recount / baseline:9.4f}")
    print(f"target: first/bare <= 1.2x -> {'met' if first / baseline <= 1.2 else 'MISSED'}")


if __name__ == "__main__":
    main()
