"""The Redis row of bench_sql_append: RedisMemory's append, read of the active window and
compaction, each as a ratio of the raw ``redis`` client call doing the same storage work.

* append: ``add_user_input`` (WATCH, counters, MULTI: RPUSH + HSET history + counters, EXEC)
  vs one raw ``RPUSH`` of the same JSON;
* read (per step): ``snapshot()`` after one append to a warm memory (it fetches only the new
  item) vs a raw ``LRANGE key -1 -1``; read (cold): a new handle's first ``snapshot()`` vs a raw
  ``LRANGE key 0 -1`` of the whole window;
* compaction: ``apply`` of a result keeping the last 50 items (read, version check, one
  MULTI/EXEC) vs a raw pipeline writing the same 50 items (DEL + RPUSH + HSET, one EXEC).

The server is ``COMPACTKIT_TEST_REDIS_URL``, else a ``redis-server`` started on a free port.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from compactkit.items import Message
from compactkit.items.snapshot import CompactResult, CompactStats

REDIS_URL = os.environ.get("COMPACTKIT_TEST_REDIS_URL", "")


@contextmanager
def redis_server() -> Iterator[str | None]:
    """A Redis URL (``None`` when there is neither a URL nor a redis-server binary)."""
    if REDIS_URL:
        yield REDIS_URL
        return
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as directory:
        server = subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            cwd=directory,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            import redis

            client = redis.Redis(port=port)
            for _ in range(100):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            client.close()
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            server.terminate()
            server.wait(timeout=10)


def _median_ms(repeats: int, step: Callable[[int], object]) -> float:
    times = []
    for n in range(repeats):
        start = time.perf_counter()
        step(n)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def redis_row(url: str, size: int, repeats: int, text: str) -> dict[str, tuple[float, float]]:
    """``{operation: (RedisMemory ms, raw client ms)}`` on a session of ``size`` items."""
    import redis

    from compactkit.redis import RedisMemory
    from compactkit.redis._keys import dump_item

    client = redis.Redis.from_url(url)
    prefix = f"bench:{uuid.uuid4().hex[:8]}"
    try:
        memory = RedisMemory(client, "s", key_prefix=prefix)
        for start in range(0, size, 1_000):
            memory.add_output_items(
                [
                    Message(role="assistant", content=f"{n} {text}")
                    for n in range(start, min(size, start + 1_000))
                ]
            )
        raw_key = f"{prefix}:raw"
        payload = dump_item(Message(role="user", content=text, seq=1))
        client.rpush(raw_key, *[payload] * size)
        memory.snapshot()
        rows: dict[str, tuple[float, float]] = {}
        rows["append"] = (
            _median_ms(repeats, lambda n: memory.add_user_input(f"{n} {text}")),
            _median_ms(repeats, lambda n: client.rpush(raw_key, payload)),
        )

        reads = []
        for n in range(repeats):  # a step: one new item, then the read the projector makes
            memory.add_user_input(f"step {n}")
            start = time.perf_counter()
            memory.snapshot()
            reads.append(time.perf_counter() - start)
        rows["read (per step)"] = (
            statistics.median(reads) * 1000,
            _median_ms(repeats, lambda n: client.lrange(raw_key, -1, -1)),
        )
        cold = max(1, repeats // 10)
        rows["read (cold, whole window)"] = (
            _median_ms(cold, lambda n: RedisMemory(client, "s", key_prefix=prefix).snapshot()),
            _median_ms(cold, lambda n: client.lrange(raw_key, 0, -1)),
        )

        def compact(n: int) -> None:
            snapshot = memory.snapshot()
            kept = snapshot.model_copy(update={"items": snapshot.items[-50:], "summary": f"s{n}"})
            memory.apply(
                CompactResult(
                    snapshot=kept, outcome="compacted", stats=CompactStats(compressor="b")
                )
            )
            memory.add_user_input("y")  # something to fold next time

        def raw_compact(n: int) -> None:
            pipe = client.pipeline(transaction=True)
            pipe.delete(raw_key)
            pipe.rpush(raw_key, *[payload] * 50)
            pipe.hset(f"{prefix}:rawmeta", mapping={"summary": f"s{n}", "version": n})
            pipe.execute()

        compactions = max(3, repeats // 5)
        rows["compaction (keep 50)"] = (
            _median_ms(compactions, compact),
            _median_ms(compactions, raw_compact),
        )
        return rows
    finally:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()


def print_redis_row(size: int, rows: dict[str, tuple[float, float]]) -> None:
    print(f"\nRedis (RedisMemory vs the raw redis client call), session of {size:,} items")
    print(f"{'operation':<28}{'RedisMemory':>14}{'raw call':>12}{'ratio':>9}")
    for name, (ours, raw) in rows.items():
        print(f"{name:<28}{ours:>11.3f} ms{raw:>9.3f} ms{ours / raw:>8.1f}x")
