"""The session lease carried by a turn's own writes (``SQLMemory.lease_writes``): taken in the
first write's transaction, given back in the last one's. Real processes on an SQLite file and
PostgreSQL: turns of different workers never interleave, a killed holder is taken over after
its ttl, and a writer whose lease was taken over is refused with a typed error and writes
nothing."""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
import sql_workers
from sql_support import Database, database, postgres  # noqa: F401

from compactkit.errors import ConfigError, LeaseLostError, SessionBusyError
from compactkit.items import Message
from compactkit.sql import SQLMemory, SQLSessionStore


@pytest.fixture
def db(database: Database) -> Database:  # noqa: F811
    """An SQLite file, then PostgreSQL (``sql_support.database``)."""
    return database


def texts(db: Database, session_id: str) -> list[str]:
    """The user inputs a fresh reader finds in the session's history, by seq."""
    memory = SQLMemory(db.url, session_id, table_prefix=db.prefix)
    return [i.text for i in memory.history() if isinstance(i, Message) and i.role == "user"]


def parts(db: Database, session_id: str) -> tuple[SQLSessionStore, SQLMemory]:
    return (
        SQLSessionStore(db.url, table_prefix=db.prefix),
        SQLMemory(db.url, session_id, table_prefix=db.prefix),
    )


@pytest.mark.parametrize("workers", [2, 8])
def test_turns_of_workers_on_one_session_never_interleave(db: Database, workers: int) -> None:
    session_id = f"shared-{uuid.uuid4().hex[:6]}"
    turns, size = 3, 3
    calls = [(db.url, db.prefix, session_id, w, turns, size) for w in range(workers)]
    assert sql_workers.run(sql_workers.leased_turns, *calls) == [0] * workers
    found = texts(db, session_id)
    expected = {f"w{w}-t{t}-{n}" for w in range(workers) for t in range(turns) for n in range(size)}
    assert set(found) == expected  # none lost
    assert set(Counter(found).values()) == {1}  # none duplicated
    # Each turn held the lease from its first append to its last: its inputs are adjacent.
    for start in range(0, len(found), size):
        turn = {text.rsplit("-", 1)[0] for text in found[start : start + size]}
        assert len(turn) == 1, found[start : start + size]
    store, _ = parts(db, session_id)
    store.release(store.acquire(session_id, timeout=0.0))  # every turn gave it back


def test_a_killed_holder_is_taken_over_after_its_ttl(db: Database, tmp_path: Path) -> None:
    session_id = f"killed-{uuid.uuid4().hex[:6]}"
    ready = tmp_path / "ready"
    (holder,) = sql_workers.start(
        sql_workers.hold_write_lease, (db.url, db.prefix, session_id, str(ready))
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    _, memory = parts(db, session_id)
    refused = pytest.raises(SessionBusyError, match="'doomed' has held its lease")
    with refused as busy, memory.lease_writes(holder="survivor", timeout=0.0):
        memory.add_user_input("refused")
    assert busy.value.holder == "doomed" and busy.value.since is not None
    assert texts(db, session_id) == ["doomed-1"]  # the refused append wrote nothing
    assert holder.pid is not None
    os.kill(holder.pid, signal.SIGKILL)
    holder.join()
    with memory.lease_writes(holder="survivor", timeout=30.0) as held:
        memory.add_user_input("after the crash")  # waits out the dead holder's ttl
        assert held.lease is not None and held.lease.token > int(ready.read_text())
    assert texts(db, session_id) == ["doomed-1", "after the crash"]


def test_a_writer_whose_lease_was_taken_over_is_refused_and_writes_nothing(
    db: Database,
) -> None:
    session_id = f"stalled-{uuid.uuid4().hex[:6]}"
    store, stalled = parts(db, session_id)
    _, other = parts(db, session_id)
    stalled.add_user_input("before")
    stalled_block = stalled.lease_writes(holder="stalled", ttl=0.2)
    lost = stalled_block.__enter__()
    stalled.add_user_input("a1")
    time.sleep(0.4)  # it stalled past its ttl
    with other.lease_writes(holder="other", timeout=5.0) as taken:
        other.add_user_input("b1")  # takes the expired lease over
        assert lost.lease is not None and taken.lease is not None
        assert taken.lease.token > lost.lease.token
        with pytest.raises(LeaseLostError, match="was taken over"):
            stalled.add_user_input("late")
        with pytest.raises(LeaseLostError, match="was taken over"):
            stalled.pin(1)
        with pytest.raises(LeaseLostError, match="was taken over"):
            stalled.clear()
        lost.release_with_next_append()
        with pytest.raises(LeaseLostError, match="was taken over"):
            stalled.add_user_input("late, releasing")
        stalled_block.__exit__(None, None, None)  # its end does not free the other's lease
        with pytest.raises(SessionBusyError, match="'other'"):
            store.acquire(session_id, timeout=0.0)
        taken.release_with_next_append()
        other.add_user_input("b2")  # gives it back
        assert taken.released
    store.release(store.acquire(session_id, timeout=0.0))
    assert texts(db, session_id) == ["before", "a1", "b1", "b2"]
    assert [i.pinned for i in stalled.snapshot().items] == [False] * 4


def test_fenced_appends_keep_the_lease_alive_past_its_ttl(db: Database) -> None:
    session_id = f"alive-{uuid.uuid4().hex[:6]}"
    store, memory = parts(db, session_id)
    with memory.lease_writes(holder="busy", ttl=2.0):
        for n in range(7):  # 3 s of appends, one every 0.5 s: longer than the ttl
            memory.add_user_input(f"step {n}")
            time.sleep(0.5)
        with pytest.raises(SessionBusyError, match="'busy'"):
            store.acquire(session_id, timeout=0.0)


def test_the_first_write_of_a_block_takes_the_lease_whatever_it_is(db: Database) -> None:
    session_id = f"first-{uuid.uuid4().hex[:6]}"
    store, memory = parts(db, session_id)
    memory.add_user_input("one")
    with memory.lease_writes(holder="pinner") as held:
        store.release(store.acquire(session_id, timeout=0.0))  # nothing written: not taken
        memory.pin(1)  # not an append: takes the lease first
        assert held.lease is not None and not held.released
        with pytest.raises(SessionBusyError, match="'pinner'"):
            store.acquire(session_id, timeout=0.0)
        held.release_with_next_append()
        memory.add_user_input("two")
        assert held.released
        store.release(store.acquire(session_id, timeout=0.0))
        memory.add_user_input("three")  # after giving it back, the next write takes it again
        assert not held.released
        with pytest.raises(SessionBusyError, match="'pinner'"):
            store.acquire(session_id, timeout=0.0)
    store.release(store.acquire(session_id, timeout=0.0))  # the block's end gave it back
    assert texts(db, session_id) == ["one", "two", "three"]


def test_a_refused_first_append_takes_no_lease(db: Database) -> None:
    session_id = f"refused-{uuid.uuid4().hex[:6]}"
    store, memory = parts(db, session_id)
    with memory.lease_writes(holder="orphan") as held:
        with pytest.raises(ConfigError, match="nope"):
            memory.add_tool_output("nope", "an output without its call")
        assert held.lease is None
        store.release(store.acquire(session_id, timeout=0.0))
    assert texts(db, session_id) == []


def test_lease_writes_refuses_bad_options_and_a_second_lease(db: Database) -> None:
    store, memory = parts(db, f"options-{uuid.uuid4().hex[:6]}")
    with pytest.raises(ConfigError, match="ttl"), memory.lease_writes(ttl=0):
        pass
    with pytest.raises(ConfigError, match="timeout"), memory.lease_writes(timeout=-1):
        pass
    with memory.lease_writes():
        with pytest.raises(ConfigError, match="one lease_writes"), memory.lease_writes():
            pass
        with pytest.raises(ConfigError, match="inside lease_writes"):
            memory.fence(store.acquire(memory.session_id))
