"""Benchmark: the cost of one append to an SQLMemory session as the session grows, next to the
rewrite-the-session pattern of the reference SDK's JDBC memory.

Target (issue #8): on SQLite and PostgreSQL, the median cost of one append at 20,000 stored
items is within 2x of the cost at the start. The JDBC pattern (load every row, delete them all,
insert them all again, on every write) is measured on the same engine at 1k/10k/20k rows.

Sessions are filled with batch appends (one transaction per 1,000 items: the same rows and
indexes as single appends, much sooner), then measured with single ``add_user_input`` calls,
each its own committed transaction with compactkit's default durability. An append's cost is
the lowest median of five rounds, so that other work on the machine does not pass for growth.

PostgreSQL runs when ``COMPACTKIT_TEST_POSTGRES_URL`` is set (its tables are dropped after).
Run: ``python evals/benchmarks/bench_sql_append.py`` (``--tiny`` for CI's smoke run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, Text, delete, select

from compactkit._sqlschema import tables
from compactkit.items import Message
from compactkit.memory.sql import SQLMemory

TEXT = "the agent reads src/app.py and runs pytest; error: KeyError 'user_id' at line 42. " * 3


@dataclass(frozen=True)
class Plan:
    sizes: tuple[int, ...]  # session lengths where costs are measured (the first is "start")
    appends: int  # single appends timed at each size
    rewrites: int  # rewrites timed at each size


FULL = Plan(sizes=(0, 1_000, 10_000, 20_000), appends=300, rewrites=3)
TINY = Plan(sizes=(0, 200, 1_000), appends=40, rewrites=2)


def median_ms(repeats: int, step: Callable[[int], object], rounds: int = 1) -> float:
    """The median ms of ``step`` over ``repeats`` calls; with ``rounds``, the lowest median of
    that many rounds (a busy machine only ever adds time, so the best round is the cost)."""
    medians = []
    for _ in range(rounds):
        times = []
        for n in range(max(1, repeats // rounds)):
            start = time.perf_counter()
            step(n)
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times))
    return min(medians) * 1000


def bench_appends(url: str, prefix: str, plan: Plan) -> dict[int, float]:
    """Median ms per single append, measured when the session holds each size."""
    memory = SQLMemory(url, uuid.uuid4().hex, table_prefix=prefix)
    memory.add_user_input("warm up")
    costs = {}
    for size in plan.sizes:
        while len(memory.snapshot().items) < size:
            batch = min(1_000, size - len(memory.snapshot().items))
            memory.add_output_items([Message(role="assistant", content=TEXT)] * batch)
        costs[size] = median_ms(
            plan.appends, lambda n: memory.add_user_input(f"{n} {TEXT}"), rounds=5
        )
    return costs


def bench_rewrites(engine: Engine, prefix: str, plan: Plan) -> dict[int, float]:
    """Median ms per write for ai4j's JDBC memory: load all rows, delete all, insert all."""
    table = Table(
        f"{prefix}bench_rewrite",
        MetaData(),
        Column("session_id", String(191), primary_key=True),
        Column("entry_index", Integer, primary_key=True),
        Column("entry_json", Text),
    )
    table.create(engine, checkfirst=True)
    session_id = uuid.uuid4().hex
    payload = Message(role="assistant", content=TEXT).model_dump_json()
    rows: list[str] = []

    def write(_: int) -> None:
        with engine.begin() as conn:
            loaded = conn.execute(
                select(table.c.entry_json)
                .where(table.c.session_id == session_id)
                .order_by(table.c.entry_index)
            ).all()
            entries = [r.entry_json for r in loaded] + [payload]
            conn.execute(delete(table).where(table.c.session_id == session_id))
            conn.execute(
                table.insert(),
                [
                    {"session_id": session_id, "entry_index": i, "entry_json": e}
                    for i, e in enumerate(entries)
                ],
            )

    costs = {}
    try:
        for size in plan.sizes[1:]:
            rows.extend([payload] * (size - len(rows)))
            with engine.begin() as conn:  # fill to ``size`` rows at once
                conn.execute(delete(table).where(table.c.session_id == session_id))
                conn.execute(
                    table.insert(),
                    [
                        {"session_id": session_id, "entry_index": i, "entry_json": e}
                        for i, e in enumerate(rows)
                    ],
                )
            costs[size] = median_ms(plan.rewrites, write)
    finally:
        table.drop(engine)
    return costs


def run(name: str, url: str, prefix: str, plan: Plan) -> bool:
    appends = bench_appends(url, prefix, plan)
    engine = SQLMemory(url, "bench", table_prefix=prefix, create_schema=False).engine
    rewrites = bench_rewrites(engine, prefix, plan)
    start = appends[plan.sizes[0]]
    print(f"\n{name}: ms per write (median), session length in items")
    print(f"{'items':>8}  {'SQLMemory append':>16}  {'vs start':>8}  {'rewrite (JDBC)':>14}  ratio")
    for size in plan.sizes:
        rewrite = rewrites.get(size)
        print(
            f"{size:>8,}  {appends[size]:>16.2f}  {appends[size] / start:>7.2f}x  "
            + (f"{rewrite:>14.1f}  {rewrite / appends[size]:>4.0f}x" if rewrite else f"{'-':>14}")
        )
    growth = appends[plan.sizes[-1]] / start
    met = growth <= 2.0
    print(
        f"append at {plan.sizes[-1]:,} items: {growth:.2f}x the start (target <= 2x): "
        + ("met" if met else "MISSED")
    )
    return met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a few seconds (CI smoke run)")
    args = parser.parse_args()
    plan = TINY if args.tiny else FULL
    met = True
    with tempfile.TemporaryDirectory() as directory:
        met &= run("SQLite (file, WAL)", f"sqlite:///{directory}/bench.db", "compactkit_", plan)
    postgres = os.environ.get("COMPACTKIT_TEST_POSTGRES_URL")
    if postgres:
        prefix = f"bench{uuid.uuid4().hex[:8]}_"
        try:
            met &= run("PostgreSQL", postgres, prefix, plan)
        finally:
            engine = SQLMemory(postgres, "bench", table_prefix=prefix).engine
            tables(prefix).metadata.drop_all(engine)
    else:
        print("\nPostgreSQL skipped: set COMPACTKIT_TEST_POSTGRES_URL to include it")
    return 0 if met or args.tiny else 1  # the tiny run is too short to judge; it only runs


if __name__ == "__main__":
    sys.exit(main())
