"""``SQLSessionStore``'s hot path: one incremental save as two plain statements, and a run's
lease taken and given back in one statement each.

An agent saves after every step, and almost every save is a patch on top of what the same
session object saved last: bump the revision in the session's row — only while the lease (or,
without one, no live lease), the revision and the base are the ones that object saw — and insert
the patch row. Built through SQLAlchemy each time, those statements and their transaction cost
several times the commit itself; here they are fixed SQL strings on the driver's cursor
(``compactkit.sql._engine.RawWriter``, as the memory's append path does). When the ``UPDATE``
matches no row nothing is written, and the store takes its full path, which tells why (a lost
lease, a busy session, another writer's save) or writes the whole state.

A run takes the session's lease before its first step and gives it back after its last: built
through SQLAlchemy (a locking read, then an update) each cost about three saves. Here taking it
is one guarded ``UPDATE … RETURNING`` (the same rule: free, ours, or expired); when it matches no
row (no row yet, or a live holder) the store takes its full path, which creates the row or
waits.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Engine

from compactkit.sessions.journal import SaveMark
from compactkit.sessions.lease import SessionLease
from compactkit.sql._append import _same, _stamper
from compactkit.sql._engine import Cursor
from compactkit.sql._schema import Tables

__all__ = ["LeaseSQL", "PatchSQL"]


class PatchSQL:
    """The statements of a patch save for one prefix and dialect."""

    def __init__(self, t: Tables, engine: Engine) -> None:
        s, p = t.sessions.name, t.session_patches.name
        self._postgres = engine.dialect.name == "postgresql"
        # The clock leases expire by (compactkit.sql._lease.seconds_now): the database's on
        # PostgreSQL, the process's on SQLite (one machine).
        now = "EXTRACT(EPOCH FROM clock_timestamp())" if self._postgres else "?"
        bump = "UPDATE {s} SET state_revision = state_revision + 1, updated_at = ?{extend} "
        where = "WHERE id = ? AND state_revision = ? AND state_base = ?"
        self._fenced = (
            bump.format(s=s, extend=f", lease_expires = {now} + ?") + where + " AND lease_token = ?"
        )
        self._fenced_forever = bump.format(s=s, extend="") + where + " AND lease_token = ?"
        # the run's last save gives its lease back in the same statement
        self._fenced_last = (
            bump.format(
                s=s, extend=", lease_holder = NULL, lease_since = NULL, lease_expires = NULL"
            )
            + where
            + " AND lease_token = ?"
        )
        self._unleased = (
            bump.format(s=s, extend="")
            + where
            + f" AND (lease_holder IS NULL OR COALESCE(lease_expires, 0) <= {now})"
        )
        self._insert = f"INSERT INTO {p} (session_id, revision, patch) VALUES (?, ?, ?)"
        when = t.sessions.c.updated_at.type.dialect_impl(engine.dialect)
        self._stamp = _stamper(when.bind_processor(engine.dialect))

    def save(
        self,
        cursor: Cursor,
        session_id: str,
        lease: SessionLease | None,
        mark: SaveMark,
        patch: str,
        release: bool = False,
    ) -> bool:
        """Apply ``patch`` (revision ``mark.revision + 1``) in ``cursor``'s transaction, and
        with ``release`` give ``lease`` back in it; ``False`` (nothing written) unless the row
        is still the one ``mark`` describes and the lease lets this save through."""
        row: tuple[Any, ...] = (session_id, mark.revision, mark.proof)
        clock: tuple[Any, ...] = () if self._postgres else (time.time(),)
        if lease is None:
            found = cursor.execute(self._unleased, (self._stamp(), *row, *clock))
        elif release:
            found = cursor.execute(self._fenced_last, (self._stamp(), *row, lease.token))
        elif lease.ttl is None:
            found = cursor.execute(self._fenced_forever, (self._stamp(), *row, lease.token))
        else:
            extend = (*clock, lease.ttl)
            found = cursor.execute(self._fenced, (self._stamp(), *extend, *row, lease.token))
        if found.rowcount != 1:
            return False
        cursor.execute(self._insert, (session_id, mark.revision + 1, patch))
        return True


class LeaseSQL:
    """The statements that take and give back a run's lease, for one prefix and dialect."""

    def __init__(self, t: Tables, engine: Engine, scope: str) -> None:
        s = t.sessions.name
        self._postgres = engine.dialect.name == "postgresql"
        self._scope = scope
        now = "EXTRACT(EPOCH FROM clock_timestamp())" if self._postgres else "?"
        # Taken unless another holder's lease is live (as compactkit.sql._lease._try_take).
        self._take = (
            f"UPDATE {s} SET lease_token = lease_token + 1, lease_holder = ?, lease_since = ?, "
            f"lease_expires = {now} + ? WHERE id = ? AND (lease_holder IS NULL OR "
            f"lease_holder = ? OR lease_expires IS NULL OR lease_expires <= {now}) "
            "RETURNING lease_token, state_revision"
        )
        self._give = (
            f"UPDATE {s} SET lease_holder = NULL, lease_since = NULL, lease_expires = NULL "
            "WHERE id = ? AND lease_token = ?"
        )
        since = t.sessions.c.lease_since.type.dialect_impl(engine.dialect)
        self._bind_since = since.bind_processor(engine.dialect) or _same

    def take(self, cursor: Cursor, session_id: str, holder: str, ttl: float) -> SessionLease | None:
        """The lease of ``session_id`` for ``holder``; ``None`` (nothing written) when the
        session has no row yet or another holder's lease is live."""
        taken = datetime.now(timezone.utc)
        since = self._bind_since(taken)
        if self._postgres:
            params: tuple[Any, ...] = (holder, since, ttl, session_id, holder)
        else:
            now = time.time()
            params = (holder, since, now, ttl, session_id, holder, now)
        row = cursor.execute(self._take, params).fetchone()
        if row is None:
            return None
        token, revision = row
        return SessionLease(session_id, holder, int(token), taken, revision, self._scope, ttl)

    def give_back(self, cursor: Cursor, lease: SessionLease) -> None:
        """Release ``lease`` (nothing when it was taken over meanwhile)."""
        cursor.execute(self._give, (lease.session_id, lease.token))
