"""Incremental saving: whatever a session does between saves, what a fresh store object (or a
fresh process) loads equals the whole state a full save would have written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis_support import redis_url  # noqa: F401
from sql_support import Database, fast_engine, needs_postgres, postgres, sqlite_database  # noqa: F401

from compactkit.errors import ConcurrencyError, ConfigError
from compactkit.items import FunctionCall, Message
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot
from compactkit.sessions import FileSessionStore, InMemorySessionStore, SessionState
from compactkit.sessions.session import AgentSession

StoreMaker = Callable[[], Any]


def comparable(state: SessionState) -> dict[str, Any]:
    """The state as a reader sees it, minus when it was taken and the store's save count."""
    return state.model_dump(mode="json", exclude={"updated_at", "revision"})


# -- what a session may do between saves ---------------------------------------------------------


def fold(session: AgentSession, keep: int, text: str) -> None:
    """A compaction folding all but the last ``keep`` active items into the summary."""
    snapshot = session.memory.snapshot()
    items = tuple(snapshot.items)
    if len(items) <= keep:
        return
    result = CompactResult(
        snapshot=MemorySnapshot(
            summary=(snapshot.summary + " " + text).strip(),
            items=items[len(items) - keep :],
            version=snapshot.version,
        ),
        folded=items[: len(items) - keep],
        outcome="compacted",
        stats=CompactStats(compressor="test", items_before=len(items), items_after=keep),
    )
    session.memory.apply(result)


def replace_last(session: AgentSession, text: str) -> None:
    """A compaction replacing the newest user message (same seq, new content)."""
    snapshot = session.memory.snapshot()
    items = list(snapshot.items)
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if isinstance(item, Message) and item.role == "user":
            items[index] = item.model_copy(update={"content": text})
            break
    else:
        return
    result = CompactResult(
        snapshot=MemorySnapshot(summary=snapshot.summary, items=items, version=snapshot.version),
        outcome="compacted",
        stats=CompactStats(compressor="test"),
    )
    session.memory.apply(result)


OPS = st.one_of(
    st.tuples(st.just("user"), st.text(max_size=30)),
    st.tuples(st.just("reply"), st.text(max_size=30)),
    st.tuples(st.just("tool"), st.text(max_size=20)),
    st.tuples(st.just("fold"), st.integers(0, 6)),
    st.tuples(st.just("replace"), st.text(min_size=1, max_size=10)),
    st.tuples(st.just("pin"), st.integers(0, 40)),
    st.tuples(st.just("unpin"), st.integers(0, 40)),
    st.tuples(st.just("restore"), st.integers(0, 40)),
    st.tuples(st.just("clear"), st.none()),
    st.tuples(st.just("meta"), st.integers()),
    st.tuples(st.just("save"), st.none()),
    st.tuples(st.just("lease"), st.none()),  # a run starts or ends (a store that leases)
)


def play(session: AgentSession, op: tuple[str, Any], kept: list[SessionState]) -> None:
    kind, value = op
    memory = session.memory
    if kind == "user":
        memory.add_user_input(value or "?")
        session.turn += 1
    elif kind == "reply":
        memory.add_output_items([Message(role="assistant", content=value or "ok")])
        session.step += 1
    elif kind == "tool":
        call_id = f"call_{memory.version}_{len(kept)}"
        memory.add_output_items([FunctionCall(call_id=call_id, name="look", arguments="{}")])
        memory.add_tool_output(call_id, value or "done")
    elif kind == "fold":
        fold(session, value, f"folded at {memory.version}")
    elif kind == "replace":
        replace_last(session, value)
    elif kind in ("pin", "unpin"):
        items = memory.snapshot().items
        if items:
            seq = items[value % len(items)].seq
            assert seq is not None
            (memory.pin if kind == "pin" else memory.unpin)(seq)
    elif kind == "restore":
        if kept:
            earlier = kept[value % len(kept)]
            memory.restore(earlier.memory, history=earlier.history)
    elif kind == "clear":
        memory.clear()
    elif kind == "meta":
        session.metadata["n"] = value


# -- the stores, each with a way to open a second store object on the same data ----------------


def redis_store(url: str, prefix: str) -> Any:
    from compactkit.redis import RedisSessionStore

    return RedisSessionStore(url, key_prefix=prefix)


def drop_redis_keys(url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture(
    params=["memory", "file", "sqlite", pytest.param("postgresql", marks=needs_postgres), "redis"]
)
def stores(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, StoreMaker]]:
    """``(writer, open_reader)``: a store the session saves to, and a factory of fresh store
    objects reading the same data."""
    kind = request.param
    if kind == "memory":
        store = InMemorySessionStore()
        yield store, lambda: store  # one process: the same object is the only reader
        return
    if kind == "file":
        folder = tmp_path_factory.mktemp("sessions")
        yield FileSessionStore(folder), lambda: FileSessionStore(folder)
        return
    if kind == "redis":
        url: str = request.getfixturevalue("redis_url")
        prefix = f"cktest:{uuid.uuid4().hex[:10]}"
        yield redis_store(url, prefix), lambda: redis_store(url, prefix)
        drop_redis_keys(url, prefix)
        return
    from compactkit.sql import SQLSessionStore

    database: Database = (
        sqlite_database(tmp_path_factory.mktemp("db"))
        if kind == "sqlite"
        else request.getfixturevalue("postgres")
    )
    engine = fast_engine(database.url)
    yield (
        SQLSessionStore(engine, table_prefix=database.prefix),
        lambda: SQLSessionStore(engine, table_prefix=database.prefix),
    )
    engine.dispose()


@settings(
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(OPS, max_size=30), session_id=st.uuids())
def test_any_sequence_saved_incrementally_loads_as_a_full_save(
    stores: tuple[Any, StoreMaker], ops: list[tuple[str, Any]], session_id: Any
) -> None:
    writer, open_reader = stores
    session = AgentSession(session_id=session_id.hex)
    writer.save(session)
    kept: list[SessionState] = []
    for op in ops:
        if op[0] == "lease" and hasattr(writer, "acquire"):
            # A run's saves (the file store keeps the journal open for them) and saves outside
            # one, in any order.
            if session.lease is None:
                session.lease = writer.acquire(session.session_id, ttl=60.0)
            else:
                writer.release(session.lease)
                session.lease = None
        try:
            play(session, op, kept)
        except (ConfigError, ConcurrencyError):
            continue  # an op the memory refuses (a pin of a folded item, an orphan output)
        writer.save(session)
        full = session.state()
        kept.append(full)
        assert comparable(open_reader().load(session.session_id)) == comparable(full)
    assert comparable(open_reader().load(session.session_id)) == comparable(session.state())
    if session.lease is not None:
        writer.release(session.lease)


# -- at the process boundary, after crashes, between writers ------------------------------------

READER = """
import json, sys
from compactkit.sessions import FileSessionStore
from compactkit.sql import SQLSessionStore

kind, where, session_id = sys.argv[1:]
if kind == "redis":
    from compactkit.redis import RedisSessionStore

    url, prefix = where.split("|")
    store = RedisSessionStore(url, key_prefix=prefix)
else:
    store = FileSessionStore(where) if kind == "file" else SQLSessionStore(where)
state = store.load(session_id)
print(json.dumps(state.model_dump(mode="json", exclude={"updated_at", "revision"})))
"""


def busy_session(store: Any, session_id: str = "s1") -> AgentSession:
    """A session saved after every change: appends, a fold, a replacement, a pin."""
    session = AgentSession(session_id=session_id, metadata={"user": "ada"})
    store.save(session)
    for turn in range(12):
        session.memory.add_user_input(f"question {turn} ü")
        session.turn += 1
        store.save(session)
        session.memory.add_output_items([Message(role="assistant", content=f"answer {turn}")])
        session.step += 1
        store.save(session)
        if turn in (5, 9):
            fold(session, 4, f"summary to turn {turn}")
            store.save(session)
    replace_last(session, "replaced")
    store.save(session)
    seq = session.memory.snapshot().items[0].seq
    assert seq is not None
    session.memory.pin(seq)
    store.save(session)
    return session


@pytest.mark.parametrize("kind", ["file", "sqlite", "redis"])
def test_a_fresh_process_reads_back_exactly_what_was_saved(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from compactkit.sql import SQLSessionStore

    if kind == "redis":
        url: str = request.getfixturevalue("redis_url")
        prefix = f"cktest:{uuid.uuid4().hex[:10]}"
        request.addfinalizer(lambda: drop_redis_keys(url, prefix))
        where = f"{url}|{prefix}"
        store = redis_store(url, prefix)
    else:
        where = str(tmp_path / "sessions") if kind == "file" else f"sqlite:///{tmp_path}/db.sqlite"
        store = FileSessionStore(where) if kind == "file" else SQLSessionStore(where)
    session = busy_session(store)
    if kind == "file":  # the saves after the first were patches, not whole files
        assert (tmp_path / "sessions" / "s1.jnl").stat().st_size > 0
    if kind == "redis":  # the base's id, then a patch per save after the first
        import redis

        client = redis.Redis.from_url(url)
        assert client.llen(f"{prefix}:{{s1}}:journal") > 20
        client.close()
    read = subprocess.run(
        [sys.executable, "-c", READER, kind, where, "s1"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert json.loads(read.stdout) == comparable(session.state())


def test_a_journal_line_cut_short_is_ignored_and_the_next_save_writes_a_whole_state(
    tmp_path: Path,
) -> None:
    store = FileSessionStore(tmp_path)
    session = busy_session(store)
    before = comparable(store.load("s1"))
    journal = tmp_path / "s1.jnl"
    with journal.open("ab") as file:  # an append killed mid-write: no newline at its end
        file.write(b'{"revision": 99, "turn": 1, "ste')
    assert comparable(FileSessionStore(tmp_path).load("s1")) == before
    session.memory.add_user_input("after the crash")
    other = FileSessionStore(tmp_path)  # a new process: no mark, so a whole state
    other.save(session)
    assert not journal.exists()
    assert comparable(FileSessionStore(tmp_path).load("s1")) == comparable(session.state())


def test_a_corrupt_journal_line_is_a_storage_error(tmp_path: Path) -> None:
    from compactkit.errors import StorageError

    store = FileSessionStore(tmp_path)
    busy_session(store)
    journal = tmp_path / "s1.jnl"
    lines = journal.read_bytes().split(b"\n")
    lines[1] = b"{not json"
    journal.write_bytes(b"\n".join(lines))
    with pytest.raises(StorageError, match=r"s1\.json is corrupt: journal patch 2"):
        FileSessionStore(tmp_path).load("s1")


def test_the_journal_is_folded_into_a_new_base_once_it_outgrows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("compactkit.sessions.journal.JOURNAL_MIN_BYTES", 0)
    store = FileSessionStore(tmp_path)
    session = AgentSession(session_id="s1")
    store.save(session)
    folds = 0
    for turn in range(60):
        session.memory.add_user_input(f"turn {turn}")
        store.save(session)
        journal = tmp_path / "s1.jnl"
        if not journal.exists():
            folds += 1
            continue
        lines = journal.read_bytes()
        last = lines[:-1].rsplit(b"\n", 1)[-1]
        # before its last patch the journal was no bigger than the base, else it was folded
        assert len(lines) - len(last) - 1 <= (tmp_path / "s1.json").stat().st_size
    assert folds > 1
    assert comparable(FileSessionStore(tmp_path).load("s1")) == comparable(session.state())


def test_the_redis_journal_is_folded_into_a_new_base_once_it_outgrows_it(
    redis_url: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import redis

    monkeypatch.setattr("compactkit.sessions.journal.JOURNAL_MIN_BYTES", 0)
    prefix = f"cktest:{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(redis_url)
    try:
        store = redis_store(redis_url, prefix)
        session = AgentSession(session_id="s1")
        store.save(session)
        folds = 0
        for turn in range(60):
            session.memory.add_user_input(f"turn {turn}")
            store.save(session)
            journal = client.lrange(f"{prefix}:{{s1}}:journal", 1, -1)
            folds += not journal
            base = client.strlen(f"{prefix}:{{s1}}:state")
            # before its last patch the journal was no bigger than the base, else it was folded
            assert sum(len(patch) for patch in journal[:-1]) <= base
        assert folds > 1
        assert comparable(redis_store(redis_url, prefix).load("s1")) == comparable(session.state())
    finally:
        client.close()
        drop_redis_keys(redis_url, prefix)


@pytest.mark.parametrize("kind", ["memory", "file", "sqlite", "redis"])
def test_two_writers_of_one_session_each_load_what_the_last_one_saved(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Two session objects saving one id in turns (last writer wins, as before): a patch is
    only ever written on top of what its own writer saved, so every load is one whole save."""
    from compactkit.sql import SQLSessionStore

    def open_store() -> Any:
        if kind == "memory":
            return shared
        if kind == "file":
            return FileSessionStore(tmp_path)
        if kind == "redis":
            return redis_store(url, prefix)
        return SQLSessionStore(f"sqlite:///{tmp_path}/db.sqlite")

    if kind == "redis":
        url: str = request.getfixturevalue("redis_url")
        prefix = f"cktest:{uuid.uuid4().hex[:10]}"
        request.addfinalizer(lambda: drop_redis_keys(url, prefix))
    shared = InMemorySessionStore()
    first_store, second_store = open_store(), open_store()
    first, second = AgentSession(session_id="s1"), AgentSession(session_id="s1")
    for turn in range(6):
        for session, store, who in ((first, first_store, "a"), (second, second_store, "b")):
            session.memory.add_user_input(f"{who}{turn}")
            store.save(session)
            assert comparable(open_store().load("s1")) == comparable(session.state())
    assert (open_store().delete("s1"), open_store().list()) == (True, [])
    first.memory.add_user_input("after delete")
    first_store.save(first)  # its mark names a base that is gone: a whole state again
    assert comparable(open_store().load("s1")) == comparable(first.state())


@pytest.mark.parametrize(
    "kind", ["sqlite", pytest.param("postgresql", marks=needs_postgres), "redis"]
)
def test_an_incremental_save_is_fenced_like_a_whole_one(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A save that would be a patch (its writer saved last) is still refused while another
    run holds the lease, and after its own run's lease was taken over; nothing of it lands."""
    from compactkit.errors import LeaseLostError, SessionBusyError
    from compactkit.sql import SQLSessionStore

    if kind == "redis":
        url: str = request.getfixturevalue("redis_url")
        prefix = f"cktest:{uuid.uuid4().hex[:10]}"
        request.addfinalizer(lambda: drop_redis_keys(url, prefix))
        store: Any = redis_store(url, prefix)
    else:
        database = (
            sqlite_database(tmp_path) if kind == "sqlite" else request.getfixturevalue("postgres")
        )
        store = SQLSessionStore(database.url, table_prefix=database.prefix)
    session_id = uuid.uuid4().hex
    free = AgentSession(session_id=session_id)
    for n in range(3):  # a whole save, then patches
        free.memory.add_user_input(f"free {n}")
        store.save(free)
    running = store.acquire(session_id, ttl=30.0)
    free.memory.add_user_input("while a run holds the lease")
    with pytest.raises(SessionBusyError):
        store.save(free)
    store.release(running)

    stalled = AgentSession.from_state(store.load(session_id))
    stalled.lease = store.acquire(session_id, ttl=0.3)
    for n in range(3):
        stalled.memory.add_user_input(f"leased {n}")
        store.save(stalled)
    saved = comparable(store.load(session_id))
    time.sleep(0.5)  # it stalled past its ttl
    other = store.acquire(session_id, timeout=5.0)
    stalled.memory.add_user_input("late")
    with pytest.raises(LeaseLostError, match="was taken over"):
        store.save(stalled)
    store.release(other)
    assert comparable(store.load(session_id)) == saved
    texts = [item.content for item in store.load(session_id).memory.items]  # type: ignore[union-attr]
    assert texts == ["free 0", "free 1", "free 2", "leased 0", "leased 1", "leased 2"]
