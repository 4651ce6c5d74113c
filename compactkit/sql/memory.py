"""``SQLMemory``: a memory in SQLite (embedded) or PostgreSQL (many workers, many machines).

Storage (schema in ``compactkit.sql._schema``): one row per session and one row per item. An
append inserts the new item rows and bumps the session row's version — never a rewrite of the
session, so its cost does not grow with the history. A compaction is one transaction: the folded
items are marked archived (kept for ``history()``, audit and ``undo_last_compaction()``), replaced
items get their new form next to the original, the summary is stored and a compaction row records
what happened. ``clear()`` and ``purge()`` are the only deletes.

Concurrency: every write first locks the session (``SELECT ... FOR UPDATE`` on PostgreSQL,
``BEGIN IMMEDIATE`` on SQLite), so writers from any number of threads, processes and machines
queue and every append lands, in one order. ``apply`` checks the version under that lock and
raises ``ConcurrencyError``, writing nothing, when anything was written since the result's
snapshot. A process dying mid-compaction leaves the transaction uncommitted: the session is
exactly as before or exactly as after.

Reads: the active window is cached in the process (``compactkit.sql._reads``); a read fetches
only what is new. The class is assembled by concern: reads and the window cache
(``_reads.SQLSession``), appends, restore, clear and pins (``_writes.Writes``), compactions and
undo (``_compaction.Compactions``).
"""

from __future__ import annotations

from sqlalchemy import Engine, select
from sqlalchemy.engine import URL

from compactkit.compressors.base import CompressorLike
from compactkit.items import Item
from compactkit.items.snapshot import DEFAULT_SUMMARY_ROLE, MemorySnapshot, SummaryRole
from compactkit.memory.base import BaseMemory, CompactCallback, SnapshotTrigger
from compactkit.memory.lease import DEFAULT_COMPACTION_TTL, check_compaction_options
from compactkit.sql._compaction import Compactions
from compactkit.sql._engine import connect, read_transaction
from compactkit.sql._lease import release_compaction, take_compaction
from compactkit.sql._recall import Recall
from compactkit.sql._rows import _ARCHIVED
from compactkit.sql._schema import tables, validate_session_id
from compactkit.sql._writes import Writes
from compactkit.sql.records import (
    CompactionRecord,
    SQLSessionInfo,
    _record,
    _session_infos,
    list_sql_sessions,
)

__all__ = ["CompactionRecord", "SQLMemory", "SQLSessionInfo", "list_sql_sessions"]


class SQLMemory(Recall, Compactions, Writes, BaseMemory):
    """A memory stored in SQLite or PostgreSQL through SQLAlchemy Core (see the module docs).

    Safe to share between threads; any number of ``SQLMemory`` objects in any number of
    processes may serve one session at the same time. Offers recall
    (``compactkit.memory.Recallable``: SQLite FTS5, PostgreSQL full-text search).
    """

    def __init__(
        self,
        url_or_engine: str | URL | Engine,
        session_id: str,
        *,
        table_prefix: str = "compactkit_",
        create_schema: bool = True,
        policy: SnapshotTrigger | None = None,
        compressor: CompressorLike | None = None,
        on_compact: CompactCallback | None = None,
        accept_unknown_call_ids: bool = False,
        summary_role: SummaryRole = DEFAULT_SUMMARY_ROLE,
        compaction_ttl: float = DEFAULT_COMPACTION_TTL,
        compaction_wait: float = 0.0,
    ) -> None:
        """Open the memory of ``session_id``.

        Args:
            url_or_engine: A database URL (``sqlite:///agent.db``,
                ``postgresql+psycopg://user:pass@host/db``) or an SQLAlchemy ``Engine``.
                Engines made from URLs are shared per URL within the process.
            session_id: The session (at most 255 characters, no NUL). Nothing is stored
                until the first write.
            table_prefix: Prefix of the table names (an SQL identifier).
            create_schema: Create or migrate the tables when needed; with ``False`` the
                tables must exist at the current schema version.
            policy: See ``BaseMemory``.
            compressor: See ``BaseMemory``.
            on_compact: See ``BaseMemory``.
            accept_unknown_call_ids: See ``BaseMemory``.
            summary_role: See ``BaseMemory``.
            compaction_ttl: Seconds the compaction lease lives (``compactkit.memory.lease``):
                a compactor that died holding it is replaced after that long.
            compaction_wait: Seconds a compactor waits for the compaction lease another
                holds before it skips (0: skip at once, without calling the compressor).

        Raises:
            ConfigError: a bad session id, prefix or URL, a missing driver, or (with
                ``create_schema=False``) no compactkit tables with this prefix.
            StorageError: the database cannot be reached or migrated.
        """
        super().__init__(
            policy=policy,
            compressor=compressor,
            on_compact=on_compact,
            accept_unknown_call_ids=accept_unknown_call_ids,
            summary_role=summary_role,
        )
        validate_session_id(session_id)
        self.compaction_ttl, self.compaction_wait = check_compaction_options(
            compaction_ttl, compaction_wait
        )
        t = tables(table_prefix)
        self._open(t, connect(url_or_engine, t, create_schema=create_schema), session_id)

    def __repr__(self) -> str:
        url = self._engine.url.render_as_string(hide_password=True)
        return f"SQLMemory({url!r}, session_id={self._session_id!r})"

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine."""
        return self._engine

    @property
    def session_id(self) -> str:
        """The session this memory serves."""
        return self._session_id

    @property
    def table_prefix(self) -> str:
        """The prefix of the table names."""
        return self._t.prefix

    # -- the compaction lease (compactkit.memory.lease) ----------------------------------------

    def take_compaction(self, holder: str) -> str:
        """Take the session's compaction lease for ``holder`` unless another holds a live one
        (waiting up to ``compaction_wait``); who holds it afterwards."""
        return take_compaction(
            self._engine,
            self._t,
            self._session_id,
            holder=holder,
            ttl=self.compaction_ttl,
            wait=self.compaction_wait,
        )

    def release_compaction(self, holder: str) -> None:
        """Give the compaction lease back, if ``holder`` still holds it."""
        release_compaction(self._engine, self._t, self._session_id, holder=holder)

    # -- reads --------------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Increases with every write; 0 for a session never written."""
        return self._read().row.version

    def snapshot(self) -> MemorySnapshot:
        """The summary and active items, with ``version`` (fetches only what is new)."""
        window = self._read()
        row = window.row
        self._lineage.note(row.version, row.window_version, row.next_seq)
        return window.snapshot

    def history(self) -> list[Item]:
        """Every item stored since the last ``clear()``, archived ones included, by seq."""
        i = self._t.items
        query = (
            select(i.c.seq, i.c.payload, i.c.pinned)
            .where(i.c.session_id == self._session_id)
            .order_by(i.c.seq)
        )
        with read_transaction(self._engine, f"cannot read session {self._session_id!r}") as conn:
            rows = conn.execute(query).all()
        return self._items([(r.payload, r.seq, r.pinned) for r in rows])

    def archived(self) -> list[Item]:
        """The items compactions archived (as first stored), by seq."""
        i = self._t.items
        query = (
            select(i.c.seq, i.c.payload, i.c.pinned)
            .where(i.c.session_id == self._session_id, i.c.status == _ARCHIVED)
            .order_by(i.c.seq)
        )
        with read_transaction(self._engine, f"cannot read session {self._session_id!r}") as conn:
            rows = conn.execute(query).all()
        return self._items([(r.payload, r.seq, r.pinned) for r in rows])

    def compactions(self) -> list[CompactionRecord]:
        """The session's compaction records, newest first (undone and failed ones included)."""
        c = self._t.compactions
        columns = [col for col in c.c if col.name != "undo"]
        query = select(*columns).where(c.c.session_id == self._session_id).order_by(c.c.id.desc())
        with read_transaction(self._engine, f"cannot read session {self._session_id!r}") as conn:
            rows = conn.execute(query).all()
        return [_record(row._mapping) for row in rows]

    def info(self) -> SQLSessionInfo | None:
        """What the database holds for this session; ``None`` when it holds nothing."""
        found = _session_infos(self._engine, self._t, self._session_id)
        return found[0] if found else None
