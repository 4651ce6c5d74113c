"""Benchmark: appends from several processes to PostgreSQL, against the raw SQL insert.

Issue 35 (item 6): worker processes append to ``SQLMemory`` sessions at once — each to a session
of its own ("distinct"), then all to one session ("shared") — and, in the same run, insert the
same number of rows with a plain one-row ``INSERT`` + commit each (the raw floor: what any
durable append pays). Reported: appends per second over all processes, the p50/p99 of one
append, the ratio to the raw insert's throughput, and what was lost (items written by a call
that returned but not found afterwards; duplicated seqs) — it must be 0.

Target (issue 35): 8 processes, distinct sessions, >= 0.5x the raw INSERT throughput, 0 lost.
One shared session is serialised by its row lock (each append takes the next seq): reported,
no target.

Like with like: the raw insert is the driver's own (one prepared-free ``INSERT`` on the psycopg
cursor, then ``commit``: no SQLAlchemy on its path). A warm-up round of every kind runs first and
is not reported (process start-up, PostgreSQL's caches, the WAL files); then ``rounds`` rounds
(3, or 2 with ``--tiny``), each running the three kinds in a rotated order, so no kind always
runs first or last. Each round's ratio is reported, then their median and minimum.

Needs ``COMPACTKIT_TEST_POSTGRES_URL`` (a PostgreSQL URL; its tables, under a fresh prefix, are
dropped afterwards); without it the benchmark prints why and exits 0.
Run: ``python evals/benchmarks/bench_pg_append.py`` (``--tiny`` for CI's smoke run).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    func,
    select,
)

URL_ENV = "COMPACTKIT_TEST_POSTGRES_URL"
TEXT = "the agent reads src/app.py and runs pytest; error: KeyError 'user_id' at line 42. "


@dataclass(frozen=True)
class Plan:
    workers: int
    appends: int  # per worker
    rounds: int


FULL = Plan(workers=8, appends=400, rounds=3)
TINY = Plan(workers=2, appends=30, rounds=2)
KINDS = ("raw", "distinct", "shared")


def _raw_table(prefix: str) -> Table:
    return Table(
        f"{prefix}raw",
        MetaData(),
        Column("id", BigInteger, primary_key=True, autoincrement=True),
        Column("session_id", String(255), nullable=False),
        Column("payload", Text, nullable=False),
    )


def _worker(kind: str, url: str, prefix: str, session_id: str, count: int, start: Any) -> Any:
    """Run in a child: ``count`` appends of ``kind``; the latencies (s) and wall time."""
    from compactkit.sql import SQLMemory

    engine = create_engine(url, pool_size=1)
    latencies: list[float] = []
    try:
        if kind == "raw":
            raw = engine.raw_connection()  # the driver's connection: no SQLAlchemy per insert
            try:
                cursor = raw.driver_connection.cursor()  # type: ignore[union-attr]
                insert = (
                    f"INSERT INTO {_raw_table(prefix).name} (session_id, payload) VALUES (%s, %s)"
                )
                start.wait()
                began = time.perf_counter()
                for _ in range(count):
                    t0 = time.perf_counter()
                    cursor.execute(insert, (session_id, TEXT))
                    raw.driver_connection.commit()  # type: ignore[union-attr]
                    latencies.append(time.perf_counter() - t0)
            finally:
                raw.close()
        else:
            memory = SQLMemory(engine, session_id, table_prefix=prefix)
            memory.snapshot()  # the session row exists before the clock starts
            start.wait()
            began = time.perf_counter()
            for n in range(count):
                t0 = time.perf_counter()
                memory.add_user_input(f"{TEXT}{session_id} {n}")
                latencies.append(time.perf_counter() - t0)
        wall = time.perf_counter() - began
    finally:
        engine.dispose()
    return latencies, wall


def _run(kind: str, url: str, prefix: str, plan: Plan) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")  # no engine or pool crosses a fork
    start = context.Manager().Barrier(plan.workers)
    ids = (
        [f"shared-{uuid.uuid4().hex[:6]}"] * plan.workers
        if kind == "shared"
        else [f"w{k}-{uuid.uuid4().hex[:6]}" for k in range(plan.workers)]
    )
    kind = "raw" if kind == "raw" else "memory"
    with context.Pool(plan.workers) as pool:
        began = time.perf_counter()
        results = pool.starmap(
            _worker, [(kind, url, prefix, sid, plan.appends, start) for sid in ids]
        )
        elapsed = time.perf_counter() - began
    latencies = sorted(x for r, _ in results for x in r)
    wall = max(w for _, w in results)  # the slowest worker: all started at the barrier
    total = plan.workers * plan.appends
    return {
        "appends": total,
        "per_s": total / wall,
        "p50_ms": statistics.median(latencies) * 1e3,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3,
        "wall_s": wall,
        "elapsed_s": elapsed,
        "ids": sorted(set(ids)),
    }


def _lost(url: str, prefix: str, ids: list[str], expected_each: int) -> tuple[int, int]:
    """(lost, duplicated) items of ``ids``' sessions, read back by a fresh engine."""
    from compactkit.sql._schema import tables

    t = tables(prefix)
    engine = create_engine(url)
    lost = duplicated = 0
    try:
        with engine.connect() as conn:
            for sid in ids:
                rows = conn.execute(
                    select(func.count(), func.count(t.items.c.seq.distinct())).where(
                        t.items.c.session_id == sid
                    )
                ).one()
                lost += max(0, expected_each - rows[0])
                duplicated += rows[0] - rows[1]
    finally:
        engine.dispose()
    return lost, duplicated


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="CI smoke run (a few seconds)")
    args = parser.parse_args()
    url = os.environ.get(URL_ENV)
    if not url or not url.startswith("postgresql"):
        print(f"bench_pg_append: skipped — set {URL_ENV} to a PostgreSQL URL to run it")
        return
    plan = TINY if args.tiny else FULL
    prefix = f"bench{uuid.uuid4().hex[:8]}_"
    from compactkit.sql import SQLMemory
    from compactkit.sql._schema import tables

    engine = create_engine(url)
    SQLMemory(engine, "setup", table_prefix=prefix).snapshot()  # create the tables once
    raw_table = _raw_table(prefix)
    raw_table.metadata.create_all(engine)
    rounds: list[dict[str, dict[str, Any]]] = []
    lost = duplicated = 0
    try:
        warm = Plan(plan.workers, max(10, plan.appends // 10), 1)
        for kind in KINDS:  # warm-up, not reported
            _run(kind, url, prefix, warm)
        for number in range(plan.rounds):
            order = KINDS[number % 3 :] + KINDS[: number % 3]  # each kind first in turn
            results = {kind: _run(kind, url, prefix, plan) for kind in order}
            for kind in ("distinct", "shared"):
                each = plan.appends * (plan.workers if kind == "shared" else 1)
                found = _lost(url, prefix, results[kind]["ids"], each)
                results[kind]["lost"] = found
                lost, duplicated = lost + found[0], duplicated + found[1]
            results["order"] = {"kinds": list(order)}
            rounds.append(results)
        with engine.connect() as conn:
            raw_rows = conn.execute(select(func.count()).select_from(raw_table)).scalar() or 0
    finally:
        raw_table.metadata.drop_all(engine)
        tables(prefix).metadata.drop_all(engine)
        engine.dispose()
    raw_expected = plan.workers * (warm.appends + plan.appends * plan.rounds)
    print(
        f"PostgreSQL, {plan.workers} processes x {plan.appends} appends each, {plan.rounds} rounds "
        "after a warm-up (appends/s over all processes; one append's p50/p99; ratio = / the "
        "same round's raw INSERT appends/s)"
    )
    ratios = []
    for number, results in enumerate(rounds, 1):
        raw = results["raw"]
        print(f" round {number} (order: {', '.join(results['order']['kinds'])})")
        print(
            f"  raw INSERT + commit       {raw['per_s']:8,.0f}/s  p50 {raw['p50_ms']:6.2f} ms  "
            f"p99 {raw['p99_ms']:6.2f} ms"
        )
        for name, kind in (
            ("SQLMemory, distinct", "distinct"),
            ("SQLMemory, one session", "shared"),
        ):
            result = results[kind]
            print(
                f"  {name:<25} {result['per_s']:8,.0f}/s  p50 {result['p50_ms']:6.2f} ms  "
                f"p99 {result['p99_ms']:6.2f} ms  ratio {result['per_s'] / raw['per_s']:.2f}x  "
                f"lost {result['lost'][0]}, duplicated {result['lost'][1]}"
            )
        ratios.append(results["distinct"]["per_s"] / raw["per_s"])
    print(f"raw rows read back: {raw_rows}/{raw_expected}")
    median, least = statistics.median(ratios), min(ratios)
    met = least >= 0.5 and lost == duplicated == 0
    print(
        f"target (distinct >= 0.5x raw in every round, 0 lost): {'met' if met else 'NOT met'} "
        f"(ratios {', '.join(f'{r:.2f}x' for r in ratios)}; median {median:.2f}x, "
        f"min {least:.2f}x; lost {lost}, duplicated {duplicated})"
    )
    if lost or duplicated or raw_rows != raw_expected:
        sys.exit(1)


if __name__ == "__main__":
    main()
