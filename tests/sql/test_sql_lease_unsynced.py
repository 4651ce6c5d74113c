"""``SQLSessionStore.acquire`` commits the lease it takes without an fsync on an SQLite file
(``compactkit.sql._held``: ``synchronous=NORMAL`` for that one transaction). The connection's
own setting is back before anything else is written on it — the saves and the memory's
appends stay fsynced — even when the take fails; a setting the user chose is left alone; and
another process sees the lease at once."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event

from compactkit.errors import StorageError
from compactkit.sessions import AgentSession
from compactkit.sql import SQLMemory, SQLSessionStore
from compactkit.sql._held import _held_connection
from compactkit.sql._store_patch import LeaseSQL

OTHER_PROCESS = """
import sys
from compactkit.errors import SessionBusyError
from compactkit.sql import SQLSessionStore
try:
    SQLSessionStore(sys.argv[1]).acquire(sys.argv[2], timeout=0)
except SessionBusyError:
    print("busy")
else:
    print("taken")
"""


def synchronous(store: SQLSessionStore) -> int:
    """The ``synchronous`` of the connection the store's writes run on."""
    held = _held_connection(store.engine)
    assert held.cursor is not None
    return int(held.cursor.execute("PRAGMA synchronous").fetchone()[0])


def saved_session(store: SQLSessionStore) -> AgentSession:
    session = AgentSession(session_id="s")
    session.memory.add_user_input("hello")
    store.save(session)
    return session


def test_the_lease_is_seen_elsewhere_and_the_saves_after_it_stay_fsynced(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/db.sqlite"
    store = SQLSessionStore(url)
    session = saved_session(store)
    for n in range(3):
        lease = store.acquire("s")
        assert synchronous(store) == 2  # FULL, the driver's default, for what comes next
        other = subprocess.run(
            [sys.executable, "-c", OTHER_PROCESS, url, "s"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        assert other.stdout.strip() == "busy"
        session.lease = lease
        session.memory.add_user_input(f"turn {n}")
        store.save(session)
        memory = SQLMemory(store.engine, f"memory-{n}")
        memory.add_user_input("an append on the same connection")
        assert synchronous(store) == 2
        store.save_and_release(session)
        session.lease = None
    assert SQLSessionStore(url).load("s").memory.items == session.memory.snapshot().items


def test_a_failed_take_leaves_the_connection_fsyncing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLSessionStore(f"sqlite:///{tmp_path}/db.sqlite")
    session = saved_session(store)

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(LeaseSQL, "take", failing)
    with pytest.raises(StorageError):
        store.acquire("s")
    monkeypatch.undo()
    held = _held_connection(store.engine)
    assert held.cursor is None or synchronous(store) == 2
    session.memory.add_user_input("after the failed take")
    store.save(session)
    assert synchronous(store) == 2
    lease = store.acquire("s")
    assert synchronous(store) == 2
    store.release(lease)


@pytest.mark.parametrize("level", [0, 1, 3])
def test_a_synchronous_the_user_chose_is_left_as_it_is(tmp_path: Path, level: int) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/db.sqlite")
    event.listen(engine, "connect", lambda dbapi, _: dbapi.execute(f"PRAGMA synchronous={level}"))
    store = SQLSessionStore(engine)
    saved_session(store)
    lease = store.acquire("s")
    assert synchronous(store) == level
    store.release(lease)
    engine.dispose()
