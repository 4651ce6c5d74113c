"""The recall index of the SQL tables (schema version 2), kept apart from the tables it indexes.

One table, ``<prefix>recall``: one row per indexed item (``session_id``, ``seq``) holding its
words — the words ``compactkit.memory.recall.search_words`` finds, joined by spaces — as a
``tsvector`` with a GIN index on PostgreSQL, and as text on SQLite, where an FTS5 table
``<prefix>recall_fts`` (external content: it stores only the index, the words live in the
recall table) is kept in step by two triggers. Rows reference their item with ``ON DELETE
CASCADE``: whatever deletes items (``clear``, ``restore``, ``purge``, an undone compaction) drops
their index rows in the same transaction, with no code on those paths.

Rows are added lazily, by ``recall()`` (``compactkit.sql._recall``), for the items stored since
the last indexed seq: appends and compactions never pay for the index.
"""

from __future__ import annotations

from typing import Protocol

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    ForeignKeyConstraint,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import TSVECTOR


class _Prefixed(Protocol):  # compactkit.sql._schema.Tables (which imports this module)
    @property
    def prefix(self) -> str: ...
    @property
    def metadata(self) -> MetaData: ...


__all__ = ["create_recall_index", "recall_table"]

_ID = BigInteger().with_variant(Integer(), "sqlite")  # INTEGER PRIMARY KEY: the FTS5 rowid


def recall_table(metadata: MetaData, prefix: str, items: Table) -> Table:
    """The ``<prefix>recall`` table, on ``metadata`` (so ``drop_all`` drops it too)."""
    name = f"{prefix}recall"
    found = metadata.tables.get(name)
    if found is not None:
        return found
    return Table(
        name,
        metadata,
        Column("id", _ID, primary_key=True, autoincrement=True),
        Column("session_id", String(255), nullable=False),
        Column("seq", BigInteger, nullable=False),
        Column("words", TSVECTOR().with_variant(Text(), "sqlite"), nullable=False),
        UniqueConstraint("session_id", "seq", name=f"{prefix}recall_item"),
        ForeignKeyConstraint(
            ["session_id", "seq"],
            [items.c.session_id, items.c.seq],
            ondelete="CASCADE",
            name=f"{prefix}recall_of_item",
        ),
    )


def fts_name(prefix: str) -> str:
    """The SQLite FTS5 table of ``prefix``."""
    return f"{prefix}recall_fts"


def create_recall_index(conn: Connection, t: _Prefixed) -> None:
    """Migration to schema version 2: create the recall table and its full-text index."""
    table = t.metadata.tables[f"{t.prefix}recall"]
    table.create(conn)
    name = table.name
    if conn.dialect.name == "postgresql":
        # fastupdate off: with it on, a lazily indexed archive leaves up to 4 MB of entries in
        # the index's pending list, which every search scans linearly until a vacuum (measured
        # 2-3x slower searches right after indexing 30k items); the index pays at insert time.
        conn.execute(
            text(f"CREATE INDEX {name}_words ON {name} USING gin (words) WITH (fastupdate = off)")
        )
        return
    fts = fts_name(t.prefix)
    # unicode61 splits exactly where search_words does (runs of letters and digits) and folds
    # case and diacritics the same way on both sides, so it sees the words we stored.
    conn.execute(
        text(f"CREATE VIRTUAL TABLE {fts} USING fts5(words, content='{name}', content_rowid='id')")
    )
    conn.execute(
        text(
            f"CREATE TRIGGER {name}_added AFTER INSERT ON {name} BEGIN "
            f"INSERT INTO {fts}(rowid, words) VALUES (new.id, new.words); END"
        )
    )
    conn.execute(
        text(
            f"CREATE TRIGGER {name}_deleted AFTER DELETE ON {name} BEGIN "
            f"INSERT INTO {fts}({fts}, rowid, words) VALUES ('delete', old.id, old.words); END"
        )
    )
