"""``SQLSessionStore``: saved sessions in SQLite or PostgreSQL, next to ``SQLMemory``.

A saved state (``SessionState`` JSON: runtime counters, metadata, the memory snapshot and its
history) lives in the ``state`` column of the session's row in ``<prefix>sessions`` — the same
row ``SQLMemory`` keeps its counters in, so one database and one prefix hold a session's memory
and its checkpoints. ``save`` is one atomic upsert (last writer wins; a reader never sees half
a state). A checkpoint is a copy taken at ``save``: resuming rolls the memory back to it, even
when the memory is an ``SQLMemory`` that kept being written since.
"""

from __future__ import annotations

import builtins
from datetime import datetime, timezone

from sqlalchemy import Engine, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL

from compactkit.errors import SessionNotFoundError
from compactkit.sessions._checks import require_session
from compactkit.sessions.session import AgentSession, SessionState
from compactkit.sql._engine import connect, read_transaction, write_transaction
from compactkit.sql._schema import tables, validate_session_id
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

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return f"SQLSessionStore({url!r}, table_prefix={self._t.prefix!r})"

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine."""
        return self._engine

    def save(self, session: AgentSession) -> None:
        """Save ``session.state()`` in one statement, replacing its earlier saved state.

        Raises:
            ConfigError: ``session`` is not an ``AgentSession`` (a memory or an id, say).
            StorageError: the database failed; the earlier state is unchanged.
        """
        session = require_session(session, "SQLSessionStore")
        validate_session_id(session.session_id)
        state = session.state().to_json().decode()
        now = datetime.now(timezone.utc)
        s = self._t.sessions
        row = {"id": session.session_id, "state": state, "created_at": now, "updated_at": now}
        failure = f"cannot save session {session.session_id!r}"
        with write_transaction(self._engine, failure) as conn:
            dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
            upsert = dialect.insert(s).values(row)
            conn.execute(
                upsert.on_conflict_do_update(
                    index_elements=[s.c.id], set_={"state": state, "updated_at": now}
                )
            )

    def load(self, session_id: str) -> SessionState:
        """The saved state of ``session_id``.

        Raises:
            SessionNotFoundError: nothing is saved under ``session_id``.
            StorageError: the saved state cannot be read, is corrupt or from a newer compactkit.
            ConfigError: the id cannot be stored in SQL (empty, too long, holds NUL).
        """
        validate_session_id(session_id)
        s = self._t.sessions
        failure = f"cannot load session {session_id!r}"
        with read_transaction(self._engine, failure) as conn:
            data = conn.execute(select(s.c.state).where(s.c.id == session_id)).scalar()
        if data is None:
            raise SessionNotFoundError(session_id)
        return SessionState.from_json(data, source=f"the saved state of session {session_id!r}")

    def delete(self, session_id: str) -> bool:
        """Delete the saved state; ``False`` when there was none.

        A memory stored under the same id stays (use ``purge`` to delete everything).
        """
        validate_session_id(session_id)
        s = self._t.sessions
        failure = f"cannot delete session {session_id!r}"
        with write_transaction(self._engine, failure) as conn:
            found = conn.execute(
                select(s.c.version, s.c.state).where(s.c.id == session_id).with_for_update()
            ).first()
            if found is None or found.state is None:
                return False
            if found.version == 0:  # no memory was ever written here: the row is the store's
                c = self._t.compactions  # (at most failed-compaction records of an empty memory)
                conn.execute(delete(c).where(c.c.session_id == session_id))
                conn.execute(delete(s).where(s.c.id == session_id))
            else:
                conn.execute(update(s).where(s.c.id == session_id).values(state=None))
        return True

    def purge(self, session_id: str) -> bool:
        """Delete everything stored for ``session_id``: saved state, memory, archive and
        compaction records (retention, PII requests). ``False`` when there was nothing."""
        memory = SQLMemory(self._engine, session_id, table_prefix=self._t.prefix)
        return memory.purge()

    def list(self) -> builtins.list[str]:
        """The ids of the sessions with a saved state, sorted."""
        s = self._t.sessions
        with read_transaction(self._engine, "cannot list sessions") as conn:
            ids = conn.execute(select(s.c.id).where(s.c.state.is_not(None))).scalars().all()
        return sorted(ids)
