"""SQLMemory on SQLite and PostgreSQL: the conformance suite, then what only SQL promises —
O(1) appends, many processes on one session, crash safety, incremental reads, undo, purge,
migrations and identifier validation."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sql_workers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sql_support import (  # noqa: F401
    Database,
    database,
    drop,
    fast_engine,
    postgres,
    sqlite_database,
)
from sqlalchemy import Engine, create_engine, event, inspect, select, text

from compactkit.errors import ConcurrencyError, ConfigError, StorageError
from compactkit.items import FunctionCallOutput, Message, item_text
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot
from compactkit.sql import _engine as _sqlengine
from compactkit.sql import _schema as _sqlschema
from compactkit.sql.memory import SQLMemory, list_sql_sessions
from compactkit.testing.conformance import (
    OPERATIONS,
    MemoryConformance,
    MemoryKit,
    operations_keep_invariants,
)

# -- the conformance suite -------------------------------------------------------------------


class TestSQLiteMemory(MemoryConformance):
    persistent = True  # SQLMemory(engine, id) twice: two handles on one stored session
    recall = True

    @pytest.fixture
    def memory_factory(self, tmp_path: Path) -> Iterator[Any]:
        engine = fast_engine(sqlite_database(tmp_path).url)
        yield lambda session_id, **options: SQLMemory(engine, session_id, **options)
        engine.dispose()


@pytest.fixture(scope="module")
def postgres_engine(postgres: Database) -> Iterator[Engine]:  # noqa: F811
    engine = fast_engine(postgres.url)
    yield engine
    engine.dispose()


class TestPostgresMemory(MemoryConformance):
    persistent = True
    recall = True

    @pytest.fixture
    def memory_factory(self, postgres_engine: Engine, postgres: Database) -> Any:  # noqa: F811
        return lambda session_id, **options: SQLMemory(
            postgres_engine, session_id, table_prefix=postgres.prefix, **options
        )


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(st.sampled_from(OPERATIONS), max_size=30))
def test_random_operations_keep_the_invariants_on_sqlite(ops: list[str]) -> None:
    engine = fast_engine("sqlite://")
    try:
        kit = MemoryKit(lambda session_id, **options: SQLMemory(engine, session_id, **options))
        operations_keep_invariants(kit, ops)
    finally:
        engine.dispose()


# -- helpers ---------------------------------------------------------------------------------


def open_memory(db: Database, session_id: str | None = None, **options: Any) -> SQLMemory:
    return SQLMemory(db.url, session_id or uuid.uuid4().hex, table_prefix=db.prefix, **options)


def texts(items: Any) -> list[str]:
    return [item_text(i) for i in items]


def compacted(snapshot: MemorySnapshot, items: Any, summary: str = "") -> CompactResult:
    """A result keeping ``items`` (kept, replaced or new) with ``summary``."""
    new = snapshot.model_copy(update={"items": tuple(items), "summary": summary})
    return CompactResult(snapshot=new, outcome="compacted", stats=CompactStats(compressor="t"))


class Statements:
    """Records the SQL an engine runs (to prove what a read or an append costs), through
    SQLAlchemy and through the append path's driver cursor alike."""

    def __init__(self, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.engine = engine
        event.listen(engine, "before_cursor_execute", self._record)
        original = _sqlengine.driver_cursor
        monkeypatch.setattr(
            _sqlengine, "driver_cursor", lambda *args: _Recorded(original(*args), self._record)
        )

    def _record(self, conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if not statement.startswith(("BEGIN", "PRAGMA", "COMMIT")):
            self.seen.append((" ".join(statement.split()), params))

    def take(self) -> list[tuple[str, Any]]:
        seen, self.seen = self.seen, []
        return seen

    def close(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self._record)


class _Recorded:
    """A driver cursor whose statements are recorded."""

    def __init__(self, cursor: Any, record: Any) -> None:
        self._cursor, self._record = cursor, record

    def execute(self, sql: str, params: Any = ()) -> Any:
        self._record(None, None, sql, params)
        return self._cursor.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> Any:
        self._record(None, None, sql, rows)
        return self._cursor.executemany(sql, rows)

    def close(self) -> None:
        self._cursor.close()


@pytest.fixture
def statements(
    database: Database,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Statements]:
    engine = open_memory(database).engine
    recorder = Statements(engine, monkeypatch)
    yield recorder
    recorder.close()


# -- appends ---------------------------------------------------------------------------------


def test_an_append_costs_the_same_statements_at_any_length(
    database: Database,  # noqa: F811
    statements: Statements,
) -> None:
    memory = open_memory(database)
    costs = []
    for size in (10, 1000):
        filler = Message(role="user", content="filler")
        memory.add_output_items([filler] * (size - len(memory.snapshot().items)))
        statements.take()
        memory.add_user_input("measured")
        costs.append([sql.split(" ")[0] for sql, _ in statements.take()])
    # PostgreSQL: one statement (the counters' UPDATE … RETURNING with the row's INSERT in one
    # WITH: one round trip before the commit, as a plain INSERT). SQLite: the counters (locked),
    # read back by a SELECT in the process (cheaper than its RETURNING), then the row.
    expected = ["WITH"] if database.name == "postgresql" else ["UPDATE", "SELECT", "INSERT"]
    assert costs[0] == costs[1] == expected


def test_postgresql_appends_commit_as_they_run_and_later_writes_are_transactions(
    postgres: Database,  # noqa: F811
) -> None:
    # A lone item is appended by one statement in autocommit (no BEGIN/COMMIT round trips):
    # it is visible to another connection at once, and the pooled connection goes back to
    # transaction mode, so a later multi-statement write (a compaction) is still atomic.
    memory = open_memory(postgres)
    memory.add_user_input("first")  # the session's first write: its row, then the append
    memory.add_user_input("second")
    engine = create_engine(postgres.url)
    try:
        other = SQLMemory(engine, memory.session_id, table_prefix=postgres.prefix)
        assert texts(other.snapshot().items) == ["first", "second"]
        raw = memory.engine.raw_connection()
        try:
            assert raw.driver_connection.autocommit is False  # type: ignore[union-attr]
        finally:
            raw.close()
        snapshot = memory.snapshot()
        assert memory.apply(compacted(snapshot, snapshot.items[1:], summary="first was said"))
        assert other.snapshot().summary == "first was said"
        assert texts(other.snapshot().items) == ["second"]
    finally:
        engine.dispose()


def test_appends_from_several_processes_all_land_in_one_order(
    database: Database,  # noqa: F811
) -> None:
    session_id = uuid.uuid4().hex
    calls = [(database.url, database.prefix, session_id, w, 8) for w in range(3)]
    assert sql_workers.run(sql_workers.append, *calls) == [0, 0, 0]
    memory = open_memory(database, session_id)
    history = memory.history()
    assert len(history) == memory.version == 3 * 8 * 3
    assert [i.seq for i in history] == list(range(1, 73))
    assert memory.snapshot().items == tuple(history)
    for w in range(3):
        mine = [t for t in texts(history) if t.startswith(f"w{w}-")]
        assert mine == [f"w{w}-{k}{n}" for n in range(8) for k in ("", "o")]


def test_a_compaction_racing_another_workers_append_is_rebased(
    database: Database,  # noqa: F811
) -> None:
    worker_a = open_memory(database)
    worker_b = open_memory(database, worker_a.session_id)
    for text_ in "abc":
        worker_a.add_user_input(text_)
    result = sql_workers.keep_last(worker_a.snapshot(), 1)
    worker_b.add_user_input("d")  # lands while A's compressor runs
    assert worker_a.apply(result)
    after = worker_b.snapshot()
    assert worker_a.snapshot() == after
    assert (after.summary, texts(after.items)) == ("a | b", ["c", "d"])
    assert len(worker_a.compactions()) == 1


def test_a_compaction_racing_another_workers_compaction_changes_nothing(
    database: Database,  # noqa: F811
) -> None:
    worker_a = open_memory(database)
    worker_b = open_memory(database, worker_a.session_id)
    for text_ in "abc":
        worker_a.add_user_input(text_)
    result = sql_workers.keep_last(worker_a.snapshot(), 1)
    worker_b.apply(sql_workers.keep_last(worker_b.snapshot(), 2))  # B folds "a" meanwhile
    worker_b.add_user_input("d")
    before = worker_a.snapshot()
    with pytest.raises(ConcurrencyError, match="version 3"):
        worker_a.apply(result)
    assert worker_a.snapshot() == worker_b.snapshot() == before
    assert texts(before.items) == ["b", "c", "d"]
    assert len(worker_a.compactions()) == 1


def test_compactions_racing_writers_in_other_processes_lose_nothing(
    database: Database,  # noqa: F811
) -> None:
    memory = open_memory(database)
    memory.add_user_input("start")
    calls = [(database.url, database.prefix, memory.session_id, w, 6) for w in range(2)]
    writers = sql_workers.start(sql_workers.append, *calls)
    applied = 0
    while any(w.is_alive() for w in writers) or applied == 0:
        with contextlib.suppress(ConcurrencyError):  # a writer landed first: try again
            applied += memory.apply(sql_workers.keep_last(memory.snapshot(), 4))
    assert sql_workers.join(writers) == [0, 0]
    history = texts(memory.history())
    assert len(history) == 1 + 2 * 6 * 3
    folded = memory.summary.split(" | ") if memory.summary else []
    assert sorted(folded + texts(memory.snapshot().items)) == sorted(history)
    assert len(memory.compactions()) == applied


# -- crash safety ----------------------------------------------------------------------------


@pytest.mark.parametrize("point", ["after_archive", "before_commit", "after_commit"])
def test_a_process_killed_mid_compaction_leaves_before_or_after(
    database: Database,  # noqa: F811
    point: str,
) -> None:
    memory = open_memory(database)
    for text_ in "abcd":
        memory.add_user_input(text_)
    before = (memory.snapshot(), memory.history())
    call = (database.url, database.prefix, memory.session_id, point)
    assert sql_workers.run(sql_workers.compact, call) == [1]  # it died at the injection point
    after = memory.snapshot()
    if point == "after_commit":
        assert (after.summary, texts(after.items)) == ("a | b | c", ["d"])
        assert after.version == before[0].version + 1
        assert len(memory.compactions()) == 1
    else:
        assert after == before[0]
        assert memory.compactions() == []
    assert memory.history() == before[1]
    memory.add_user_input("e")  # no lock was left behind
    assert texts(memory.snapshot().items)[-1] == "e"


# -- the cached window -----------------------------------------------------------------------


def test_reads_fetch_only_rows_newer_than_the_cache(
    database: Database,  # noqa: F811
    statements: Statements,
) -> None:
    reader = open_memory(database)
    writer = open_memory(database, reader.session_id)
    for text_ in "abc":
        writer.add_user_input(text_)
    assert texts(reader.snapshot().items) == ["a", "b", "c"]
    statements.take()

    assert texts(reader.snapshot().items) == ["a", "b", "c"]
    assert len(statements.take()) == 1  # the session row only

    writer.add_user_input("d")
    writer.add_user_input("e")
    statements.take()
    assert texts(reader.snapshot().items) == list("abcde")
    queries = [sql for sql, _ in statements.take() if "_items" in sql]
    assert len(queries) == 1 and ".seq >=" in queries[0]

    writer.apply(sql_workers.keep_last(writer.snapshot(), 2))  # another worker compacts
    statements.take()
    snapshot = reader.snapshot()
    assert (snapshot.summary, texts(snapshot.items)) == ("a | b | c", ["d", "e"])
    queries = [sql for sql, _ in statements.take() if "_items" in sql]
    assert len(queries) == 1 and ".seq >=" not in queries[0]  # the window was reloaded


def test_a_memory_sees_a_session_purged_and_recreated_elsewhere(
    database: Database,  # noqa: F811
) -> None:
    reader = open_memory(database)
    reader.add_user_input("old")
    assert texts(reader.snapshot().items) == ["old"]
    other = open_memory(database, reader.session_id)
    assert other.purge()
    other.add_user_input("new")
    other.add_user_input("newer")
    assert texts(reader.snapshot().items) == ["new", "newer"]


# -- compaction records and undo -------------------------------------------------------------


def test_a_compaction_is_recorded_and_archives_instead_of_deleting(
    database: Database,  # noqa: F811
) -> None:
    memory = open_memory(database)
    for text_ in "abcd":
        memory.add_user_input(text_)
    assert memory.apply(sql_workers.keep_last(memory.snapshot(), 1))
    (record,) = memory.compactions()
    assert (record.strategy, record.model, record.prompt_version) == ("keep-last", "gpt-test", "v3")
    assert (record.first_seq, record.last_seq, record.archived) == (1, 3, 3)
    assert (record.items_before, record.items_after) == (4, 1)
    assert (record.tokens_before, record.tokens_after, record.outcome) == (100, 10, "compacted")
    assert record.undone_at is None and record.created_at.tzinfo is not None
    assert texts(memory.archived()) == ["a", "b", "c"]
    failed = sql_workers.keep_last(memory.snapshot(), 0).model_copy(
        update={"outcome": "failed", "error": "summarizer down"}
    )
    assert memory.apply(failed) is False
    newest = memory.compactions()[0]
    assert (newest.outcome, newest.error, newest.archived) == ("failed", "summarizer down", 0)
    assert memory.version == 5


def test_undo_restores_the_window_and_keeps_later_writes(
    database: Database,  # noqa: F811
) -> None:
    memory = open_memory(database, accept_unknown_call_ids=True)
    memory.add_user_input("a")
    memory.add_tool_output("c1", "x" * 100)
    memory.add_user_input("b")
    first = memory.snapshot()
    masked = first.items[1].model_copy(update={"output": "[masked]"})
    memory.apply(compacted(first, [first.items[0], masked, first.items[2]]))
    second = memory.snapshot()
    marker = Message(role="user", content="[a folded]")
    memory.apply(compacted(second, [marker, *second.items[1:]], "said a"))
    memory.add_user_input("c")
    assert texts(memory.snapshot().items) == ["[a folded]", "[masked]", "b", "c"]
    history = memory.history()

    undone = memory.undo_last_compaction()
    assert undone is not None and undone.undone_at is not None
    snapshot = memory.snapshot()
    assert (snapshot.summary, texts(snapshot.items)) == ("", ["a", "[masked]", "b", "c"])
    assert [i.seq for i in memory.history()] == [1, 2, 3, 5]  # the marker (seq 4) is gone
    assert memory.history() == [i for i in history if i.seq != 4]

    assert memory.undo_last_compaction() is not None
    assert texts(memory.snapshot().items) == ["a", "x" * 100, "b", "c"]
    assert memory.undo_last_compaction() is None
    memory.add_user_input("d")
    assert [i.seq for i in memory.snapshot().items] == [1, 2, 3, 5, 6]  # seqs never reused
    assert [r.undone_at is not None for r in memory.compactions()] == [True, True]


def test_undo_keeps_pins_set_since_and_a_stale_result_cannot_follow_it(
    database: Database,  # noqa: F811
) -> None:
    memory = open_memory(database)
    for text_ in "abc":
        memory.add_user_input(text_)
    memory.apply(sql_workers.keep_last(memory.snapshot(), 2))
    memory.pin(3)
    stale = memory.snapshot()
    memory.undo_last_compaction()
    assert [(i.seq, i.pinned) for i in memory.snapshot().items] == [
        (1, False),
        (2, False),
        (3, True),
    ]
    with pytest.raises(ConcurrencyError):
        memory.apply(sql_workers.keep_last(stale, 1))


def test_restore_and_clear_forget_the_compaction_records(
    database: Database,  # noqa: F811
) -> None:
    memory = open_memory(database)
    for text_ in "abc":
        memory.add_user_input(text_)
    before = memory.snapshot()
    memory.apply(sql_workers.keep_last(before, 1))
    memory.restore(before, history=memory.history())
    assert memory.compactions() == [] and memory.undo_last_compaction() is None
    memory.apply(sql_workers.keep_last(memory.snapshot(), 1))
    memory.clear()
    assert memory.compactions() == [] and memory.history() == []


# -- purge, listing, values ------------------------------------------------------------------


def test_purge_deletes_the_session_and_its_archive_only(
    database: Database,  # noqa: F811
) -> None:
    memory = open_memory(database)
    bystander = open_memory(database)
    for text_ in "abc":
        memory.add_user_input(text_)
        bystander.add_user_input(text_)
    memory.apply(sql_workers.keep_last(memory.snapshot(), 1))
    info = memory.info()
    assert info is not None
    assert (info.active_items, info.archived_items, info.compactions) == (1, 2, 1)
    assert memory.purge() is True
    assert memory.info() is None and memory.history() == [] and memory.compactions() == []
    assert memory.snapshot().version == 0
    assert memory.purge() is False
    ids = [i.session_id for i in list_sql_sessions(database.url, table_prefix=database.prefix)]
    assert memory.session_id not in ids and bystander.session_id in ids
    assert texts(bystander.history()) == ["a", "b", "c"]


def test_values_are_always_bound(database: Database) -> None:  # noqa: F811
    hostile = "x'); DROP TABLE compactkit_items; --"
    memory = open_memory(database, hostile)
    memory.add_user_input(hostile)
    summary = "nul \x00 and quote ' and unicode 會話"
    memory.apply(compacted(memory.snapshot(), memory.snapshot().items, summary))
    reopened = open_memory(database, hostile)
    assert reopened.summary == summary
    assert texts(reopened.history()) == [hostile]
    output = FunctionCallOutput(call_id="c\x00", output="binary \x00 output")
    other = open_memory(database, accept_unknown_call_ids=True)
    other.add_output_items([output])
    assert other.history()[0].model_copy(update={"seq": None}) == output


# -- configuration, schema and migrations ----------------------------------------------------


@pytest.mark.parametrize(
    "prefix", ["", "1abc", "a-b", "a b", "x;drop table y;--", "é_", "a" * 41, "a.b_"]
)
def test_a_bad_table_prefix_is_refused(tmp_path: Path, prefix: str) -> None:
    with pytest.raises(ConfigError, match="table_prefix"):
        SQLMemory(sqlite_database(tmp_path).url, "s", table_prefix=prefix)


@pytest.mark.parametrize("session_id", ["", "a\x00b", "x" * 256])
def test_a_bad_session_id_is_refused(tmp_path: Path, session_id: str) -> None:
    with pytest.raises(ConfigError, match="session id"):
        SQLMemory(sqlite_database(tmp_path).url, session_id)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("not a url", "not a database URL"),
        ("mysql+pymysql://u@localhost/db", "install the driver|SQLite and PostgreSQL"),
        ("oracle+nosuchdriver://u@h/db", "install the driver"),
    ],
)
def test_a_bad_url_is_a_config_error(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SQLMemory(url, "s")


def test_an_unreachable_database_is_a_storage_error() -> None:
    with pytest.raises(StorageError, match="cannot create or migrate"):
        SQLMemory("postgresql://nobody:x@127.0.0.1:1/none", "s")


def test_a_custom_prefix_and_an_engine_of_your_own(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/own.db")
    memory = SQLMemory(engine, "s", table_prefix="agent_")
    memory.add_user_input("hi")
    names = set(inspect(engine).get_table_names())
    core = {"agent_schema_version", "agent_sessions", "agent_items", "agent_compactions"}
    assert core | {"agent_recall", "agent_recall_fts"} <= names  # + FTS5's own tables
    assert all(name.startswith("agent_") for name in names)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    engine.dispose()


def test_without_create_schema_missing_tables_are_a_config_error(tmp_path: Path) -> None:
    url = sqlite_database(tmp_path).url
    with pytest.raises(ConfigError, match="no compactkit tables with prefix 'other_'"):
        SQLMemory(url, "s", table_prefix="other_", create_schema=False)
    SQLMemory(url, "s", table_prefix="other_").add_user_input("x")
    assert SQLMemory(url, "s", table_prefix="other_", create_schema=False).summary == ""


def test_workers_starting_together_create_the_tables_once(
    database: Database,  # noqa: F811
) -> None:
    db = Database(database.name, database.url, f"f{uuid.uuid4().hex[:8]}_")
    try:
        session_id = uuid.uuid4().hex
        calls = [(db.url, db.prefix, session_id, w) for w in range(3)]
        assert sql_workers.run(sql_workers.first_start, *calls) == [0, 0, 0]
        memory = open_memory(db, session_id)
        assert sorted(texts(memory.history())) == ["w0", "w1", "w2"]
        t = _sqlschema.tables(db.prefix)
        with memory.engine.connect() as conn:
            versions = conn.execute(select(t.schema_version.c.version)).scalars().all()
            assert versions == list(range(1, _sqlschema.SCHEMA_VERSION + 1))
    finally:
        drop(db)


def test_migrations_run_forward_once_and_newer_schemas_are_refused(
    database: Database,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = Database(database.name, database.url, f"m{uuid.uuid4().hex[:8]}_")
    try:
        open_memory(db).add_user_input("v1 data")
        calls: list[int] = []

        known = len(_sqlschema.MIGRATIONS)

        def v2(conn: Any, t: _sqlschema.Tables) -> None:  # the next version
            calls.append(2)
            conn.execute(text(f"ALTER TABLE {t.sessions.name} ADD COLUMN label VARCHAR(20)"))

        monkeypatch.setattr(_sqlschema, "MIGRATIONS", [*_sqlschema.MIGRATIONS, v2])
        fresh = create_engine(db.url)
        with pytest.raises(StorageError, match=rf"schema version {known}; .* create_schema=True"):
            SQLMemory(fresh, "s", table_prefix=db.prefix, create_schema=False)
        fresh.dispose()
        for _ in range(2):
            fresh = create_engine(db.url)  # a new process would start with a new engine
            memory = SQLMemory(fresh, uuid.uuid4().hex, table_prefix=db.prefix)
            memory.add_user_input("v2 data")
            fresh.dispose()
        assert calls == [2]
        t = _sqlschema.tables(db.prefix)
        fresh = create_engine(db.url)
        with fresh.connect() as conn:
            versions = conn.execute(select(t.schema_version.c.version)).scalars().all()
        assert sorted(versions) == list(range(1, known + 2))
        monkeypatch.setattr(_sqlschema, "MIGRATIONS", _sqlschema.MIGRATIONS[:known])
        with pytest.raises(StorageError, match=f"schema version {known + 1}, newer"):
            SQLMemory(fresh, "s", table_prefix=db.prefix)
        fresh.dispose()
    finally:
        drop(db)


def test_an_in_memory_sqlite_database_is_shared_by_the_threads() -> None:
    memory = SQLMemory("sqlite://", uuid.uuid4().hex)
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for n in range(20):
                memory.add_user_input(f"{worker}-{n}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert SQLMemory("sqlite://", memory.session_id).version == 80
