"""Many worker processes, one store: real processes (forked or spawned, never threads) on the
file store, an SQLite file, PostgreSQL and Redis. Afterwards no turn is lost or duplicated, and every
refusal is a typed error."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
import session_workers
import sql_workers
from redis_support import redis_url  # noqa: F401
from sql_support import needs_postgres

from compactkit.errors import LeaseLostError, SessionBusyError
from compactkit.items import Message

STORES = ["file", "sqlite", pytest.param("postgresql", marks=needs_postgres), "redis"]


def user_turns(kind: str, where: str, prefix: str, session_id: str) -> list[str]:
    """The user inputs a fresh process reads back for ``session_id``."""
    resumed = session_workers.agent(kind, where, prefix).resume(session_id)
    return [
        item.text
        for item in resumed.memory.snapshot().items
        if isinstance(item, Message) and item.role == "user"
    ]


def run_workers(
    where: tuple[str, str, str], tmp_path: Path, session_ids: list[str], turns: int
) -> list[dict[str, object]]:
    kind, location, prefix = where
    for session_id in set(session_ids):
        session_workers.agent(kind, location, prefix).new_session(session_id)
    reports = [str(tmp_path / f"report-{w}.json") for w in range(len(session_ids))]
    calls = [
        (kind, location, prefix, sid, w, turns, reports[w]) for w, sid in enumerate(session_ids)
    ]
    assert sql_workers.run(session_workers.run_turns, *calls) == [0] * len(calls)
    return [json.loads(Path(r).read_text(encoding="utf-8")) for r in reports]


@pytest.mark.parametrize("workers", [2, 4, 8])
def test_workers_resuming_one_session_lose_and_duplicate_no_turn(
    where: tuple[str, str, str], tmp_path: Path, workers: int
) -> None:
    turns = 3 if workers == 8 else 4
    reports = run_workers(where, tmp_path, ["shared"] * workers, turns)
    assert all(r["refused"] == [] for r in reports)  # each waited for the lease in turn
    found = Counter(user_turns(*where, "shared"))
    expected = {f"w{w}-t{n}" for w in range(workers) for n in range(turns)}
    assert set(found) == expected  # none lost
    assert set(found.values()) == {1}  # none duplicated


def test_workers_on_distinct_sessions_keep_their_own_turns(
    where: tuple[str, str, str], tmp_path: Path
) -> None:
    ids = [f"own-{w}" for w in range(4)]
    run_workers(where, tmp_path, ids, 3)
    for w, session_id in enumerate(ids):
        assert user_turns(*where, session_id) == [f"w{w}-t{n}" for n in range(3)]


def test_a_killed_lease_holder_is_taken_over_and_its_late_writes_are_refused(
    where: tuple[str, str, str], tmp_path: Path
) -> None:
    kind, location, prefix = where
    session_workers.agent(kind, location, prefix).new_session("s")
    ready = tmp_path / "ready"
    (holder,) = sql_workers.start(
        session_workers.hold_lease, (kind, location, prefix, "s", str(ready))
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    store, _ = session_workers.open_store(kind, location, prefix)
    with pytest.raises(SessionBusyError, match="'doomed' has held its lease") as busy:
        store.acquire("s", timeout=0.0)
    assert busy.value.holder == "doomed" and busy.value.session_id == "s"
    assert holder.pid is not None
    os.kill(holder.pid, signal.SIGKILL)
    holder.join()
    survivor = session_workers.agent(kind, location, prefix, lease_timeout=10.0).resume("s")
    survivor.run("after the crash")  # takes the dead holder's lease over
    assert user_turns(*where, "s") == ["after the crash"]


@pytest.mark.parametrize("where", STORES[1:], indirect=True)  # a file lock never expires
def test_a_run_whose_lease_was_taken_over_cannot_save(where: tuple[str, str, str]) -> None:
    kind, location, prefix = where
    agent = session_workers.agent(kind, location, prefix)
    stalled = agent.new_session("s")
    store = agent.store
    assert store is not None
    stalled.lease = store.acquire("s", ttl=0.2)  # type: ignore[attr-defined]
    time.sleep(0.3)  # it stalled past its ttl
    other = store.acquire("s", timeout=5.0)  # type: ignore[attr-defined]
    stalled.memory.fence(stalled.lease)  # type: ignore[attr-defined]
    with pytest.raises(LeaseLostError, match="was taken over"):
        stalled.memory.add_user_input("late")
    with pytest.raises(LeaseLostError, match="was taken over"):
        store.save(stalled)
    store.release(other)  # type: ignore[attr-defined]
    assert user_turns(*where, "s") == []
