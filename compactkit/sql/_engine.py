"""Engines and transactions for the SQL memory and store (SQLite and PostgreSQL).

Writers to one session must queue, so every write transaction starts by taking a lock:

* PostgreSQL: ``SELECT ... FOR UPDATE`` on the session's row (the caller does it), under the
  default READ COMMITTED. Reads run under REPEATABLE READ, so the session row and the item rows
  of one read come from one snapshot; a read of one row alone runs as a single autocommit
  statement (no BEGIN/COMMIT round trips).
* SQLite: pysqlite's own transaction handling starts transactions late and never with
  ``IMMEDIATE``, so SQLAlchemy event hooks take it over (the recipe of SQLAlchemy's SQLite
  documentation): the driver runs in autocommit mode and each transaction opens with ``BEGIN``
  (reads: a consistent WAL snapshot) or ``BEGIN IMMEDIATE`` (writes: the database's write lock,
  taken before anything is read, so two writers never both read the old version). Connections
  run in WAL mode, with a busy timeout so writers wait for each other instead of failing.

Engines made from URLs are shared per URL in the process and reset in a forked child (pooled
connections must never cross a fork). An engine you pass in is used as it is, except that for
SQLite the hooks above are installed on it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from compactkit.errors import ConfigError, StorageError
from compactkit.sql._schema import Tables, migrate, verify

__all__ = [
    "Cursor",
    "RawCursor",
    "RawWriter",
    "connect",
    "driver_cursor",
    "read_transaction",
    "single_statement",
    "storage_errors",
    "write_transaction",
]

BUSY_TIMEOUT_MS = 30_000
"""How long an SQLite writer waits for another one's lock before failing (StorageError)."""

_T = TypeVar("_T")
_P = ParamSpec("_P")
_WRITE = "compactkit_write"  # execution option that makes the SQLite hook say BEGIN IMMEDIATE
_DIALECTS = ("sqlite", "postgresql")

_lock = threading.Lock()
_engines: dict[str, Engine] = {}
_hooked: weakref.WeakSet[Engine] = weakref.WeakSet()
_migrated: weakref.WeakKeyDictionary[Engine, set[str]] = weakref.WeakKeyDictionary()
_one_at_a_time: weakref.WeakKeyDictionary[Engine, threading.RLock] = weakref.WeakKeyDictionary()


def connect(url_or_engine: str | URL | Engine, t: Tables, *, create_schema: bool) -> Engine:
    """The engine for ``url_or_engine``, ready for compactkit's tables of ``t``.

    Raises:
        ConfigError: the URL is malformed, names a database other than SQLite or PostgreSQL,
            or its driver is not installed.
        StorageError: the database cannot be reached or migrated.
    """
    engine = url_or_engine if isinstance(url_or_engine, Engine) else _engine(url_or_engine)
    if engine.dialect.name not in _DIALECTS:
        raise ConfigError(
            f"compactkit's SQL memory supports SQLite and PostgreSQL, not {engine.dialect.name!r}"
        )
    with _lock:
        if engine.dialect.name == "sqlite" and engine not in _hooked:
            event.listen(engine, "begin", _sqlite_begin)
            _hooked.add(engine)
        ready = t.prefix in _migrated.setdefault(engine, set())
    if ready:
        return engine
    if create_schema:
        with write_transaction(engine, "cannot create or migrate compactkit's tables") as conn:
            migrate(conn, t)
    else:
        with read_transaction(engine, "cannot read compactkit's schema version") as conn:
            verify(conn, t)
    with _lock:
        _migrated.setdefault(engine, set()).add(t.prefix)
    return engine


def _engine(url: str | URL) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigError(f"not a database URL: {str(url)!r} ({exc})") from exc
    if parsed.drivername == "postgresql":  # the bare scheme means psycopg2 to SQLAlchemy
        parsed = parsed.set(drivername="postgresql+psycopg")
    key = parsed.render_as_string(hide_password=False)
    with _lock:
        engine = _engines.get(key)
        if engine is not None:
            return engine
        options: dict[str, Any] = {}
        in_memory = parsed.get_backend_name() == "sqlite" and (parsed.database or ":memory:") == (
            ":memory:"
        )
        if in_memory:  # one database per engine: one connection, shared by the threads in turn
            options = {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
        try:
            engine = create_engine(parsed, **options)
        except (NoSuchModuleError, ImportError) as exc:
            raise ConfigError(
                f"cannot use {parsed.render_as_string()!r}: {exc}; install the driver "
                "(pip install 'compactkit[sql]', or 'compactkit[postgres]' for PostgreSQL)"
            ) from exc
        except ArgumentError as exc:
            raise ConfigError(f"not a usable database URL: {str(url)!r} ({exc})") from exc
        _engines[key] = engine
        if in_memory:
            _one_at_a_time[engine] = threading.RLock()
        return engine


def _dispose_after_fork() -> None:
    for engine in list(_engines.values()):
        engine.dispose(close=False)  # the parent's connections stay the parent's


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_dispose_after_fork)


def _sqlite_begin(conn: Connection) -> None:
    dbapi = conn.connection.driver_connection
    _prepare_sqlite(dbapi, conn.connection.info)
    if dbapi.in_transaction:  # type: ignore[union-attr]  # another hook began already
        return
    write = conn.get_execution_options().get(_WRITE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _prepare_sqlite(dbapi: Any, record: dict[Any, Any]) -> None:
    """Once per pooled connection: autocommit driver (we issue BEGIN), WAL, busy timeout."""
    if not record.get("compactkit_ready"):
        dbapi.isolation_level = None  # we issue BEGIN ourselves
        dbapi.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        _switch_to_wal(dbapi)
        dbapi.execute("PRAGMA foreign_keys=ON")
        record["compactkit_ready"] = True


def _switch_to_wal(dbapi: Any, timeout_s: float = BUSY_TIMEOUT_MS / 1000) -> None:
    """``PRAGMA journal_mode=WAL``, retried while the file is locked.

    Switching a new file to WAL takes an exclusive lock, and SQLite answers "database is
    locked" at once, without waiting in the busy handler, when waiting could deadlock (another
    process opening the same new file holds a write lock and waits for this one's read lock).
    Workers started together on a fresh file hit this (a test with two processes did, once in a
    CI run); retrying is safe: the pragma changes nothing once either of them has switched.
    """
    deadline = time.monotonic() + timeout_s
    pause = 0.005
    while True:
        try:
            dbapi.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


class Cursor(Protocol):
    """What the append path runs its statements on: a DB-API cursor taking ``?`` placeholders
    (SQLite's own cursor; on PostgreSQL a ``RawCursor``)."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any:
        """Run one statement; the cursor, to fetch from."""

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> Any:
        """Run one statement for each row of parameters."""


class RawCursor:
    """A driver cursor that takes ``?`` placeholders on a driver that wants ``%s``."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Any:
        """Run one statement; the cursor, to fetch from."""
        self._cursor.execute(sql.replace("?", "%s"), params)
        return self._cursor

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> None:
        """Run one statement for each row of parameters."""
        self._cursor.executemany(sql.replace("?", "%s"), rows)

    def close(self) -> None:
        """Close the driver's cursor."""
        self._cursor.close()


def driver_cursor(dbapi: Any, sqlite: bool) -> Any:
    """A cursor of the driver connection ``dbapi`` taking ``?`` placeholders (a ``Cursor``
    with ``close()``). A module function so that tests can record what it runs."""
    return dbapi.cursor() if sqlite else RawCursor(dbapi.cursor())


class RawWriter:
    """Runs ``work(cursor, *args)`` in a write transaction on the driver's own connection (the
    append hot path) and returns its result.

    The same transaction as ``write_transaction`` (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL:
    ``work``'s first ``UPDATE`` of the session row locks it), committed when ``work`` returns
    and rolled back on any exception, without SQLAlchemy's per-statement work: an append is a
    few fixed statements, and building them each time cost more than the commit. A plain call,
    not a context manager, because every microsecond here is paid per agent step.

    This one checks a connection out of the engine's pool for each write (PostgreSQL, and
    SQLite engines whose pool is not a ``QueuePool``: in-memory databases, ``NullPool``).
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._sqlite = engine.dialect.name == "sqlite"
        self._errors: type[Exception] = engine.dialect.loaded_dbapi.Error

    def __call__(
        self,
        failure: str,
        work: Callable[Concatenate[Cursor, _P], _T],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _T:
        def bound(cursor: Cursor) -> _T:
            return work(cursor, *args, **kwargs)

        lock = _one_at_a_time.get(self._engine)
        if lock is None:
            return self._write(failure, bound)
        with lock:
            return self._write(failure, bound)

    def one_statement(
        self,
        failure: str,
        work: Callable[Concatenate[Cursor, _P], _T],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _T:
        """As calling the writer, for a ``work`` each of whose statements is atomic and safe on
        its own (the append made of one statement): on PostgreSQL it runs in autocommit, so a
        statement commits as it runs, with no ``BEGIN`` and ``COMMIT`` round trips of their
        own; on SQLite in a write transaction, as any write."""
        if self._sqlite:
            return self(failure, work, *args, **kwargs)
        return self._write(failure, lambda cursor: work(cursor, *args, **kwargs), autocommit=True)

    def unsynced(
        self,
        failure: str,
        work: Callable[Concatenate[Cursor, _P], _T],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _T:
        """As calling the writer, for a write whose loss in a power failure harms nothing (a
        lease taken: its holder goes down with the machine). On an SQLite file in WAL mode
        (``_HeldWriter``) its commit is not fsynced; here it is a plain write."""
        return self(failure, work, *args, **kwargs)

    def _write(self, failure: str, work: Callable[[Cursor], _T], autocommit: bool = False) -> _T:
        try:
            raw = self._engine.raw_connection()
        except SQLAlchemyError as exc:
            raise StorageError(f"{failure}: {_reason(exc)}") from exc
        try:
            dbapi: Any = raw.driver_connection
            try:
                if self._sqlite:
                    _prepare_sqlite(dbapi, raw.info)
                    dbapi.execute("BEGIN IMMEDIATE")
                elif autocommit:
                    dbapi.autocommit = True
                cursor = driver_cursor(dbapi, self._sqlite)
                try:
                    done = work(cursor)
                finally:
                    cursor.close()
                if not autocommit:
                    dbapi.commit()
                return done
            except BaseException as exc:
                if not autocommit:
                    dbapi.rollback()
                if isinstance(exc, self._errors):
                    raise StorageError(f"{failure}: {_reason(exc)}") from exc
                raise
            finally:
                if autocommit:
                    _end_autocommit(raw, dbapi)
        finally:
            raw.close()


def _end_autocommit(raw: Any, dbapi: Any) -> None:
    """Give the pool its connection back in transaction mode; a connection that cannot be
    switched back (broken meanwhile) is invalidated rather than reused."""
    try:
        dbapi.autocommit = False
    except Exception:
        raw.invalidate()


@contextmanager
def write_transaction(engine: Engine, failure: str) -> Iterator[Connection]:
    """A transaction that may write; commits on success, rolls back on any exception.

    On SQLite it holds the database's write lock from its first statement; on PostgreSQL the
    caller locks the session row (``with_for_update``). Database errors become
    ``StorageError("<failure>: <reason>")``.
    """
    with _turn(engine), storage_errors(failure), engine.connect() as conn:
        conn.execution_options(**{_WRITE: True})
        with conn.begin():
            yield conn


@contextmanager
def read_transaction(engine: Engine, failure: str) -> Iterator[Connection]:
    """A read-only transaction whose statements all see one snapshot of the database."""
    with _turn(engine), storage_errors(failure), engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            yield conn


@contextmanager
def _turn(engine: Engine) -> Iterator[None]:
    """Serialise transactions on an in-memory SQLite engine (they share one connection)."""
    lock = _one_at_a_time.get(engine)
    if lock is None:
        yield
        return
    with lock:
        yield


@contextmanager
def single_statement(engine: Engine, failure: str) -> Iterator[Connection]:
    """A connection for one read outside any transaction: on PostgreSQL in autocommit mode,
    which saves the BEGIN and COMMIT round trips (SQLite has none to save)."""
    if engine.dialect.name != "postgresql":
        with read_transaction(engine, failure) as conn:
            yield conn
        return
    with storage_errors(failure), engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT")
        yield conn


@contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """Map the database's exceptions to ``StorageError`` (cause attached)."""
    try:
        yield
    except SQLAlchemyError as exc:
        raise StorageError(f"{what}: {_reason(exc)}") from exc


def _reason(exc: BaseException) -> str:
    return " ".join(str(getattr(exc, "orig", None) or exc).split())  # one line
