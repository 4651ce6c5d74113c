"""The SQL schema of ``SQLMemory`` and ``SQLSessionStore``, and its forward migrations.

Six tables (and the recall index of ``compactkit.sql._recall_schema``), every name starting with the table prefix (``compactkit_`` by default)::

    <prefix>schema_version   one row per applied migration (version, applied_at)
    <prefix>sessions         one row per session: version counters, next seq, summary,
                             the revision of the store's saved state, the session lease
                             (holder, fencing token, expiry) and the compaction lease
                             (version 3), the id of the saved base state (version 4),
                             timestamps; its ``state`` column held the saved state up to
                             version 4 and is empty since
    <prefix>session_bases    SQLSessionStore's saved base states (JSON), one row per saved
                             session, written only when a whole state is saved (version 5)
    <prefix>session_patches  SQLSessionStore's journal: one row per incremental save, the
                             patch on top of the saved base state (version 4)
    <prefix>items            one row per stored item: (session_id, seq) primary key, kind,
                             call id, original payload (JSON), the replacement a compaction
                             put in its place, pin, status active/archived, order in the
                             active window, the compaction that archived or created it
    <prefix>compactions      one row per applied or failed compaction: strategy, model, prompt
                             version, archived seq range, tokens and items before/after,
                             outcome, error, what undo needs, timestamps

Migrations: ``MIGRATIONS[n - 1]`` brings a database from schema version ``n - 1`` to ``n``. They
run in order, each with its version row in the same transaction, under a lock (PostgreSQL: an
advisory lock; SQLite: ``BEGIN IMMEDIATE``), so workers starting together migrate once. A
database newer than this compactkit is refused rather than misread. The ``Table`` objects below
describe the newest version; when a migration changes a table, freeze the older definition inside
the migration that created it.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

try:
    import sqlalchemy  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "compactkit's SQL memory and store need SQLAlchemy: pip install 'compactkit[sql]' "
        "(or 'compactkit[postgres]' for PostgreSQL)"
    ) from exc

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    func,
    insert,
    inspect,
    select,
    update,
)

from compactkit.errors import ConfigError, StorageError
from compactkit.sql._recall_schema import create_recall_index, recall_table

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Tables",
    "migrate",
    "tables",
    "validate_prefix",
    "validate_session_id",
    "verify",
]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MAX_ID = 255  # session ids: String(255)
_MAX_PREFIX = 40  # PostgreSQL truncates identifiers at 63 bytes; leave room for index names

# SQLite makes only an INTEGER PRIMARY KEY an alias of the rowid (and so autoincrementing).
_ID = BigInteger().with_variant(Integer(), "sqlite")


def validate_prefix(prefix: str) -> str:
    """Return ``prefix`` if it is a safe SQL identifier prefix.

    Raises:
        ConfigError: it is not letters, digits and underscores starting with a letter or an
            underscore, or it is longer than 40 characters.
    """
    if not isinstance(prefix, str) or not _IDENTIFIER.match(prefix) or len(prefix) > _MAX_PREFIX:
        raise ConfigError(
            f"table_prefix {prefix!r} is not a valid SQL identifier prefix: use letters, digits "
            f"and underscores, starting with a letter or an underscore, at most {_MAX_PREFIX} "
            "characters (for example 'compactkit_')"
        )
    return prefix


def validate_session_id(session_id: str) -> str:
    """Return ``session_id`` if the tables can hold it.

    Raises:
        ConfigError: it is not a non-empty string of at most 255 characters without NUL
            (PostgreSQL text cannot hold NUL), or it is not valid Unicode (a lone surrogate,
            which no database driver can encode).
    """
    if (
        not isinstance(session_id, str)
        or not session_id
        or len(session_id) > _MAX_ID
        or "\x00" in session_id
    ):
        raise ConfigError(
            f"a session id for the SQL tables must be a non-empty string of at most {_MAX_ID} "
            f"characters without NUL, got {session_id!r:.80}"
        )
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            f"session id {session_id!r:.80} is not valid Unicode text (it holds a lone "
            "surrogate) and cannot be stored; use another id, e.g. "
            "session_id.encode('utf-8', 'replace').decode()"
        ) from None
    return session_id


@dataclass(frozen=True)
class Tables:
    """The tables of one prefix."""

    prefix: str
    metadata: MetaData
    schema_version: Table
    sessions: Table
    items: Table
    compactions: Table
    session_patches: Table
    session_bases: Table


_TABLES: dict[str, Tables] = {}


def tables(prefix: str) -> Tables:
    """The ``Table`` objects for ``prefix`` (validated, built once per prefix)."""
    found = _TABLES.get(prefix)
    if found is not None:
        return found
    validate_prefix(prefix)
    metadata = MetaData()
    when = DateTime(timezone=True)
    schema_version = Table(
        f"{prefix}schema_version",
        metadata,
        Column("version", Integer, primary_key=True, autoincrement=False),
        Column("applied_at", when, nullable=False),
    )
    sessions = Table(
        f"{prefix}sessions",
        metadata,
        Column("id", String(_MAX_ID), primary_key=True),
        # Bumped by every write; what apply() checks a compaction result against.
        Column("version", BigInteger, nullable=False, server_default="0"),
        # Bumped by every write that is not an append (compaction, undo, restore, clear, pin):
        # a reader whose cached window has the same window_version only fetches newer rows.
        Column("window_version", BigInteger, nullable=False, server_default="0"),
        Column("next_seq", BigInteger, nullable=False, server_default="1"),
        # A JSON string: text may hold NUL characters, which PostgreSQL's text type cannot.
        Column("summary", Text, nullable=False, server_default='""'),
        # SQLSessionStore's SessionState JSON up to version 4; version 5 moved it to
        # session_bases, out of the row every save and every append updates.
        Column("state", Text, nullable=True),
        Column("created_at", when, nullable=False),
        Column("updated_at", when, nullable=False),
        *_v3_lease_columns(),
        *_v4_base_columns(),
    )
    session_patches = _v4_patches_table(metadata, prefix)
    session_bases = _v5_bases_table(metadata, prefix)
    compactions = Table(
        f"{prefix}compactions",
        metadata,
        Column("id", _ID, primary_key=True, autoincrement=True),
        Column("session_id", String(255), ForeignKey(sessions.c.id), nullable=False),
        Column("strategy", String(255), nullable=False),
        Column("model", String(255), nullable=True),
        Column("prompt_version", String(255), nullable=True),
        Column("first_seq", BigInteger, nullable=True),
        Column("last_seq", BigInteger, nullable=True),
        Column("archived", Integer, nullable=False),
        Column("items_before", Integer, nullable=False),
        Column("items_after", Integer, nullable=False),
        Column("tokens_before", Integer, nullable=True),
        Column("tokens_after", Integer, nullable=True),
        Column("outcome", String(16), nullable=False),
        Column("error", Text, nullable=True),
        Column("details", Text, nullable=True),  # CompactStats.details as JSON
        Column("undo", Text, nullable=True),  # the summary and window before (JSON)
        Column("undone_at", when, nullable=True),
        Column("created_at", when, nullable=False),
        Index(f"{prefix}compactions_session", "session_id", "id"),
    )
    items = Table(
        f"{prefix}items",
        metadata,
        Column("session_id", String(255), ForeignKey(sessions.c.id), primary_key=True),
        Column("seq", BigInteger, primary_key=True, autoincrement=False),
        Column("kind", String(32), nullable=False),
        Column("call_id", Text, nullable=True),  # for lookups; NUL stored as U+FFFD
        Column("payload", Text, nullable=False),  # the item as first stored (no seq, no pin)
        Column("replacement", Text, nullable=True),  # its active form after a compaction
        Column("pinned", Boolean, nullable=False),
        Column("status", String(16), nullable=False),  # "active" | "archived"
        Column("position", BigInteger, nullable=True),  # order in the active window
        Column("archived_by", _ID, ForeignKey(compactions.c.id), nullable=True),
        Column("created_by", _ID, ForeignKey(compactions.c.id), nullable=True),
        Column("created_at", when, nullable=False),
        Index(f"{prefix}items_window", "session_id", "status", "position"),
        Index(f"{prefix}items_call", "session_id", "call_id"),
    )
    recall_table(metadata, prefix, items)  # schema version 2 (compactkit.sql._recall_schema)
    found = Tables(
        prefix,
        metadata,
        schema_version,
        sessions,
        items,
        compactions,
        session_patches,
        session_bases,
    )
    _TABLES[prefix] = found
    return found


def _v1_create_tables(conn: Connection, t: Tables) -> None:
    # The sessions table as version 1 made it (version 3 adds the lease columns).
    when = DateTime(timezone=True)
    v1_sessions = Table(
        t.sessions.name,
        MetaData(),
        Column("id", String(_MAX_ID), primary_key=True),
        Column("version", BigInteger, nullable=False, server_default="0"),
        Column("window_version", BigInteger, nullable=False, server_default="0"),
        Column("next_seq", BigInteger, nullable=False, server_default="1"),
        Column("summary", Text, nullable=False, server_default='""'),
        Column("state", Text, nullable=True),
        Column("created_at", when, nullable=False),
        Column("updated_at", when, nullable=False),
    )
    v1_sessions.create(conn)
    for table in (t.compactions, t.items):
        table.create(conn)


def _v3_lease_columns() -> list[Column[object]]:
    """The session lease (version 3): who runs the session, its fencing token, until when;
    the compaction lease; the store's revision of the saved state.

    Expiry times are seconds since the epoch by the database's clock on PostgreSQL (workers
    on several machines agree on it), by the process's clock on SQLite (one machine).
    """
    return [
        Column("lease_token", BigInteger, nullable=False, server_default="0"),
        Column("lease_holder", String(255), nullable=True),
        Column("lease_since", DateTime(timezone=True), nullable=True),
        Column("lease_expires", Float, nullable=True),
        Column("compaction_holder", String(255), nullable=True),
        Column("compaction_expires", Float, nullable=True),
        Column("state_revision", BigInteger, nullable=False, server_default="0"),
    ]


def _v3_add_leases(conn: Connection, t: Tables) -> None:
    preparer = conn.dialect.identifier_preparer
    table = preparer.quote(t.sessions.name)
    for column in _v3_lease_columns():
        kind = column.type.compile(dialect=conn.dialect)
        default = "" if column.server_default is None else f" DEFAULT {column.server_default.arg}"  # type: ignore[attr-defined]
        null = "" if column.nullable else " NOT NULL"
        conn.exec_driver_sql(
            f"ALTER TABLE {table} ADD COLUMN {preparer.quote(column.name)} {kind}{null}{default}"
        )


def _v4_base_columns() -> list[Column[object]]:
    """Incremental saving (version 4): which base state the saved state's journal extends (a
    random id per base written, so a session deleted and saved again never takes the old
    journal's patches)."""
    return [Column("state_base", BigInteger, nullable=False, server_default="0")]


def _v4_patches_table(metadata: MetaData, prefix: str) -> Table:
    """``SQLSessionStore``'s journal (version 4): one row per incremental save, the patch on
    top of the session's saved base state (``compactkit.sessions.journal``)."""
    return Table(
        f"{prefix}session_patches",
        metadata,
        Column("session_id", String(_MAX_ID), primary_key=True),
        Column("revision", BigInteger, primary_key=True, autoincrement=False),
        Column("patch", Text, nullable=False),
    )


def _v4_add_journal(conn: Connection, t: Tables) -> None:
    preparer = conn.dialect.identifier_preparer
    table = preparer.quote(t.sessions.name)
    for column in _v4_base_columns():
        kind = column.type.compile(dialect=conn.dialect)
        conn.exec_driver_sql(
            f"ALTER TABLE {table} ADD COLUMN {preparer.quote(column.name)} {kind} NOT NULL "
            "DEFAULT 0"
        )
    t.session_patches.create(conn)


def _v5_bases_table(metadata: MetaData, prefix: str) -> Table:
    """``SQLSessionStore``'s saved base states (version 5): one row per saved session.

    A row of its own, apart from the session's row: every save (and every ``SQLMemory``
    write) updates the session's row, and SQLite rewrites a whole row on any update — with the
    base inside it, every save would rewrite the whole session."""
    return Table(
        f"{prefix}session_bases",
        metadata,
        Column("session_id", String(_MAX_ID), primary_key=True),
        Column("state", Text, nullable=False),
    )


def _v5_move_bases(conn: Connection, t: Tables) -> None:
    t.session_bases.create(conn)
    s, b = t.sessions, t.session_bases
    conn.execute(
        insert(b).from_select(
            ["session_id", "state"], select(s.c.id, s.c.state).where(s.c.state.is_not(None))
        )
    )
    conn.execute(update(s).where(s.c.state.is_not(None)).values(state=None))


Migration = Callable[[Connection, Tables], None]

MIGRATIONS: list[Migration] = [
    _v1_create_tables,
    create_recall_index,
    _v3_add_leases,
    _v4_add_journal,
    _v5_move_bases,
]
"""The forward migrations, in order: entry ``n - 1`` brings version ``n - 1`` to ``n``."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this compactkit writes and the newest it reads."""


def migrate(conn: Connection, t: Tables) -> int:
    """Bring the schema of prefix ``t.prefix`` to the newest version inside ``conn``'s (write)
    transaction; returns the version found before.

    Raises:
        StorageError: the database holds a newer schema than this compactkit knows.
    """
    if conn.dialect.name == "postgresql":  # serialise concurrent first starts (DDL races)
        conn.execute(select(func.pg_advisory_xact_lock(zlib.crc32(t.prefix.encode()))))
    if not inspect(conn).has_table(t.schema_version.name):
        t.schema_version.create(conn)
    found = conn.execute(select(func.max(t.schema_version.c.version))).scalar() or 0
    if found > len(MIGRATIONS):
        raise StorageError(
            f"the tables with prefix {t.prefix!r} have schema version {found}, newer than this "
            f"compactkit knows ({len(MIGRATIONS)}); upgrade compactkit to use them"
        )
    for version in range(found + 1, len(MIGRATIONS) + 1):
        MIGRATIONS[version - 1](conn, t)
        conn.execute(
            insert(t.schema_version).values(version=version, applied_at=datetime.now(timezone.utc))
        )
    return int(found)


def verify(conn: Connection, t: Tables) -> None:
    """Check, without changing anything, that the tables of ``t.prefix`` are at the newest
    schema version.

    Raises:
        ConfigError: there are no compactkit tables with this prefix.
        StorageError: they are at another version (older: migrate them; newer: upgrade).
    """
    if not inspect(conn).has_table(t.schema_version.name):
        raise ConfigError(
            f"the database has no compactkit tables with prefix {t.prefix!r}; check the URL "
            "and table_prefix, or pass create_schema=True to create them"
        )
    found = conn.execute(select(func.max(t.schema_version.c.version))).scalar() or 0
    if found != len(MIGRATIONS):
        advice = (
            "upgrade compactkit to use them"
            if found > len(MIGRATIONS)
            else "open them once with create_schema=True to migrate them"
        )
        raise StorageError(
            f"the tables with prefix {t.prefix!r} have schema version {found}; this compactkit "
            f"uses version {len(MIGRATIONS)} — {advice}"
        )
