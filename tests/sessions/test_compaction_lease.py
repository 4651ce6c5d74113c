"""The compaction lease with real processes: N compactors of one session (governed steps,
background compactions, ``memory.compact()``) on an SQLite file, PostgreSQL and Redis make one
summarizer call between them; nothing is lost and the summary lands once. A dead holder's lease
expires; a failed summarizer drops nothing and gives the lease back."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import compaction_workers
import pytest
import redis
import sql_workers
from redis_support import redis_url  # noqa: F401
from sql_support import POSTGRES_URL, needs_postgres

from compactkit.errors import ConfigError, SessionBusyError
from compactkit.items import Message, item_text
from compactkit.runtime.events import CompactionEvent, CompactionSkipped, Event

STORES = ["sqlite", pytest.param("postgresql", marks=needs_postgres), "redis"]
WRITES = 24  # what compaction_workers.fill writes: 12 user inputs, 12 answers


@pytest.fixture(params=STORES)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """(kind, location, prefix) of a fresh store."""
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        prefix = f"cktest:{uuid.uuid4().hex[:10]}"
        yield "redis", url, prefix
        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()
        return
    prefix = f"c{uuid.uuid4().hex[:8]}_"
    if request.param == "sqlite":
        yield "sqlite", f"sqlite:///{tmp_path}/compaction.db", prefix
        return
    assert POSTGRES_URL
    yield "postgresql", POSTGRES_URL, prefix


def memory(where: tuple[str, str, str], **options: Any) -> Any:
    kind, location, prefix = where
    return compaction_workers.open_memory(kind, location, prefix, "shared", **options)


def summarizer_calls(calls: Path) -> int:
    return len(calls.read_text(encoding="utf-8").splitlines()) if calls.exists() else 0


def run_compactors(
    where: tuple[str, str, str], tmp_path: Path, mode: str, workers: int, wait: float = 0.0
) -> list[dict[str, list[str]]]:
    kind, location, prefix = where
    calls = str(tmp_path / "calls")
    reports = [str(tmp_path / f"report-{w}.json") for w in range(workers)]
    start_at = time.time() + 1.0  # every worker starts at once
    args = [(kind, location, prefix, "shared", mode, calls, r, start_at, wait) for r in reports]
    assert sql_workers.run(compaction_workers.compact, *args) == [0] * workers
    return [json.loads(Path(r).read_text(encoding="utf-8")) for r in reports]


def assert_compacted_once(where: tuple[str, str, str]) -> None:
    """Every item is still in the history, once; the summary landed once."""
    reader = memory(where)
    texts = [item_text(item) for item in reader.history()]
    assert len(texts) == WRITES and len(set(texts)) == WRITES  # none lost, none duplicated
    snapshot = reader.snapshot()
    assert snapshot.summary.count("# Conversation summary") == 1
    assert reader.version == WRITES + 1  # the writes, then one compaction
    kept = [i.text for i in snapshot.items if isinstance(i, Message) and i.role == "user"]
    assert kept == ["turn 11: plan the launch of topic 11"]  # the last group stays whole


@pytest.mark.parametrize(
    ("mode", "workers"),
    [("step", 2), ("step", 8), ("background", 4), ("compact", 4)],
)
def test_compactors_of_one_session_make_one_summarizer_call(
    where: tuple[str, str, str], tmp_path: Path, mode: str, workers: int
) -> None:
    compaction_workers.fill(memory(where))
    reports = run_compactors(where, tmp_path, mode, workers)
    assert summarizer_calls(tmp_path / "calls") == 1
    assert_compacted_once(where)
    events = [kind for report in reports for kind in report["events"]]
    refused = [name for report in reports for name in report["refused"]]
    if mode == "step":
        assert events.count("compaction") == 1
        assert set(events) <= {"compaction", "compaction_skipped"}
    elif mode == "background":
        assert events.count("applied") == 1
        assert set(events) <= {"started", "applied", "compaction", "skipped"}
    else:
        assert all(name.startswith("SessionBusyError:") for name in refused)


def test_a_compactor_told_to_wait_waits_instead_of_skipping(
    where: tuple[str, str, str], tmp_path: Path
) -> None:
    compaction_workers.fill(memory(where))
    reports = run_compactors(where, tmp_path, "step", 3, wait=30.0)
    assert summarizer_calls(tmp_path / "calls") == 1  # the waiters found nothing left to do
    events = [kind for report in reports for kind in report["events"]]
    assert events == ["compaction"]  # no skip: they waited, read again, and were not due
    assert_compacted_once(where)


def test_a_dead_compactors_lease_expires_and_is_taken_over(
    where: tuple[str, str, str], tmp_path: Path
) -> None:
    kind, location, prefix = where
    compaction_workers.fill(memory(where))
    ready = tmp_path / "ready"
    (holder,) = sql_workers.start(
        compaction_workers.hold_compaction, (kind, location, prefix, "shared", str(ready))
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    calls = tmp_path / "calls"
    compressor = compaction_workers.summarizer(str(calls), pause=0.0)
    with pytest.raises(SessionBusyError, match="compacted by 'doomed'") as busy:
        memory(where).compact(compressor)
    assert busy.value.holder == "doomed" and summarizer_calls(calls) == 0
    assert holder.pid is not None
    os.kill(holder.pid, signal.SIGKILL)
    holder.join()
    time.sleep(1.2)  # its ttl (1 s) runs out, by the database's or server's clock
    memory(where).compact(compressor)
    assert summarizer_calls(calls) == 1
    assert_compacted_once(where)


@pytest.mark.parametrize("where", STORES[:2], indirect=True)
def test_a_failed_summarizer_drops_nothing_and_gives_the_lease_back(
    where: tuple[str, str, str], tmp_path: Path
) -> None:
    shared = memory(where)
    compaction_workers.fill(shared)
    before = shared.snapshot()
    events: list[Event] = []
    failing = compaction_workers.summarizer(str(tmp_path / "calls"), pause=0.0, fail=True)
    compaction_workers.governor(failing, events, background=False).step(shared)
    (compaction,) = [e for e in events if isinstance(e, CompactionEvent)]
    assert compaction.outcome in ("failed", "fallback") and summarizer_calls(tmp_path / "calls")
    after = memory(where).snapshot()
    if compaction.outcome == "failed":
        assert after.items == before.items and after.summary == before.summary
    assert len(memory(where).history()) == WRITES  # nothing dropped either way
    assert memory(where).take_compaction("next") == "next"  # the lease was given back


def test_a_skipped_step_calls_no_summarizer_and_says_who_holds_the_lease(
    where: tuple[str, str, str], tmp_path: Path
) -> None:
    shared = memory(where)
    compaction_workers.fill(shared)
    assert memory(where).take_compaction("worker-7") == "worker-7"
    events: list[Event] = []
    compressor = compaction_workers.summarizer(str(tmp_path / "calls"), pause=0.0)
    step = compaction_workers.governor(compressor, events, background=False).step(shared)
    (skipped,) = [e for e in events if isinstance(e, CompactionSkipped)]
    assert skipped.holder == "worker-7" and not step.compacted
    assert summarizer_calls(tmp_path / "calls") == 0
    memory(where).release_compaction("worker-7")
    compaction_workers.governor(compressor, events, background=False).step(shared)
    assert summarizer_calls(tmp_path / "calls") == 1
    assert_compacted_once(where)


@pytest.mark.parametrize("where", STORES, indirect=True)
@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("compaction_ttl", 0),
        ("compaction_ttl", -1.0),
        ("compaction_wait", -1),
        ("compaction_ttl", True),
    ],
)
def test_bad_compaction_options_are_config_errors(
    where: tuple[str, str, str], option: str, value: object
) -> None:
    with pytest.raises(ConfigError, match=option):
        memory(where, **{option: value})
