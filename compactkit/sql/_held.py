"""The SQLite file's held writer: one connection per engine and process, kept out of the pool for
the append path's writes (``compactkit.sql._engine.RawWriter`` is the pooled one), and its
unsynced writes (committed without an fsync, for writes whose loss in a power failure harms
nothing).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from contextlib import suppress
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import Pool, PoolProxiedConnection, QueuePool

from compactkit.errors import StorageError
from compactkit.sql import _engine
from compactkit.sql._engine import Cursor, RawWriter, _prepare_sqlite, _reason

__all__ = ["raw_writer"]

_T = TypeVar("_T")
_P = ParamSpec("_P")
_lock = threading.Lock()


class _HeldWriter(RawWriter):
    """The writer of an SQLite file: one connection per engine and process, held out of the
    pool and shared by the process's threads in turn.

    A pool checkout and return cost a sixth of a whole append, and SQLite takes one writer at
    a time anyway, so the threads of a process queue on a lock here rather than in SQLite's
    busy handler (which sleeps in steps of milliseconds); the connection's page cache also
    stays warm, since no other connection of this process writes between two appends.
    Writes of other processes, and this process's other transactions (compactions, reads),
    still meet it at SQLite's locks as before. ``engine.dispose()`` makes the next append
    close it and take a new one; a forked child never uses (or closes) its parent's.
    """

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._held = _held_connection(engine)

    def __call__(
        self,
        failure: str,
        work: Callable[Concatenate[Cursor, _P], _T],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _T:
        # One flat function: each call level here costs about 1% of an append.
        held, engine = self._held, self._engine
        with held.lock:
            cursor = held.cursor if held.pool is engine.pool else held.connect(engine, failure)
            try:
                cursor.execute("BEGIN IMMEDIATE")
                done = work(cursor, *args, **kwargs)
                cursor.execute("COMMIT")
                return done
            except BaseException as exc:
                held.recover()
                if isinstance(exc, self._errors):
                    raise StorageError(f"{failure}: {_reason(exc)}") from exc
                raise

    def unsynced(
        self,
        failure: str,
        work: Callable[Concatenate[Cursor, _P], _T],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _T:
        """As calling the writer, committed with ``synchronous=NORMAL``: in WAL mode SQLite
        then appends the transaction to the WAL without an fsync (~15 µs instead of ~100), and
        the next durable commit's fsync of the WAL carries it. The connection's own setting
        (FULL, the driver's default) is put back before anyone else writes on it; a
        connection that cannot take it back is closed."""
        held = self._held
        with held.lock:
            if held.pool is not self._engine.pool:
                held.connect(self._engine, failure)
            previous = held.synchronous
            if previous is None:  # not WAL, or not FULL/EXTRA: nothing to lighten
                return self(failure, work, *args, **kwargs)  # (the lock is re-entrant)
            try:
                held.cursor.execute("PRAGMA synchronous=NORMAL")
                return self(failure, work, *args, **kwargs)
            finally:
                try:
                    if held.cursor is not None:  # (a failed write may have closed it)
                        held.cursor.execute(f"PRAGMA synchronous={previous}")
                except Exception:  # never left lowered: the next write opens another
                    held.close()


class _Held:
    """An SQLite connection held out of its engine's pool, with the cursor its appends run on
    (one for all: a cursor per append cost 2% of it) and the lock its users queue on.

    ``pool`` is the engine's pool the connection came from (``None`` when there is none): a
    different pool on the engine means ``engine.dispose()`` ran since.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()  # re-entrant: an unsynced write takes it around a write
        self.pool: Pool | None = None
        self.cursor: Any = None
        self.synchronous: int | None = None
        """The connection's ``synchronous`` when it is FULL or EXTRA in WAL mode (what an
        unsynced write lowers and puts back), else ``None``."""
        self._raw: PoolProxiedConnection | None = None
        self._dbapi: Any = None  # the driver's connection (a detached one no longer says)

    def connect(self, engine: Engine, failure: str) -> Any:
        """Close the connection held, if any, and take a new one; its cursor (call under
        ``lock``)."""
        self.close()
        try:
            raw = engine.raw_connection()
            dbapi = raw.driver_connection
            raw.detach()  # the pool forgets it: it is ours to keep, and to close
        except SQLAlchemyError as exc:
            raise StorageError(f"{failure}: {_reason(exc)}") from exc
        _prepare_sqlite(dbapi, raw.info)
        self.pool, self._raw, self._dbapi = engine.pool, raw, dbapi
        self.cursor = _engine.driver_cursor(dbapi, True)
        wal = str(self.cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
        level = int(self.cursor.execute("PRAGMA synchronous").fetchone()[0])
        self.synchronous = level if wal and level >= 2 else None
        return self.cursor

    def recover(self) -> None:
        """After a failed write: roll back and start the next one on a fresh cursor. A
        connection that cannot roll back is closed, which rolls back too (call under
        ``lock``; the write's own error is the one to report)."""
        try:
            self.cursor.close()  # it may hold an unfinished statement
            self._dbapi.rollback()
            self.cursor = _engine.driver_cursor(self._dbapi, True)
        except BaseException:  # the caller raises the write's own error
            self.close()

    def close(self) -> None:
        """Close the connection (call under ``lock``); the next write opens another."""
        raw, self._raw, self._dbapi, self.cursor, self.pool = self._raw, None, None, None, None
        if raw is not None:
            with suppress(Exception):  # closing a connection that already failed
                raw.close()

    def forget(self) -> None:
        """In a forked child: drop the parent's connection without closing it (SQLite
        connections must never cross a fork) and start with a lock nobody holds."""
        if self._raw is not None:
            _inherited.append((self._raw, self._dbapi, self.cursor))
        self._raw, self._dbapi, self.cursor, self.pool = None, None, None, None
        self.lock = threading.RLock()


_held: weakref.WeakKeyDictionary[Engine, _Held] = weakref.WeakKeyDictionary()
_inherited: list[tuple[Any, ...]] = []  # a forked child's copies, never used


def _held_connection(engine: Engine) -> _Held:
    with _lock:
        found = _held.get(engine)
        if found is None:
            found = _held[engine] = _Held()
        return found


def raw_writer(engine: Engine) -> RawWriter:
    """The append path's writer for ``engine``: on an SQLite file with a connection pool, one
    connection held for the process's appends; otherwise a pool checkout per write."""
    url = engine.url
    memory = (url.database or ":memory:") == ":memory:" or url.query.get("mode") == "memory"
    if engine.dialect.name == "sqlite" and isinstance(engine.pool, QueuePool) and not memory:
        return _HeldWriter(engine)
    return RawWriter(engine)


def _forget_after_fork() -> None:
    for held in list(_held.values()):
        held.forget()


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_forget_after_fork)
