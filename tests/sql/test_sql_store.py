"""SQLSessionStore on SQLite and PostgreSQL: the store contract, and living next to SQLMemory."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sql_support import Database, database, drop, postgres  # noqa: F401
from sqlalchemy import update

from compactkit.errors import ConcurrencyError, ConfigError, StorageError
from compactkit.sessions.session import AgentSession, SessionState, resume_session
from compactkit.sql._schema import tables
from compactkit.sql.memory import SQLMemory
from compactkit.sql.store import SQLSessionStore
from compactkit.testing.conformance import SessionStoreConformance

HOSTILE_IDS = [
    "a/b",
    "../../etc/passwd",
    "x'); DROP TABLE compactkit_sessions; --",
    "über",
    "會話",
    "🙂",
    "CON",
    "Abc",
    "abc",
    " spaced id ",
    "back\\slash",
    "x" * 255,
]


@pytest.fixture
def store(database: Database) -> Iterator[SQLSessionStore]:  # noqa: F811
    # A prefix per test: list() sees only this test's sessions.
    own = Database(database.name, database.url, f"s{uuid.uuid4().hex[:8]}_")
    yield SQLSessionStore(own.url, table_prefix=own.prefix)
    drop(own)


def sql_memory(store: SQLSessionStore, session_id: str) -> SQLMemory:
    return SQLMemory(store.engine, session_id, table_prefix=store._t.prefix)


def session(session_id: str = "s1", *inputs: str, **metadata: Any) -> AgentSession:
    made = AgentSession(session_id=session_id, metadata=metadata)
    for text in inputs:
        made.memory.add_user_input(text)
    return made


class TestSQLStoreContract(SessionStoreConformance):
    """The store contract every ``SessionStore`` meets, on SQLite and PostgreSQL."""

    hostile_ids = HOSTILE_IDS  # SQL-flavoured ids; NUL and over-long ids are refused below
    leases = True

    @pytest.fixture
    def store_factory(self, database: Database) -> Iterator[Any]:  # noqa: F811
        made: list[Database] = []

        def fresh() -> SQLSessionStore:  # a prefix of its own: list() sees only its sessions
            own = Database(database.name, database.url, f"s{uuid.uuid4().hex[:8]}_")
            made.append(own)
            return SQLSessionStore(own.url, table_prefix=own.prefix)

        yield fresh
        for own in made:
            drop(own)


@pytest.mark.parametrize("session_id", ["a\x00b", "x" * 256, "lone \ud800 surrogate"])
def test_ids_sql_cannot_hold_are_refused(store: SQLSessionStore, session_id: str) -> None:
    with pytest.raises(ConfigError, match="session id"):
        store.save(session(session_id))
    with pytest.raises(ConfigError, match="session id"):
        store.load(session_id)


def test_a_corrupt_or_newer_state_raises_storage_error(store: SQLSessionStore) -> None:
    store.save(session("s1"))
    b = tables(store._t.prefix).session_bases
    for state, message in [("{not json", "corrupt"), ('{"schema_version": 99}', "newer")]:
        with store.engine.begin() as conn:
            conn.execute(update(b).where(b.c.session_id == "s1").values(state=state))
        with pytest.raises(StorageError, match=message):
            store.load("s1")


def test_resuming_never_deletes_what_was_written_after_the_checkpoint(
    store: SQLSessionStore,
) -> None:
    live = AgentSession(sql_memory(store, "s1"), session_id="s1", metadata={"k": 1})
    live.memory.add_user_input("one")
    live.memory.add_user_input("two")
    store.save(live)
    live.memory.add_user_input("after the checkpoint")  # another worker's committed turn
    resumed = resume_session(store, "s1", lambda sid: sql_memory(store, sid))
    texts = ["one", "two", "after the checkpoint"]
    assert [i.text for i in resumed.memory.items] == texts  # type: ignore[union-attr]
    assert resumed.metadata == {"k": 1}
    assert [i.text for i in sql_memory(store, "s1").history()] == texts  # type: ignore[union-attr]


def test_restoring_a_checkpoint_over_newer_appends_is_refused(store: SQLSessionStore) -> None:
    memory = sql_memory(store, "s1")
    memory.add_user_input("one")
    checkpoint = memory.snapshot()
    sql_memory(store, "s1").add_user_input("another worker's turn")
    with pytest.raises(ConcurrencyError, match=r"delete 1 items .* \(seq 2\.\.2"):
        memory.restore(checkpoint)
    assert [i.text for i in memory.history()] == ["one", "another worker's turn"]  # type: ignore[union-attr]
    memory.clear()  # deliberate: then the checkpoint restores
    memory.restore(checkpoint)
    assert [i.text for i in memory.items] == ["one"]  # type: ignore[union-attr]


def test_delete_keeps_the_memory_and_purge_removes_everything(store: SQLSessionStore) -> None:
    memory = sql_memory(store, "s1")
    memory.add_user_input("kept")
    store.save(AgentSession(memory, session_id="s1"))
    assert store.delete("s1") is True
    assert store.list() == [] and [i.text for i in memory.history()] == ["kept"]  # type: ignore[union-attr]
    store.save(AgentSession(sql_memory(store, "s1"), session_id="s1"))
    assert store.purge("s1") is True
    assert store.list() == [] and memory.history() == [] and memory.info() is None
    assert store.purge("s1") is False
    store.save(session("only-saved"))
    assert store.delete("only-saved") is True
    assert sql_memory(store, "only-saved").info() is None  # its row went with the state


def test_concurrent_savers_and_readers_never_see_a_torn_state(store: SQLSessionStore) -> None:
    store.save(session("shared", "start"))
    stop = threading.Event()
    errors: list[BaseException] = []

    def save(worker: int) -> None:
        try:
            for n in range(5):
                store.save(session("shared", *[f"w{worker}-{n}"] * 10, worker=worker))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def read() -> None:
        try:
            while not stop.is_set():
                state = store.load("shared")
                assert isinstance(state, SessionState)
                assert len({i.text for i in state.memory.items}) == 1  # type: ignore[union-attr]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    savers = [threading.Thread(target=save, args=(w,)) for w in range(4)]
    for thread in savers:
        thread.start()
    for thread in savers:
        thread.join()
    stop.set()
    reader.join()
    assert errors == []
    assert store.load("shared").metadata["worker"] in range(4)
    assert store.list() == ["shared"]
