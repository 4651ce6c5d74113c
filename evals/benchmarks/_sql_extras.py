"""Parts of ``bench_sql_append.py`` added for issue 18 and 17: an SQLMemory append against a
plain ``sqlite3`` insert on the same file and settings, ``InMemoryMemory`` writes as the
session grows, and compactions applied while another process keeps appending."""

from __future__ import annotations

import multiprocessing
import sqlite3
import statistics
import time
import uuid

from compactkit.errors import ConcurrencyError
from compactkit.items import FunctionCall, FunctionCallOutput, Message, item_text
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot
from compactkit.memory.in_memory import InMemoryMemory
from compactkit.sql.memory import SQLMemory


def plain_insert_ratio(path: str, text: str, rounds: int, block: int = 50) -> tuple[float, float]:
    """Median ms of an SQLMemory append and of a plain one-row ``sqlite3`` insert + commit on
    the same file, with the same journal mode and ``synchronous`` setting; blocks of each
    alternate, so both see the same moments of the machine."""
    memory = SQLMemory(f"sqlite:///{path}", uuid.uuid4().hex)
    memory.add_user_input("warm up")
    raw = memory.engine.raw_connection()
    try:
        synchronous = raw.driver_connection.execute("PRAGMA synchronous").fetchone()[0]  # type: ignore[union-attr]
    finally:
        raw.close()
    plain = sqlite3.connect(path, isolation_level=None)
    plain.execute("PRAGMA journal_mode=WAL")
    plain.execute(f"PRAGMA synchronous={synchronous}")
    plain.execute("CREATE TABLE IF NOT EXISTS plain_insert (id INTEGER PRIMARY KEY, payload TEXT)")
    ours: list[float] = []
    theirs: list[float] = []
    for _ in range(rounds):
        for _ in range(block):
            start = time.perf_counter()
            plain.execute("BEGIN IMMEDIATE")
            plain.execute("INSERT INTO plain_insert (payload) VALUES (?)", (text,))
            plain.execute("COMMIT")
            theirs.append(time.perf_counter() - start)
        for n in range(block):
            start = time.perf_counter()
            memory.add_user_input(f"{n} {text}")
            ours.append(time.perf_counter() - start)
    plain.close()
    return statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3


def in_memory_writes(size: int, writes: int) -> float:
    """Seconds for ``writes`` agent writes (input, call, output) to an ``InMemoryMemory``
    already holding ``size`` items, half of them calls and outputs."""
    memory = InMemoryMemory()
    for n in range(size // 2):
        memory.add_output_items([FunctionCall(call_id=f"old{n}", name="ls", arguments="{}")])
        memory.add_tool_output(f"old{n}", "ok")
    start = time.perf_counter()
    for n in range(writes // 3):
        memory.add_user_input(Message(role="user", content="next"))
        memory.add_output_items([FunctionCall(call_id=f"new{n}", name="ls", arguments="{}")])
        memory.add_output_items([FunctionCallOutput(call_id=f"new{n}", output="ok")])
    return time.perf_counter() - start


def keep_last(snapshot: MemorySnapshot, n: int) -> CompactResult:
    """Fold all but the last ``n`` items into the summary."""
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
        stats=CompactStats(compressor="keep-last"),
    )


def _append_paced(url: str, prefix: str, session_id: str, count: int, interval: float) -> None:
    memory = SQLMemory(url, session_id, table_prefix=prefix)
    for n in range(count):
        memory.add_user_input(f"p{n}")
        time.sleep(interval)


def compactions_under_appends(
    url: str, prefix: str, appends: int, summarizing: float = 0.05
) -> tuple[int, int, int]:
    """One process appends every 20 ms while this one compacts in a loop (keep the last 3,
    with ``summarizing`` seconds of work between reading the snapshot and applying, as a
    summarizer takes): ``(attempted, applied, refused with ConcurrencyError)``."""
    session = uuid.uuid4().hex
    memory = SQLMemory(url, session, table_prefix=prefix)
    memory.add_user_input("start")
    context = multiprocessing.get_context("fork")
    writer = context.Process(target=_append_paced, args=(url, prefix, session, appends, 0.02))
    writer.start()
    attempted = applied = refused = 0
    while writer.is_alive():
        result = keep_last(memory.snapshot(), 3)
        if not result.changed:
            continue
        time.sleep(summarizing)
        attempted += 1
        try:
            applied += memory.apply(result)
        except ConcurrencyError:
            refused += 1
    writer.join()
    return attempted, applied, refused
