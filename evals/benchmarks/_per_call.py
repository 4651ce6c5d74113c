"""The per-call cost of governing a whole session (issue 18), for ``bench_projector.py``.

Anchor workload: an ``InMemoryMemory`` receives the seeded session item by item and, before
every model call, the agent takes ``memory.snapshot()`` and ``projector.project(...)``. The
total over the session is compared with one raw tokenization pass of the session (every item's
text encoded once, the least any exact counter must do); the median turn of the first and the
last 1,000 calls shows whether per-turn work grows with the history. Cold projections (a fresh
projector on new objects of the same history, as a stateless ``compact_messages`` call or a CLI
run makes them) are compared with LangChain's ``trim_messages``.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from compactkit.budget._encodings import text_counts
from compactkit.budget.tokens import TiktokenCounter, get_encoding
from compactkit.governance.projector import ContextProjector
from compactkit.items import FunctionCall, Item, Message, Tool
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory.in_memory import InMemoryMemory

clock = time.thread_time


@dataclass(frozen=True)
class SessionCost:
    messages: int
    budget: int
    raw: float  # seconds: one tokenization pass over the session
    total: float  # seconds: snapshot + project before every model call
    calls: int
    first: float  # median seconds of the first 1,000 calls (a third of them, if fewer), each
    last: float  # call's fastest over the runs; and of the last 1,000 calls
    raw_first: float  # the same medians for the raw pass over each call's new items: the
    raw_last: float  # growth that any exact counter's turns inherit from the workload


def _encode_all(items: list[Item]) -> None:
    encode = get_encoding("o200k_base").encode_ordinary
    for item in items:
        if isinstance(item, FunctionCall):
            encode(item.name)
            encode(item.arguments)
        else:
            encode(item.text)


def raw_pass(items: list[Item]) -> float:
    """Seconds to encode every item's text once (tiktoken's ``encode_ordinary``)."""
    start = clock()
    _encode_all(items)
    return clock() - start


def raw_turns(items: list[tuple[Item, bool]]) -> list[float]:
    """Seconds of the raw pass over the items new at each model call."""
    turns, new = [], []
    for item, model_call in items:
        new.append(item)
        if model_call:
            start = clock()
            _encode_all(new)
            turns.append(clock() - start)
            new = []
    return turns


def _window(turns: list[float]) -> int:
    return min(1_000, max(1, len(turns) // 3))


def session_cost(
    items: list[tuple[Item, bool]],
    budget: int,
    instructions: str,
    tools: list[Tool],
    runs: int = 3,
) -> SessionCost:
    """Feed ``items`` to a memory, projecting before each model call, ``runs`` times.

    Each run starts cold (the process-wide text counts cleared, as in a new process, not warm
    from the texts an earlier run counted) and after a full garbage collection (an earlier
    run's garbage is not charged to this one). Every run does the same work call by call, so
    a call's cost is its fastest time over the runs (what a busy machine's noise can only add
    to); the first and last medians are taken over those, and likewise for the raw pass over
    each call's new items. The whole session's and the raw pass's totals are each the best
    run's.
    """
    totals: list[float] = []
    turn_runs: list[list[float]] = []
    raw_runs: list[list[float]] = []
    raws: list[float] = []
    for _ in range(runs):
        gc.collect()
        text_counts("o200k_base").clear()
        memory = InMemoryMemory()
        projector = ContextProjector(TiktokenCounter("o200k_base"), budget=budget)
        turns: list[float] = []
        for item, model_call in items:
            if isinstance(item, Message) and item.role == "user":
                memory.add_user_input(item)
            else:
                memory.add_output_items([item])
            if model_call:
                start = clock()
                projector.project(memory.snapshot(), instructions=instructions, tools=tools)
                turns.append(clock() - start)
        totals.append(sum(turns))
        turn_runs.append(turns)
        raw_runs.append(raw_turns(items))
        raws.append(raw_pass([item for item, _ in items]))
    turns = [min(times) for times in zip(*turn_runs, strict=True)]
    raw = [min(times) for times in zip(*raw_runs, strict=True)]
    window = _window(turns)
    return SessionCost(
        messages=len(items),
        budget=budget,
        raw=min(raws),
        total=min(totals),
        calls=len(turns),
        first=statistics.median(turns[:window]),
        last=statistics.median(turns[-window:]),
        raw_first=statistics.median(raw[:window]),
        raw_last=statistics.median(raw[-window:]),
    )


def fresh_copies(items: list[Item]) -> list[Item]:
    """New objects with the same content (as a stateless call reads them from JSON)."""
    return [type(item).model_validate(item.model_dump()) for item in items]


def cold_projection(
    items: list[Item], budget: int, summary: str, instructions: str, tools: list[Tool]
) -> float:
    """Seconds for a fresh projector to project new objects of ``items`` (median of 3)."""
    times = []
    for _ in range(3):
        copies = fresh_copies(items)
        snapshot = MemorySnapshot.model_construct(summary=summary, items=tuple(copies))
        start = clock()
        ContextProjector(TiktokenCounter("o200k_base"), budget=budget).project(
            snapshot, instructions=instructions, tools=tools
        )
        times.append(clock() - start)
    return statistics.median(times)


def langchain_call(
    trim: Callable[[list[Any]], list[Any]], messages: list[Any], repeats: int = 3
) -> float:
    times = []
    for _ in range(repeats):
        start = clock()
        trim(messages)
        times.append(clock() - start)
    return statistics.median(times)


def cached_counter_trimmer(budget: int) -> Callable[[list[Any]], list[Any]]:
    """``trim_messages`` with the tiktoken counter a careful user writes: cached per message."""
    from langchain_core.messages import BaseMessage, trim_messages

    encode = get_encoding("o200k_base").encode_ordinary
    cache: dict[int, tuple[BaseMessage, int]] = {}

    def one(message: BaseMessage) -> int:
        hit = cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        tokens = 4 + len(encode(message.text))
        for call in getattr(message, "tool_calls", None) or []:
            tokens += len(encode(call["name"])) + len(encode(str(call["args"])))
        cache[id(message)] = (message, tokens)
        return tokens

    def count(messages: list[BaseMessage]) -> int:
        return 3 + sum(one(message) for message in messages)

    def trim(messages: list[Any]) -> list[Any]:
        return trim_messages(
            messages,
            max_tokens=budget,
            token_counter=count,
            strategy="last",
            include_system=True,
            start_on="human",
        )

    return trim


def approximate_trimmer(budget: int) -> Callable[[list[Any]], list[Any]]:
    """``trim_messages`` with LangChain's own approximate counter (no tokenizer)."""
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    def trim(messages: list[Any]) -> list[Any]:
        return trim_messages(
            messages,
            max_tokens=budget,
            token_counter=count_tokens_approximately,
            strategy="last",
            include_system=True,
            start_on="human",
        )

    return trim


def take(stream: Iterator[tuple[Item, bool]], total: int) -> list[tuple[Item, bool]]:
    out = []
    for pair in stream:
        out.append(pair)
        if len(out) >= total:
            break
    return out
