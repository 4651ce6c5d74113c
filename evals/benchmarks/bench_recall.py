"""Benchmark: recall latency over a large archive, and what the index costs per item.

For each backend (in-process BM25, SQLite FTS5, PostgreSQL full-text search when
``COMPACTKIT_TEST_POSTGRES_URL`` is set) it stores N items (tool-log-like lines with a unique
identifier each), folds all but the last 10 with one compaction, then:

* ``index``: the first ``recall`` — it indexes the whole archive (later calls index only what
  is new);
* ``recall p50 / p99``: Q queries of an item's identifier and two of its words (each query's
  item is checked to be the first hit);
* ``no item holds every word``: p50 of 10 queries with a word no item holds, so the search
  falls back to the items holding any word (ranking every item that holds a common one);
* ``growth per item``: bytes the recall index adds per archived item (SQLite: file size with and
  without the index; PostgreSQL: ``pg_total_relation_size`` of the recall table).

Target (issue 28): recall p99 <= 50 ms at 100,000 archived items on SQLite and PostgreSQL.

Run: ``python evals/benchmarks/bench_recall.py [--items 100000] [--queries 300] [--tiny]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from compactkit import InMemoryMemory, Message
from compactkit.compressors import WindowedCompressor

WORDS = (
    "pytest build deploy staging retry timeout socket parser config cache worker queue "
    "migration schema index commit branch merge review lint format docker compose kube pod "
    "service ingress token budget summary archive vector shard replica leader follower"
).split()


FALLBACK_QUERIES = 10


def line(k: int, rng: random.Random) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(12))
    return f"step {k}: {words} -> id=req{k:07x} status={rng.choice([200, 404, 500])} in {k % 97} ms"


def fill(memory: Any, lines: list[str]) -> None:
    """Store ``lines`` as alternating user and assistant messages (turns the window can fold:
    the newest turn is never folded) and fold all but the last 10."""
    batch = 1000
    for start in range(0, len(lines), batch):
        memory.add_output_items(
            [
                Message(role="user" if (start + k) % 2 == 0 else "assistant", content=text)
                for k, text in enumerate(lines[start : start + batch])
            ]
        )
    memory.compact(WindowedCompressor(max_items=10))
    kept = len(memory.snapshot().items)
    if kept != 10:  # a bench over an archive that is not there measures nothing
        raise SystemExit(f"the compaction kept {kept} items, not 10: the archive is not filled")


def measure(
    memory: Any, lines: list[str], items: int, queries: int, rng: random.Random
) -> dict[str, float]:
    start = time.perf_counter()
    memory.recall("warm up the index")
    index_seconds = time.perf_counter() - start
    times = []
    wrong = 0
    for _ in range(queries):
        k = rng.randrange(items - 10)
        own = [w for w in lines[k].split() if w in WORDS]
        query = f"req{k:07x} {rng.choice(own)} {rng.choice(own)}"
        start = time.perf_counter()
        hits = memory.recall(query)
        times.append(time.perf_counter() - start)
        wrong += not hits or f"req{k:07x}" not in hits[0].text
    times.sort()
    # Queries no item holds whole (one word is in no item): the any-word match ranks every
    # item holding one of the others, the slow path.
    fallback = []
    for n in range(FALLBACK_QUERIES):
        query = f"{rng.choice(WORDS)} {rng.choice(WORDS)} absent{n}word"
        start = time.perf_counter()
        memory.recall(query)
        fallback.append(time.perf_counter() - start)
    return {
        "index_s": index_seconds,
        "fallback_p50_ms": 1000 * statistics.median(fallback),
        "p50_ms": 1000 * statistics.median(times),
        "p99_ms": 1000 * times[min(len(times) - 1, int(0.99 * len(times)))],
        "wrong_first_hit": float(wrong),
    }


def sqlite_growth(path: Path) -> int:
    return path.stat().st_size + sum(
        p.stat().st_size for p in path.parent.glob(path.name + "-*") if p.exists()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--tiny", action="store_true", help="2,000 items, 30 queries (CI)")
    args = parser.parse_args()
    items, queries = (2000, 30) if args.tiny else (args.items, args.queries)
    from compactkit.sql import SQLMemory

    rows = []
    rng = random.Random(28)
    lines = [line(k, rng) for k in range(items)]
    memory: Any = InMemoryMemory()
    fill(memory, lines)
    rows.append(("in-process BM25", measure(memory, lines, items, queries, rng), None))

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        memory = SQLMemory(f"sqlite:///{path}", "bench")
        fill(memory, lines)
        with memory.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        before = sqlite_growth(path)
        result = measure(memory, lines, items, queries, rng)
        with memory.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        rows.append(("SQLite FTS5", result, (sqlite_growth(path) - before) / (items - 10)))
        memory.engine.dispose()

    url = os.environ.get("COMPACTKIT_TEST_POSTGRES_URL")
    if url:
        from sqlalchemy import create_engine, text

        from compactkit.sql._schema import tables

        prefix = f"b{uuid.uuid4().hex[:8]}_"
        engine = create_engine(url)
        try:
            memory = SQLMemory(engine, "bench", table_prefix=prefix)
            fill(memory, lines)
            result = measure(memory, lines, items, queries, rng)
            with engine.connect() as conn:
                size = conn.execute(
                    text(f"SELECT pg_total_relation_size('{prefix}recall')")
                ).scalar_one()
            rows.append(("PostgreSQL tsvector+GIN", result, size / (items - 10)))
        finally:
            tables(prefix).metadata.drop_all(engine)
            engine.dispose()

    print(f"recall over {items - 10:,} archived items, {queries} queries (target p99 <= 50 ms)")
    print(
        "| backend | index all (s) | p50 (ms) | p99 (ms) | wrong first hit | index bytes/item "
        "| no item holds every word: p50 (ms) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r, growth in rows:
        per_item = "-" if growth is None else f"{growth:,.0f}"
        print(
            f"| {name} | {r['index_s']:.2f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
            f"{r['wrong_first_hit']:.0f} | {per_item} | {r['fallback_p50_ms']:.1f} |"
        )
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
