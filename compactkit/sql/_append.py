"""The append hot path of ``SQLMemory``: a few fixed statements on the driver's connection.

An append is the one write an agent makes on every step, so it skips SQLAlchemy's statement
building (which cost more than the commit itself) and keeps its guarantees:

1. ``UPDATE sessions SET version = version + 1, next_seq = next_seq + n ...`` — the write lock
   (SQLite's ``BEGIN IMMEDIATE`` is already held; on PostgreSQL the row lock queues other
   writers) — and the counters after it: ``RETURNING`` on PostgreSQL (one round trip), a
   ``SELECT`` of the row on SQLite (in the process, and cheaper there than ``RETURNING``).
   A missing row (the session's first write) is inserted, then bumped.
2. Only when the batch holds calls or tool outputs: the stored rows sharing their call ids
   (the call-index check, an index lookup).
3. ``INSERT`` of the item rows, numbered from the ``next_seq`` read in step 1.

A failed check rolls the transaction back: nothing is stored and the version is unchanged.

The session lease (``compactkit.sql._lease``) rides on step 1's ``UPDATE``, so it costs no
statement of its own: a fenced append adds ``AND lease_token = ?`` and extends the lease's
expiry; the first append of a leased turn takes the lease (``lease_token + 1``, only while it
is free, expired or already this holder's) and the turn's last one can give it back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple

from sqlalchemy import Engine

from compactkit.items import FunctionCall, FunctionCallOutput, Item, with_field
from compactkit.memory.rules import CallIndex
from compactkit.sessions.lease import SessionLease
from compactkit.sql._engine import Cursor
from compactkit.sql._lease import LeaseBusy, lost
from compactkit.sql._rows import _ACTIVE, _call_key, _now, _payload
from compactkit.sql._schema import Tables

__all__ = ["AppendSQL", "Appended", "LeaseTake"]

_CALLS = (FunctionCall, FunctionCallOutput)  # the items the call-index check is about

_COLUMNS = (
    "session_id, seq, kind, call_id, payload, replacement, pinned, status, position, "
    "archived_by, created_by, created_at"
)


class Appended(NamedTuple):
    """What an append stored, and the session counters after it (a named tuple: a frozen
    dataclass took a tenth of the append's Python to build)."""

    items: list[Item]
    version: int
    """The version after the append."""
    window_version: int
    next_seq: int
    """The seq counter after the append."""
    created_at: datetime
    lease_token: int
    """The session's lease token after the append (the new one when it took the lease)."""
    revision: int
    """The store's revision of the saved session (``state_revision``)."""


class LeaseTake(NamedTuple):
    """An append that takes the session lease in its own transaction: for ``holder``, while
    the lease is free, expired or already ``holder``'s, living ``ttl`` seconds."""

    holder: str
    ttl: float
    since: datetime


class AppendSQL:
    """The append statements for one prefix and dialect, with the dialect's value conversions
    (SQLite stores datetimes as text and booleans as integers)."""

    def __init__(self, t: Tables, engine: Engine) -> None:
        s, i = t.sessions.name, t.items.name
        dialect = engine.dialect
        counters = "version, window_version, next_seq, created_at, lease_token, state_revision"
        # PostgreSQL: RETURNING saves a round trip. SQLite: a SELECT of the row just updated
        # costs a third of what RETURNING does (it buffers its rows in a temporary table).
        self._returning = dialect.name == "postgresql"
        returning = f" RETURNING {counters}" if self._returning else ""
        bump = f"UPDATE {s} SET version = version + 1, next_seq = next_seq + ?, updated_at = ?"
        # Lease expiry is by the database's clock on PostgreSQL (many machines share it), by
        # the process's on SQLite (one machine): there the parameter is the time itself.
        now = "EXTRACT(EPOCH FROM clock_timestamp())" if self._returning else "?"
        expires = f"{now} + ?" if self._returning else "?"
        kept = f"COALESCE({expires}, lease_expires)"  # a lease without ttl keeps its expiry
        self._bump = f"{bump} WHERE id = ?{returning}"
        # A fenced append (a run's lease): applied only while the lease's token holds; it
        # extends the lease (``lease_expires``) as every fenced write does.
        self._fenced_bump = (
            f"{bump}, lease_expires = {kept} WHERE id = ? AND lease_token = ?{returning}"
        )
        freed = "lease_holder = NULL, lease_since = NULL, lease_expires = NULL"
        self._releasing_bump = f"{bump}, {freed} WHERE id = ? AND lease_token = ?{returning}"
        takable = (
            "(lease_holder IS NULL OR lease_holder = ? OR lease_expires IS NULL "
            f"OR lease_expires <= {now})"
        )
        self._taking_bump = (
            f"{bump}, lease_token = lease_token + 1, lease_holder = ?, lease_since = ?, "
            f"lease_expires = {expires} WHERE id = ? AND {takable}{returning}"
        )
        self._taking_releasing_bump = (  # a turn of one append: taken and given back at once
            f"{bump}, lease_token = lease_token + 1, {freed} WHERE id = ? AND {takable}{returning}"
        )
        self._counters = f"SELECT {counters} FROM {s} WHERE id = ?"
        self._create = (
            f"INSERT INTO {s} (id, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
        )
        self._calls = f"SELECT kind, call_id FROM {i} WHERE session_id = ? AND call_id IN "
        self._insert = f"INSERT INTO {i} ({_COLUMNS}) VALUES ({', '.join('?' * 12)})"
        # PostgreSQL: a lone item that is no call or output (nothing to check first) is
        # inserted by the bump's own statement, numbered from the counters it returns — one
        # round trip before the commit, as a plain INSERT has (else two).
        self._together: dict[str, str] = {}
        if self._returning:
            together = _together_sql(t, dialect, counters)
            for bump_sql in (self._bump, self._fenced_bump, self._releasing_bump):
                self._together[bump_sql] = together(bump_sql)
        when = t.sessions.c.created_at.type.dialect_impl(dialect)
        since = t.sessions.c.lease_since.type.dialect_impl(dialect)
        self._bind_time: Callable[[Any], Any] = since.bind_processor(dialect) or _same
        self._stamp = _stamper(when.bind_processor(dialect))
        self._read_time: Callable[[Any], Any] = when.result_processor(dialect, None) or _same
        pinned = t.items.c.pinned.type.dialect_impl(dialect)
        bind_bool = pinned.bind_processor(dialect) or _same
        self._pins = (bind_bool(False), bind_bool(True))  # the column's value, by pinned
        self._last_created: tuple[Any, datetime] | None = None

    def in_one_statement(self, items: Sequence[Item]) -> bool:
        """Whether ``append(cursor, session_id, items)`` (no ``take``) runs one statement
        (after the session's first write): PostgreSQL, a lone item that is no call or output.
        Each of its statements is then atomic and safe alone (``RawWriter.one_statement``)."""
        return bool(self._together) and len(items) == 1 and not isinstance(items[0], _CALLS)

    def append(
        self,
        cursor: Cursor,
        session_id: str,
        items: Sequence[Item],
        *,
        accept_unknown: bool,
        fence: SessionLease | None = None,
        take: LeaseTake | None = None,
        release: bool = False,
    ) -> Appended:
        """Store ``items`` in the open transaction of ``cursor``.

        With ``fence``, only while that lease still holds the session (extending it); with
        ``take``, only when the lease can be taken for ``take.holder``, which this write does.
        ``release`` gives the lease (``fence``'s, or the one taken) back in the same write.

        Raises:
            ConfigError: the call-index check refused the batch (roll back: nothing stored).
            LeaseLostError: ``fence`` was taken over (roll back: nothing stored).
            LeaseBusy: another holder has a live lease (roll back: nothing stored).
        """
        count = len(items)
        now = self._stamp()
        if take is not None:
            found = self._taken(cursor, session_id, count, now, take, release)
            return self._insert_items(cursor, session_id, items, now, found, accept_unknown)
        params: tuple[Any, ...]
        if fence is None:
            sql, params = self._bump, (count, now, session_id)
        elif release:
            sql, params = self._releasing_bump, (count, now, session_id, fence.token)
        else:
            sql = self._fenced_bump
            params = (count, now, self._expires(fence.ttl), session_id, fence.token)
        if self.in_one_statement(items):
            row = self._row(session_id, items[0], now)
            params = (*params, *row[:1], *row[2:8], *row[9:])  # seq and position: the bump's
            found = self._bumped_or_lost(
                cursor, self._together[sql], params, session_id, fence, now
            )
            return self._appended([_numbered(items[0], found[2] - 1)], found)
        found = self._bumped_or_lost(cursor, sql, params, session_id, fence, now)
        return self._insert_items(cursor, session_id, items, now, found, accept_unknown)

    def _bumped_or_lost(
        self,
        cursor: Cursor,
        sql: str,
        params: tuple[Any, ...],
        session_id: str,
        fence: SessionLease | None,
        now: Any,
    ) -> Any:
        """Run the bumping ``sql``; the counters after it. Without ``fence``, the session's
        first write makes its row first; with it, no row bumped means the lease was lost."""
        found = self._bumped(cursor, sql, params, session_id)
        if found is None:
            if fence is not None:  # acquiring the lease made the row: another run holds it
                raise lost(fence, None)
            cursor.execute(self._create, (session_id, now, now))  # the session's first write
            found = self._bumped(cursor, sql, params, session_id)
        return found

    def _insert_items(
        self,
        cursor: Cursor,
        session_id: str,
        items: Sequence[Item],
        now: Any,
        found: Any,
        accept_unknown: bool,
    ) -> Appended:
        """Check and insert ``items``, numbered from the bumped counters ``found``."""
        count = len(items)
        next_seq = found[2]
        if (  # only calls and outputs have anything to check
            isinstance(items[0], _CALLS)
            if count == 1
            else any(isinstance(i, _CALLS) for i in items)
        ):
            self._index(cursor, session_id, items).check(items, accept_unknown=accept_unknown)
        first = next_seq - count
        stored = [_numbered(item, first + k) for k, item in enumerate(items)]
        if count == 1:  # the usual append; executemany prepares more
            cursor.execute(self._insert, self._row(session_id, stored[0], now))
        else:
            cursor.executemany(self._insert, [self._row(session_id, i, now) for i in stored])
        return self._appended(stored, found)

    def _appended(self, stored: list[Item], found: Any) -> Appended:
        version, window_version, next_seq, created_at, token, revision = found
        return Appended(
            stored, version, window_version, next_seq, self._created(created_at), token, revision
        )

    def _taken(
        self,
        cursor: Cursor,
        session_id: str,
        count: int,
        now: Any,
        take: LeaseTake,
        release: bool,
    ) -> Any:
        """Bump the counters while taking the lease; the row after. Raises ``LeaseBusy``."""
        clock = () if self._returning else (time.time(),)
        if release:
            sql = self._taking_releasing_bump
            params: tuple[Any, ...] = (count, now, session_id, take.holder, *clock)
        else:
            sql = self._taking_bump
            since = self._bind_time(take.since)
            expires = self._expires(take.ttl)
            params = (count, now, take.holder, since, expires, session_id, take.holder, *clock)
        found = self._bumped(cursor, sql, params, session_id)
        if found is None:  # the session's first write, or a live lease of another holder
            cursor.execute(self._create, (session_id, now, now))
            found = self._bumped(cursor, sql, params, session_id)
            if found is None:
                raise LeaseBusy(session_id)
        return found

    def _expires(self, ttl: float | None) -> float | None:
        """The ``lease_expires`` parameter for a lease living ``ttl`` seconds from now
        (``None``: a lease without expiry)."""
        if ttl is None:
            return None  # (PostgreSQL: clock + NULL is NULL too)
        return ttl if self._returning else time.time() + ttl

    def _bumped(self, cursor: Cursor, sql: str, params: tuple[Any, ...], session_id: str) -> Any:
        """Run the counters' ``UPDATE`` ``sql``; the row after (``None`` when no row was
        bumped)."""
        if self._returning:
            return cursor.execute(sql, params).fetchone()
        if cursor.execute(sql, params).rowcount == 0:
            return None
        return cursor.execute(self._counters, (session_id,)).fetchone()

    def _row(self, session_id: str, item: Item, now: Any) -> tuple[Any, ...]:
        call_id = item.call_id if isinstance(item, _CALLS) else None
        return (
            session_id,
            item.seq,
            item.type,
            None if call_id is None else _call_key(call_id),
            _payload(item),
            None,
            self._pins[item.pinned],
            _ACTIVE,
            item.seq,
            None,
            None,
            now,
        )

    def _created(self, stored: Any) -> datetime:
        """The session's ``created_at`` as read; the last one is kept, since a session's
        never changes and parsing the text costs a tenth of the append's Python."""
        last = self._last_created
        if last is not None and last[0] == stored:
            return last[1]
        parsed: datetime = self._read_time(stored)
        self._last_created = (stored, parsed)
        return parsed

    def _index(self, cursor: Cursor, session_id: str, items: Sequence[Item]) -> CallIndex:
        """The stored calls and outputs sharing a call id with ``items`` (index lookups)."""
        keys = {_call_key(i.call_id): i.call_id for i in items if isinstance(i, _CALLS)}
        index = CallIndex()
        marks = ", ".join("?" * len(keys))
        rows = cursor.execute(f"{self._calls}({marks})", (session_id, *keys)).fetchall()
        for kind, key in rows:
            (index.calls if kind == "function_call" else index.answered).add(keys[key])
        return index


def _together_sql(t: Tables, dialect: Any, counters: str) -> Callable[[str], str]:
    """PostgreSQL: the statement that runs a counters' ``UPDATE … RETURNING`` (``bump_sql``)
    and inserts one item row numbered from it (``seq`` = ``position`` = the new ``next_seq``
    - 1), returning the counters — no row when nothing was bumped, and then nothing is
    inserted. Its parameters: the bump's, then the row's (as ``AppendSQL._row``) without seq
    and position. Each parameter is cast to its column's type: in ``INSERT … SELECT`` a bare
    parameter would be text."""
    columns = [c.strip() for c in _COLUMNS.split(",")]
    values = ", ".join(
        "b.next_seq - 1"
        if name in ("seq", "position")
        else f"CAST(? AS {t.items.c[name].type.compile(dialect=dialect)})"
        for name in columns
    )
    insert = f"INSERT INTO {t.items.name} ({_COLUMNS}) SELECT {values} FROM b"

    def together(bump_sql: str) -> str:
        return f"WITH b AS ({bump_sql}), i AS ({insert}) SELECT {counters} FROM b"

    return together


def _numbered(item: Item, seq: int) -> Item:
    """``item`` numbered ``seq``, copied without ``model_copy``'s generic machinery (which
    cost a third of an append's Python)."""
    return with_field(item, "seq", seq)


def _same(value: Any) -> Any:
    return value


_Stamp = tuple[int, str]  # a second since the epoch, and its text up to the microseconds
_stamp: _Stamp = (-1, "")


def _sqlite_now() -> str:
    """Now as SQLAlchemy's SQLite DATETIME text, ``YYYY-MM-DD HH:MM:SS.ffffff`` (UTC).

    The date and time are formatted once a second: ``datetime.now().isoformat()`` (or
    SQLAlchemy's own formatting) took a sixth of an append's Python.
    """
    global _stamp
    second, micro = divmod(time.time_ns() // 1000, 1_000_000)
    stamp = _stamp  # one read: another thread may replace it meanwhile
    if stamp[0] != second:
        stamp = _stamp = (second, time.strftime("%Y-%m-%d %H:%M:%S.", time.gmtime(second)))
    return f"{stamp[1]}{micro:06d}"


def _stamper(bind: Callable[[Any], Any] | None) -> Callable[[], Any]:
    """A function giving the current time as ``bind`` (the dialect's datetime conversion, if
    any) would turn ``_now()`` into: ``_sqlite_now`` where it spells the same text."""
    if bind is None:
        return _now
    probe = datetime(2031, 1, 2, 3, 4, 5, 60_007, tzinfo=timezone.utc)
    spelled = time.strftime("%Y-%m-%d %H:%M:%S.", time.gmtime(int(probe.timestamp())))
    if f"{spelled}{probe.microsecond:06d}" == bind(probe):
        return _sqlite_now
    return lambda: bind(_now())  # pragma: no cover - SQLAlchemy's SQLite text is the one above
