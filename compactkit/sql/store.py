"""``SQLSessionStore``: saved sessions in SQLite or PostgreSQL, next to ``SQLMemory``.

A saved state (``SessionState`` JSON: runtime counters, metadata, the memory snapshot and its
history) is a base plus a journal (``compactkit.sessions.journal``): the base in
``<prefix>session_bases``, one row per incremental save in ``<prefix>session_patches``, and its
revision in the session's row of ``<prefix>sessions`` — the row ``SQLMemory`` keeps its counters
in, so one database and one prefix hold a session's memory and its checkpoints. A save is one
transaction (a reader never sees half a state), fenced by the run's lease and the stored
revision (``compactkit.sessions.lease``). A save by the session object that saved last inserts
one patch row holding what changed and bumps the revision in the (small) session row: it costs
what changed, not the session's size. Any other save, and one once the patches outgrow the
base, writes the whole state as a new base and deletes the patches. The row's ``state_base``
(a random id per base) keeps a patch from landing on another base. Resuming into an
``SQLMemory`` that kept being written since the checkpoint keeps what it holds: nothing
committed after a checkpoint is ever deleted by resuming it.
"""

from __future__ import annotations

import builtins
import secrets
from datetime import datetime, timezone

from sqlalchemy import Connection, Engine, delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL

from compactkit.errors import ConcurrencyError, SessionBusyError, SessionNotFoundError
from compactkit.sessions import require_session
from compactkit.sessions.journal import SaveMark, SaveMarks, read_journal, save_patch, save_whole
from compactkit.sessions.lease import (
    DEFAULT_TTL,
    GivenBack,
    SessionLease,
    check_lease_times,
    default_holder,
)
from compactkit.sessions.session import AgentSession, SessionState
from compactkit.sql._engine import connect, read_transaction, write_transaction
from compactkit.sql._held import raw_writer
from compactkit.sql._lease import acquire, check_fence, lease_scope, seconds_now
from compactkit.sql._rows import _utc
from compactkit.sql._schema import tables, validate_session_id
from compactkit.sql._store_patch import LeaseSQL, PatchSQL
from compactkit.sql.memory import SQLMemory

__all__ = ["SQLSessionStore"]


class SQLSessionStore:
    """Saves sessions in an SQL database (see the module docstring); safe to share between
    threads and processes."""

    def __init__(
        self,
        url_or_engine: str | URL | Engine,
        *,
        table_prefix: str = "compactkit_",
        create_schema: bool = True,
    ) -> None:
        """Use the database at ``url_or_engine`` (a URL or an SQLAlchemy ``Engine``).

        Args:
            url_or_engine: As for ``SQLMemory``; engines made from URLs are shared with it.
            table_prefix: Prefix of the table names (an SQL identifier); use the one your
                ``SQLMemory`` uses so both live in one set of tables.
            create_schema: Create or migrate the tables when needed.

        Raises:
            ConfigError: a bad prefix or URL, or a missing driver.
            StorageError: the database cannot be reached or migrated.
        """
        self._t = tables(table_prefix)
        self._engine = connect(url_or_engine, self._t, create_schema=create_schema)
        self._scope = lease_scope(self._engine, self._t)
        self._marks = SaveMarks()
        self._raw_write = raw_writer(self._engine)
        self._patch_sql = PatchSQL(self._t, self._engine)
        self._lease_sql = LeaseSQL(self._t, self._engine, self._scope)
        self._released = GivenBack()  # leases a save_and_release gave back

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return f"SQLSessionStore({url!r}, table_prefix={self._t.prefix!r})"

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine."""
        return self._engine

    def save(self, session: AgentSession) -> None:
        """Save ``session.state()`` in one transaction, replacing its earlier saved state.

        Incremental: when this session object made the session's last save, only what changed
        since is written (one row in ``<prefix>session_patches``); otherwise, and once the
        patches outgrow the base, the whole state (see ``compactkit.sessions.journal``).

        Fenced: under ``session.lease`` (a run's), the save is applied only while that lease
        still holds the session, and extends it. Without a lease it is refused while another
        run holds a live one. A session loaded or saved at an older revision than the stored
        one (someone saved since) is refused too.

        Raises:
            ConfigError: ``session`` is not an ``AgentSession`` (a memory or an id, say).
            LeaseLostError: the session's lease was taken over; nothing was saved.
            SessionBusyError: another run holds the session's lease; nothing was saved.
            ConcurrencyError: the session was saved since this object loaded it.
            StorageError: the database failed; the earlier state is unchanged.
        """
        session = require_session(session, "SQLSessionStore")
        session_id = validate_session_id(session.session_id)
        mark = self._marks.get(session)
        if mark is not None and self._saved_patch(session, mark):
            return
        now = datetime.now(timezone.utc)
        s, p, b = self._t.sessions, self._t.session_patches, self._t.session_bases
        failure = f"cannot save session {session_id!r}"
        lease = session.lease
        try:
            with write_transaction(self._engine, failure) as conn:
                if lease is not None and lease.scope == self._scope:
                    revision = check_fence(conn, self._t, lease)
                else:
                    revision = self._unleased_revision(conn, session_id)
                if session.fenced_by_revision and session.revision != revision:
                    raise ConcurrencyError(
                        f"session {session_id!r} was saved by another run (revision "
                        f"{revision}) since this object loaded it (revision "
                        f"{session.revision}); nothing was saved — resume it again to "
                        "continue from the newer state"
                    )
                new_mark = None
                if mark is not None and mark.revision == revision and not mark.outgrown():
                    change = save_patch(session, mark, revision + 1)
                    moved = conn.execute(
                        update(s)
                        .where(
                            s.c.id == session_id,
                            s.c.state_revision == revision,
                            s.c.state_base == mark.proof,  # never 0: 0 is "no saved state"
                        )
                        .values(state_revision=revision + 1, updated_at=now)
                    )
                    if moved.rowcount == 1:  # the base this object's patches extend is there
                        conn.execute(
                            insert(p).values(
                                session_id=session_id,
                                revision=revision + 1,
                                patch=change.data.decode(),
                            )
                        )
                        new_mark = change.mark
                        new_mark.proof = mark.proof
                if new_mark is None:
                    data, new_mark = save_whole(session, revision + 1)
                    new_mark.proof = secrets.randbits(62) + 1
                    values = {
                        "state_revision": revision + 1,
                        "state_base": new_mark.proof,
                        "updated_at": now,
                    }
                    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
                    upsert = dialect.insert(s).values(id=session_id, created_at=now, **values)
                    conn.execute(upsert.on_conflict_do_update(index_elements=[s.c.id], set_=values))
                    base = {"state": data.decode()}
                    upsert = dialect.insert(b).values(session_id=session_id, **base)
                    conn.execute(
                        upsert.on_conflict_do_update(index_elements=[b.c.session_id], set_=base)
                    )
                    conn.execute(delete(p).where(p.c.session_id == session_id))
        except BaseException:
            self._marks.forget(session)
            raise
        self._marks.set(session, new_mark)
        session.revision = revision + 1

    def save_and_release(self, session: AgentSession) -> None:
        """``save(session)``, then ``release(session.lease)`` — in one transaction when the save
        is a patch: an ``Agent`` run's last save (its answer) also gives its lease back, so a
        run pays one commit less. The later ``release`` of that lease does nothing.

        Raises:
            As ``save``; the lease is given back only when the save was applied.
        """
        session = require_session(session, "SQLSessionStore")
        lease = session.lease
        if lease is None or lease.scope != self._scope:
            self.save(session)
            return
        mark = self._marks.get(session)
        if mark is None or not self._saved_patch(session, mark, release=True):
            self.save(session)
            self.release(lease)
        self._released.add(lease)

    def _saved_patch(self, session: AgentSession, mark: SaveMark, release: bool = False) -> bool:
        """The usual save, on the driver's cursor: a patch on top of what this session object
        saved last (``compactkit.sql._store_patch``), giving ``session.lease`` back with
        ``release``. ``False``: nothing was written; the full path decides what to do."""
        if mark.outgrown() or (session.fenced_by_revision and session.revision != mark.revision):
            return False
        change = save_patch(session, mark, mark.revision + 1)
        lease = session.lease
        if lease is not None and lease.scope != self._scope:
            lease = None  # another store's lease: saved as without one, as the full path does
        try:
            saved = self._raw_write(
                f"cannot save session {session.session_id!r}",
                self._patch_sql.save,
                session.session_id,
                lease,
                mark,
                change.data.decode(),
                release and lease is not None,
            )
        except BaseException:
            self._marks.forget(session)
            raise
        if saved:
            change.mark.proof = mark.proof
            self._marks.set(session, change.mark)
            session.revision = mark.revision + 1
        return saved

    def _unleased_revision(self, conn: Connection, session_id: str) -> int:
        """Lock the session row; its state revision, unless another run holds its lease."""
        s = self._t.sessions
        found = conn.execute(
            select(s.c.lease_holder, s.c.lease_since, s.c.lease_expires, s.c.state_revision)
            .where(s.c.id == session_id)
            .with_for_update()
        ).first()
        if found is None:
            return 0
        if found.lease_holder is not None and (found.lease_expires or 0) > seconds_now(conn):
            raise SessionBusyError(
                f"session {session_id!r} is running elsewhere: {found.lease_holder!r} has held "
                f"its lease since {_utc(found.lease_since):%Y-%m-%d %H:%M:%S} UTC; a save "
                "outside that run was refused (save from the run, or wait for it to end)",
                session_id=session_id,
                holder=found.lease_holder,
                since=_utc(found.lease_since),
            )
        return int(found.state_revision)

    def acquire(
        self,
        session_id: str,
        *,
        holder: str | None = None,
        timeout: float = 0.0,
        ttl: float = DEFAULT_TTL,
    ) -> SessionLease:
        """Take the lease of ``session_id`` for a run (see ``compactkit.sessions.lease``).

        Waits up to ``timeout`` seconds for a live holder; a holder that stopped saving for
        ``ttl`` seconds (dead, or stalled) is taken over, and its later writes are refused.

        Raises:
            SessionBusyError: another holder kept it for the whole ``timeout``.
            ConfigError: the id cannot be stored, or ``timeout``/``ttl`` is not positive.
        """
        validate_session_id(session_id)
        check_lease_times(timeout, ttl)
        holder = holder or default_holder()
        failure = f"cannot lease session {session_id!r}"
        # Not fsynced on an SQLite file: lost in a power failure, it was the lease of a run
        # that went down with the machine; the run's first save's fsync makes it durable.
        taken = self._raw_write.unsynced(failure, self._lease_sql.take, session_id, holder, ttl)
        if taken is not None:  # the usual case: one statement (compactkit.sql._store_patch)
            return taken
        # No row yet, or a live holder: the full path creates the row, or waits and reports.
        return acquire(self._engine, self._t, session_id, holder=holder, timeout=timeout, ttl=ttl)

    def release(self, lease: SessionLease) -> None:
        """Give ``lease`` back (nothing when it was taken over meanwhile, or a
        ``save_and_release`` gave it back)."""
        if self._released.take(lease):
            return
        failure = f"cannot release session {lease.session_id!r}"
        self._raw_write(failure, self._lease_sql.give_back, lease)

    def load(self, session_id: str) -> SessionState:
        """The saved state of ``session_id``.

        Raises:
            SessionNotFoundError: nothing is saved under ``session_id``.
            StorageError: the saved state cannot be read, is corrupt or from a newer compactkit.
            ConfigError: the id cannot be stored in SQL (empty, too long, holds NUL).
        """
        validate_session_id(session_id)
        b, p = self._t.session_bases, self._t.session_patches
        failure = f"cannot load session {session_id!r}"
        with read_transaction(self._engine, failure) as conn:  # one snapshot: base and journal
            data = conn.execute(select(b.c.state).where(b.c.session_id == session_id)).scalar()
            patches = (
                []
                if data is None
                else conn.execute(
                    select(p.c.patch).where(p.c.session_id == session_id).order_by(p.c.revision)
                )
                .scalars()
                .all()
            )
        if data is None:
            raise SessionNotFoundError(session_id)
        return read_journal(data, patches, source=f"the saved state of session {session_id!r}")

    def delete(self, session_id: str) -> bool:
        """Delete the saved state; ``False`` when there was none.

        A memory stored under the same id stays (use ``purge`` to delete everything).
        """
        validate_session_id(session_id)
        s = self._t.sessions
        failure = f"cannot delete session {session_id!r}"
        b, p = self._t.session_bases, self._t.session_patches
        with write_transaction(self._engine, failure) as conn:
            found = conn.execute(
                select(s.c.version).where(s.c.id == session_id).with_for_update()
            ).first()
            if (
                found is None
                or not conn.execute(delete(b).where(b.c.session_id == session_id)).rowcount
            ):
                return False
            conn.execute(delete(p).where(p.c.session_id == session_id))
            if found.version == 0:  # no memory was ever written here: the row is the store's
                c = self._t.compactions  # (at most failed-compaction records of an empty memory)
                conn.execute(delete(c).where(c.c.session_id == session_id))
                conn.execute(delete(s).where(s.c.id == session_id))
            else:
                conn.execute(update(s).where(s.c.id == session_id).values(state_base=0))
        return True

    def purge(self, session_id: str) -> bool:
        """Delete everything stored for ``session_id``: saved state, memory, archive and
        compaction records (retention, PII requests). ``False`` when there was nothing."""
        memory = SQLMemory(self._engine, session_id, table_prefix=self._t.prefix)
        return memory.purge()

    def list(self) -> builtins.list[str]:
        """The ids of the sessions with a saved state, sorted."""
        b = self._t.session_bases
        with read_transaction(self._engine, "cannot list sessions") as conn:
            ids = conn.execute(select(b.c.session_id)).scalars().all()
        return sorted(ids)
