"""Code the SQL tests run in other processes (kept free of pytest so workers start fast)."""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from typing import Any

from compactkit.items import item_text
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot
from compactkit.sql.memory import SQLMemory


def keep_last(snapshot: MemorySnapshot, n: int) -> CompactResult:
    """Fold all but the last ``n`` items into the summary (joined with `` | ``)."""
    if len(snapshot.items) <= n:
        return CompactResult(
            snapshot=snapshot, outcome="unchanged", stats=CompactStats(compressor="keep-last")
        )
    folded = snapshot.items[:-n]
    summary = " | ".join([s for s in (snapshot.summary, *map(item_text, folded)) if s])
    return CompactResult(
        snapshot=snapshot.model_copy(update={"items": snapshot.items[-n:], "summary": summary}),
        folded=folded,
        outcome="compacted",
        stats=CompactStats(
            compressor="keep-last",
            items_before=len(snapshot.items),
            items_after=n,
            tokens_before=100,
            tokens_after=10,
            details={"model": "gpt-test", "prompt_version": "v3"},
        ),
    )


def append(url: str, prefix: str, session_id: str, worker: int, count: int) -> None:
    """Append ``count`` user inputs, a call and its output for each, tagged by worker."""
    memory = SQLMemory(url, session_id, table_prefix=prefix)
    for n in range(count):
        memory.add_user_input(f"w{worker}-{n}")
        call = {"id": f"w{worker}-c{n}", "type": "function", "function": {"name": "ls"}}
        memory.add_output_items([{"role": "assistant", "content": None, "tool_calls": [call]}])
        memory.add_tool_output(f"w{worker}-c{n}", f"w{worker}-o{n}")


def compact(url: str, prefix: str, session_id: str, crash_at: str) -> None:
    """Apply one keep-last-1 compaction, dying at the injection point ``crash_at``."""
    os.environ["COMPACTKIT_TEST_CRASH_AT"] = crash_at
    memory = SQLMemory(url, session_id, table_prefix=prefix)
    memory.apply(keep_last(memory.snapshot(), 1))


def start(target: Callable[..., None], *calls: tuple[Any, ...]) -> list[BaseProcess]:
    """Start ``target(*args)`` for each ``args`` in ``calls``, each in a process of its own.

    Forks where the platform can and no other thread runs (fast: nothing is imported again;
    forking a process with threads may deadlock its child), else spawns.
    """
    can_fork = "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context(
        "fork" if can_fork and threading.active_count() == 1 else "spawn"
    )
    processes: list[BaseProcess] = [context.Process(target=target, args=a) for a in calls]
    for process in processes:
        process.start()
    return processes


def join(processes: list[BaseProcess]) -> list[int | None]:
    """Wait for ``processes``; their exit codes."""
    for process in processes:
        process.join(timeout=120)
    return [process.exitcode for process in processes]


def run(target: Callable[..., None], *calls: tuple[Any, ...]) -> list[int | None]:
    """``start`` then ``join``."""
    return join(start(target, *calls))


def first_start(url: str, prefix: str, session_id: str, worker: int) -> None:
    """Open a memory on tables that may not exist yet, and append one item."""
    SQLMemory(url, session_id, table_prefix=prefix).add_user_input(f"w{worker}")


def paced_append(url: str, prefix: str, session_id: str, count: int, interval: float) -> None:
    """Append ``count`` user inputs ``p0``, ``p1``, …, one every ``interval`` seconds (an agent
    that keeps writing while another worker compacts)."""
    import time

    memory = SQLMemory(url, session_id, table_prefix=prefix)
    for n in range(count):
        memory.add_user_input(f"p{n}")
        time.sleep(interval)


def leased_turns(
    url: str, prefix: str, session_id: str, worker: int, turns: int, size: int
) -> None:
    """Run ``turns`` turns of ``size`` user inputs ``w<worker>-t<turn>-<n>``, each turn in a
    ``lease_writes`` block: the first append takes the session lease, the last gives it back."""
    memory = SQLMemory(url, session_id, table_prefix=prefix)
    for turn in range(turns):
        with memory.lease_writes(holder=f"w{worker}", timeout=60.0) as held:
            for n in range(size):
                if n == size - 1:
                    held.release_with_next_append()
                memory.add_user_input(f"w{worker}-t{turn}-{n}")


def hold_write_lease(url: str, prefix: str, session_id: str, ready: str) -> None:
    """Take the session lease with an append (holder ``doomed``, ttl 3 s), say so in
    ``ready``, and hang inside the block until killed."""
    import time
    from pathlib import Path

    memory = SQLMemory(url, session_id, table_prefix=prefix)
    with memory.lease_writes(holder="doomed", ttl=3.0) as held:
        memory.add_user_input("doomed-1")
        assert held.lease is not None
        Path(ready).write_text(str(held.lease.token), encoding="utf-8")
        while True:
            time.sleep(1)
