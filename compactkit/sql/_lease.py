"""Session and compaction leases in SQL: columns of the session's row (schema version 2).

The lease lives on the row every write to the session already locks, so taking it over and
appending queue on one lock: an append fenced by token ``n`` (``... WHERE lease_token = n``)
either commits before a takeover or finds the new token and is refused. Expiry is checked
against the database's clock on PostgreSQL (several machines), the process's on SQLite.

A lease can be taken two ways. ``acquire`` takes it in a transaction of its own and
``release`` gives it back in another (a run that must read the saved session under the lease
before it writes: ``Agent`` runs). ``WriteLease`` (``SQLMemory.lease_writes``) takes it in the
first append's own ``UPDATE`` and gives it back in the last one's, so a turn of appends pays
no transaction for its lease; only a busy lease falls back to ``acquire``'s waiting.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Connection, Engine, func, select, update

from compactkit.errors import LeaseLostError, SessionBusyError
from compactkit.sessions.lease import SessionLease, wait_steps
from compactkit.sql._engine import write_transaction
from compactkit.sql._rows import _insert_session, _utc
from compactkit.sql._schema import Tables

__all__ = [
    "LeaseBusy",
    "WriteLease",
    "acquire",
    "check_fence",
    "lease_scope",
    "lost",
    "release",
    "release_compaction",
    "seconds_now",
    "take_compaction",
]


class LeaseBusy(Exception):
    """The lease an append was to take is held, live, by another holder (rolled back)."""


@dataclass(eq=False)
class WriteLease:
    """The session lease of a block of writes (``SQLMemory.lease_writes``): taken by its
    first write, given back by the append after ``release_with_next_append()`` — or, when no
    append did, when the block ends."""

    holder: str
    """Who holds (or is to hold) the lease."""
    timeout: float
    """Seconds the first write waits for another holder's live lease."""
    ttl: float
    """Seconds the lease lives past its last write."""
    lease: SessionLease | None = None
    """The lease, once a write took it (its ``token`` fences this block's writes; give it
    to ``session.lease`` to fence a store's saves too)."""
    released: bool = False
    """Whether a write gave the lease back (the block's later writes take it again)."""
    release_next: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    """Held while the lease is taken: two threads writing in one block take it once."""

    def release_with_next_append(self) -> None:
        """Give the lease back in the next append's transaction (the block's last write),
        instead of in one more transaction when the block ends."""
        self.release_next = True


def lease_scope(engine: Engine, t: Tables) -> str:
    """Where a lease of these tables lives: the database and the table prefix."""
    return f"sql:{engine.url.render_as_string(hide_password=True)}#{t.prefix}"


def seconds_now(conn: Connection) -> float:
    """Now in seconds since the epoch, by the clock every worker shares."""
    if conn.dialect.name == "postgresql":
        return float(
            conn.execute(select(func.extract("epoch", func.clock_timestamp()))).scalar_one()
        )
    return time.time()


def acquire(
    engine: Engine, t: Tables, session_id: str, *, holder: str, timeout: float, ttl: float
) -> SessionLease:
    """Take the session lease of ``session_id`` (see ``LeasingStore.acquire``)."""
    scope = lease_scope(engine, t)
    pauses = iter(wait_steps(timeout))
    while True:
        busy = _try_take(engine, t, session_id, holder=holder, ttl=ttl, scope=scope)
        if isinstance(busy, SessionLease):
            return busy
        pause = next(pauses, None)
        if pause is None:
            other, since = busy
            raise SessionBusyError(
                f"session {session_id!r} is running elsewhere: {other!r} has held its lease "
                f"since {since:%Y-%m-%d %H:%M:%S} UTC (waited {timeout:g} s); retry later, "
                "or pass a longer lease_timeout",
                session_id=session_id,
                holder=other,
                since=since,
            )
        time.sleep(pause)


def _try_take(
    engine: Engine, t: Tables, session_id: str, *, holder: str, ttl: float, scope: str
) -> SessionLease | tuple[str, datetime]:
    s = t.sessions
    columns = (s.c.lease_token, s.c.lease_holder, s.c.lease_since, s.c.lease_expires)
    with write_transaction(engine, f"cannot lease session {session_id!r}") as conn:
        query = select(*columns, s.c.state_revision).where(s.c.id == session_id)
        found = conn.execute(query.with_for_update()).first()
        if found is None:
            _insert_session(conn, t, session_id)
            found = conn.execute(query.with_for_update()).one()
        token, current, since, expires, revision = found
        now = seconds_now(conn)
        if current is not None and current != holder and expires is not None and expires > now:
            return current, _utc(since)
        taken = datetime.now(timezone.utc)
        conn.execute(
            update(s)
            .where(s.c.id == session_id)
            .values(
                lease_token=token + 1,
                lease_holder=holder,
                lease_since=taken,
                lease_expires=now + ttl,
            )
        )
    return SessionLease(session_id, holder, token + 1, taken, revision, scope, ttl)


def check_fence(conn: Connection, t: Tables, lease: SessionLease) -> Any:
    """Lock the session row; raise ``LeaseLostError`` unless ``lease`` still holds it, and
    extend it by its ``ttl``. The row's ``state_revision``."""
    s = t.sessions
    found = conn.execute(
        select(s.c.lease_token, s.c.lease_holder, s.c.lease_since, s.c.state_revision)
        .where(s.c.id == lease.session_id)
        .with_for_update()
    ).first()
    if found is None or found.lease_token != lease.token:
        raise lost(lease, None if found is None else found.lease_holder)
    if lease.ttl is not None:
        conn.execute(
            update(s)
            .where(s.c.id == lease.session_id)
            .values(lease_expires=seconds_now(conn) + lease.ttl)
        )
    return found.state_revision


def lost(lease: SessionLease, holder: str | None) -> LeaseLostError:
    """The error for a write made under ``lease`` after it was taken over."""
    now = "nobody" if holder is None else repr(holder)
    return LeaseLostError(
        f"the lease of session {lease.session_id!r} taken by {lease.holder!r} (token "
        f"{lease.token}) was taken over (now held by {now}): it expired while this run "
        "stalled; this write was not applied — resume the session to continue"
    )


def release(engine: Engine, t: Tables, lease: SessionLease) -> None:
    """Give ``lease`` back, unless it was taken over."""
    s = t.sessions
    with write_transaction(engine, f"cannot release session {lease.session_id!r}") as conn:
        conn.execute(
            update(s)
            .where(s.c.id == lease.session_id, s.c.lease_token == lease.token)
            .values(lease_holder=None, lease_since=None, lease_expires=None)
        )


def take_compaction(
    engine: Engine, t: Tables, session_id: str, *, holder: str, ttl: float, wait: float = 0.0
) -> str:
    """Take the compaction lease of ``session_id`` unless another holds a live one, waiting up
    to ``wait`` seconds for it; who holds it afterwards (``holder`` when it was taken)."""
    pauses = iter(wait_steps(wait))
    while True:
        current = _take_compaction(engine, t, session_id, holder=holder, ttl=ttl)
        pause = next(pauses, None)
        if current == holder or pause is None:
            return current
        time.sleep(pause)


def _take_compaction(engine: Engine, t: Tables, session_id: str, *, holder: str, ttl: float) -> str:
    s = t.sessions
    with write_transaction(engine, f"cannot lease the compaction of {session_id!r}") as conn:
        query = select(s.c.compaction_holder, s.c.compaction_expires).where(s.c.id == session_id)
        found = conn.execute(query.with_for_update()).first()
        if found is None:
            _insert_session(conn, t, session_id)
            found = conn.execute(query.with_for_update()).one()
        now = seconds_now(conn)
        if found[0] not in (None, holder) and found[1] is not None and found[1] > now:
            return str(found[0])
        conn.execute(
            update(s)
            .where(s.c.id == session_id)
            .values(compaction_holder=holder, compaction_expires=now + ttl)
        )
    return holder


def release_compaction(engine: Engine, t: Tables, session_id: str, *, holder: str) -> None:
    """Give the compaction lease back, if ``holder`` still holds it."""
    s = t.sessions
    with write_transaction(engine, f"cannot release session {session_id!r}") as conn:
        conn.execute(
            update(s)
            .where(s.c.id == session_id, s.c.compaction_holder == holder)
            .values(compaction_holder=None, compaction_expires=None)
        )
