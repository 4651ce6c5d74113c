"""Benchmark: N worker processes appending to a store, with and without the session lease.

Issue #26 item 6. Workers are real processes (forked where the platform can, else spawned),
started together. Each appends ``appends`` user inputs, one committed write each, in turns of
``TURN`` appends — the shape of an agent run:

* ``plain``: ``memory.add_user_input`` on a memory that is not fenced (no lease at all);
* ``leased``: each turn holds the session lease. On SQL the turn is a
  ``memory.lease_writes()`` block: its first append takes the lease in its own transaction
  (waiting when another worker holds it), the others are fenced by it, and the last one gives
  it back (``release_with_next_append``). On Redis (no such block) the turn takes it with
  ``store.acquire``, fences the memory by it, appends, and gives it back with
  ``store.release``.

Sessions are ``distinct`` (one per worker: the lease never waits) or ``one`` shared session
(the lease serialises the workers' turns; plain appends interleave). Reported per row:
throughput (appends/s over the wall time of the slowest worker) and p50/p99 latency of one
append. The lease's cost is given as ratios measured in the same run, by one worker with
interleaved probes: the p50 of a whole turn of ``TURN`` appends with its lease over a plain
turn's (target <= 1.1x, issue #26) — the turn as above and, for comparison, one that takes
and gives back the lease in transactions of their own (``store.acquire`` / ``release``) —, a
fenced append's p50 over a plain one's, and the p50/p99 of an uncontended acquire + release
and of the compaction lease (take + release) next to a plain append's p50.

SQLite runs on a temporary file; PostgreSQL when ``COMPACTKIT_TEST_POSTGRES_URL`` is set (its
tables are dropped afterwards), else the reason it was skipped is printed; Redis likewise on
``COMPACTKIT_TEST_REDIS_URL``. Run: ``python evals/benchmarks/bench_workers.py`` (``--tiny`` for
CI's smoke run).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TURN = 10  # appends per turn (per lease, in the leased mode)


@dataclass(frozen=True)
class Plan:
    workers: tuple[int, ...]
    appends: int  # per worker
    probes: int  # interleaved one-worker probes (turns of each kind, lease acquisitions)


FULL = Plan(workers=(1, 2, 4, 8), appends=1_000, probes=200)
TINY = Plan(workers=(1, 2), appends=10, probes=5)


def open_parts(kind: str, where: str, prefix: str, session_id: str) -> tuple[Any, Any]:
    """The store and the memory of ``session_id`` on ``kind`` (``sql`` or ``redis``)."""
    if kind == "redis":
        from compactkit.redis import RedisMemory, RedisSessionStore

        return (
            RedisSessionStore(where, key_prefix=prefix),
            RedisMemory(where, session_id, key_prefix=prefix),
        )
    from compactkit.sql import SQLMemory, SQLSessionStore

    return (
        SQLSessionStore(where, table_prefix=prefix),
        SQLMemory(where, session_id, table_prefix=prefix),
    )


def worker(
    kind: str,
    where: str,
    prefix: str,
    session_id: str,
    leased: bool,
    appends: int,
    start_at: float,
    out: str,
) -> None:
    """Append ``appends`` inputs in turns of ``TURN``; write the latencies to ``out``."""
    store, memory = open_parts(kind, where, prefix, session_id)
    _ = memory.version  # connect before the start, as a long-running worker has
    latencies: list[float] = []
    time.sleep(max(0.0, start_at - time.time()))
    begin = time.perf_counter()
    for first in range(0, appends, TURN):
        texts = [f"{os.getpid()}-{n}" for n in range(first, min(first + TURN, appends))]
        if not leased:
            plain_turn(memory, texts, latencies)
        elif kind == "sql":
            leased_turn(memory, texts, latencies)
        else:
            acquired_turn(store, memory, session_id, texts, latencies)
    wall = time.perf_counter() - begin
    Path(out).write_text(json.dumps({"latencies": latencies, "wall": wall}), encoding="utf-8")


def plain_turn(memory: Any, texts: list[str], latencies: list[float]) -> None:
    """Append ``texts``, no lease; each append's seconds go to ``latencies``."""
    for text in texts:
        started = time.perf_counter()
        memory.add_user_input(text)
        latencies.append(time.perf_counter() - started)


def leased_turn(memory: Any, texts: list[str], latencies: list[float]) -> None:
    """Append ``texts`` under the session lease carried by the appends themselves
    (``SQLMemory.lease_writes``: taken by the first, given back by the last)."""
    with memory.lease_writes(timeout=600.0) as held:
        for k, text in enumerate(texts):
            if k == len(texts) - 1:
                held.release_with_next_append()
            started = time.perf_counter()
            memory.add_user_input(text)
            latencies.append(time.perf_counter() - started)


def acquired_turn(
    store: Any, memory: Any, session_id: str, texts: list[str], latencies: list[float]
) -> None:
    """Append ``texts`` under a lease taken and given back in transactions of their own."""
    lease = store.acquire(session_id, timeout=600.0)
    memory.fence(lease)
    try:
        plain_turn(memory, texts, latencies)
    finally:
        memory.fence(None)
        store.release(lease)


@dataclass(frozen=True)
class Row:
    workers: int
    sessions: str
    leased: bool
    throughput: float  # appends per second
    p50: float  # ms per append
    p99: float


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def run_row(
    kind: str, where: str, prefix: str, workers: int, shared: bool, leased: bool, appends: int
) -> Row:
    tag = uuid.uuid4().hex[:6]
    ids = [f"one-{tag}" if shared else f"own-{tag}-{w}" for w in range(workers)]
    can_fork = "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if can_fork else "spawn")
    with tempfile.TemporaryDirectory() as directory:
        outs = [f"{directory}/w{w}.json" for w in range(workers)]
        start_at = time.time() + 0.5 + 0.1 * workers
        processes = [
            context.Process(  # type: ignore[attr-defined]
                target=worker,
                args=(kind, where, prefix, ids[w], leased, appends, start_at, outs[w]),
            )
            for w in range(workers)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join()
        if any(process.exitcode != 0 for process in processes):
            raise SystemExit(f"a worker failed ({[p.exitcode for p in processes]})")
        reports = [json.loads(Path(out).read_text(encoding="utf-8")) for out in outs]
    latencies = [value for report in reports for value in report["latencies"]]
    wall = max(report["wall"] for report in reports)
    return Row(
        workers,
        "one" if shared else "distinct",
        leased,
        len(latencies) / wall,
        pct(latencies, 0.5),
        pct(latencies, 0.99),
    )


def probe_leases(kind: str, where: str, prefix: str, probes: int) -> dict[str, list[float]]:
    """Seconds of whole turns of ``TURN`` appends (plain; leased as the workers do; with an
    acquire and a release of their own), of one plain and one fenced append, of an uncontended
    acquire + release and of a compaction-lease take + release — interleaved, so that drift
    hits all alike."""
    session_id = f"probe-{uuid.uuid4().hex[:6]}"
    store, memory = open_parts(kind, where, prefix, session_id)
    memory.add_user_input("warm up")
    kinds = ("turn", "leased turn", "acquired turn", "plain", "fenced", "session", "compaction")
    timed: dict[str, list[float]] = {what: [] for what in kinds}
    texts = [f"probe {n}" for n in range(TURN)]
    for _ in range(probes):
        appends: list[float] = []
        started = time.perf_counter()
        plain_turn(memory, texts, appends)
        timed["turn"].append(time.perf_counter() - started)
        timed["plain"].extend(appends)
        started = time.perf_counter()
        if kind == "sql":
            leased_turn(memory, texts, [])
        else:
            acquired_turn(store, memory, session_id, texts, [])
        timed["leased turn"].append(time.perf_counter() - started)
        appends = []
        started = time.perf_counter()
        acquired_turn(store, memory, session_id, texts, appends)
        timed["acquired turn"].append(time.perf_counter() - started)
        timed["fenced"].extend(appends)
        started = time.perf_counter()
        lease = store.acquire(session_id)
        store.release(lease)
        timed["session"].append(time.perf_counter() - started)
        started = time.perf_counter()
        memory.take_compaction("probe")
        memory.release_compaction("probe")
        timed["compaction"].append(time.perf_counter() - started)
    return timed


def verdict(ratio: float) -> str:
    return f"{ratio:.2f}x (target <= 1.1x: " + ("met" if ratio <= 1.1 else "MISSED") + ")"


def report_probes(kind: str, timed: dict[str, list[float]]) -> None:
    plain, fenced = pct(timed["plain"], 0.5), pct(timed["fenced"], 0.5)
    turn = pct(timed["turn"], 0.5)
    how = (
        "lease taken by its first append, given back by its last"
        if kind == "sql"
        else "store.acquire + store.release"
    )
    print(
        f"one worker, interleaved probes ({len(timed['turn'])} turns of each kind, p50):\n"
        f"  A TURN OF {TURN} APPENDS WITH ITS SESSION LEASE / WITHOUT: "
        f"{verdict(pct(timed['leased turn'], 0.5) / turn)}\n"
        f"    ({how}; plain turn {turn:.3f} ms)"
    )
    if kind == "sql":
        print(
            "  for comparison, the lease in transactions of its own (acquire + release): "
            f"{pct(timed['acquired turn'], 0.5) / turn:.2f}x"
        )
    print(
        f"  one fenced append / one plain append: {fenced:.3f} / {plain:.3f} ms = "
        f"{verdict(fenced / plain)}"
    )
    for what, label in (
        ("session", "session lease acquire + release"),
        ("compaction", "compaction lease take + release"),
    ):
        p50, p99 = pct(timed[what], 0.5), pct(timed[what], 0.99)
        print(f"  {label}: p50 {p50:.3f} ms, p99 {p99:.3f} ms ({p50 / plain:.2f}x a plain append)")


def bench(name: str, kind: str, where: str, prefix: str, plan: Plan) -> None:
    print(f"\n{name}: {plan.appends:,} appends per worker, turns of {TURN}")
    print(
        f"{'workers':>7}  {'sessions':>8}  {'lease':>6}  {'appends/s':>10}  {'p50 ms':>7}  "
        f"{'p99 ms':>7}"
    )
    rows: dict[tuple[int, str, bool], Row] = {}
    # A warm-up row (tables, caches, the first connections), not reported.
    run_row(kind, where, prefix, 1, False, True, max(TURN, plan.appends // 10))
    for workers in plan.workers:
        for shared in (False, True):
            # Plain first, then leased first: a drift of the machine favours neither.
            for leased in (False, True) if shared == (workers % 2 == 0) else (True, False):
                row = run_row(kind, where, prefix, workers, shared, leased, plan.appends)
                rows[(workers, row.sessions, leased)] = row
                print(
                    f"{workers:>7}  {row.sessions:>8}  {'yes' if leased else 'no':>6}  "
                    f"{row.throughput:>10,.0f}  {row.p50:>7.2f}  {row.p99:>7.2f}"
                )
    print("leased / plain, same run (p50 of one append; throughput):")
    for (workers, sessions, leased), row in sorted(rows.items()):
        if leased:
            base = rows[(workers, sessions, False)]
            print(
                f"  {workers} workers, {sessions:>8} sessions: p50 {row.p50 / base.p50:.2f}x, "
                f"throughput {row.throughput / base.throughput:.2f}x"
            )
    report_probes(kind, probe_leases(kind, where, prefix, plan.probes))


def drop_sql(url: str, prefix: str) -> None:
    from sqlalchemy import MetaData, create_engine

    engine = create_engine(url)
    meta = MetaData()
    meta.reflect(engine)
    ours = [t for t in meta.sorted_tables if t.name.startswith(prefix)]
    meta.drop_all(engine, tables=ours)
    engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a few seconds (CI smoke run)")
    parser.add_argument("--appends", type=int, help="appends per worker (default 1,000)")
    parser.add_argument(
        "--stores",
        default="sqlite,postgresql,redis",
        help="which stores to run, comma-separated (default: all three)",
    )
    args = parser.parse_args()
    plan = TINY if args.tiny else FULL
    if args.appends:
        plan = Plan(plan.workers, args.appends, plan.probes)
    stores = set(args.stores.split(","))
    if "sqlite" in stores:
        with tempfile.TemporaryDirectory() as directory:
            bench("SQLite (file, WAL)", "sql", f"sqlite:///{directory}/workers.db", "bw_", plan)
    postgres = os.environ.get("COMPACTKIT_TEST_POSTGRES_URL")
    if "postgresql" not in stores:
        pass
    elif postgres:
        prefix = f"bw{uuid.uuid4().hex[:6]}_"
        try:
            bench("PostgreSQL", "sql", postgres, prefix, plan)
        finally:
            drop_sql(postgres, prefix)
    else:
        print("\nPostgreSQL: skipped (set COMPACTKIT_TEST_POSTGRES_URL to a database to run it)")
    redis_url = os.environ.get("COMPACTKIT_TEST_REDIS_URL")
    if "redis" not in stores:
        pass
    elif redis_url:
        import redis

        prefix = f"bw:{uuid.uuid4().hex[:6]}"
        try:
            bench("Redis", "redis", redis_url, prefix, plan)
        finally:
            client = redis.Redis.from_url(redis_url)
            keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
            if keys:
                client.delete(*keys)
            client.close()
    else:
        print("\nRedis: skipped (set COMPACTKIT_TEST_REDIS_URL to a server to run it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
