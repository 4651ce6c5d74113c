"""What a SQL database records about sessions: their compactions and a summary of each session."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Engine, func, select
from sqlalchemy.engine import URL

from compactkit.items.snapshot import Outcome
from compactkit.sql._engine import (
    connect,
    read_transaction,
)
from compactkit.sql._rows import _ACTIVE, _ARCHIVED, SUMMARY_AFTER_KEY, _utc
from compactkit.sql._schema import Tables, tables

__all__ = ["CompactionRecord", "SQLSessionInfo", "list_sql_sessions"]


class CompactionRecord(BaseModel):
    """One compaction of a session, as recorded in the database."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: int
    """The compaction's id (increasing; newer compactions have larger ids)."""
    session_id: str
    """The session it compacted."""
    created_at: datetime
    """When it was applied (UTC)."""
    strategy: str
    """The compressor (``CompactStats.compressor``)."""
    model: str | None
    """The summarizer model, when the compressor reported one (``details["model"]``)."""
    prompt_version: str | None
    """The summary prompt's version, when reported (``details["prompt_version"]``)."""
    outcome: Outcome
    """``compacted``, ``fallback`` or ``failed`` (failed ones changed nothing)."""
    error: str | None
    """Why it failed or fell back."""
    first_seq: int | None
    """The smallest seq it archived (``None`` when it archived nothing)."""
    last_seq: int | None
    """The largest seq it archived."""
    archived: int
    """How many items it archived."""
    items_before: int
    """Active items before."""
    items_after: int
    """Active items after."""
    tokens_before: int | None
    """Tokens before, when the compressor counted them."""
    tokens_after: int | None
    """Tokens after, when counted."""
    details: dict[str, Any]
    """The compressor's ``CompactStats.details``."""
    undone_at: datetime | None
    """When ``undo_last_compaction`` reverted it; ``None`` while it stands."""
    summary_after: str | None = None
    """The summary this compaction left (``None`` for failed ones and for records written
    before compactkit kept it)."""


class SQLSessionInfo(BaseModel):
    """What the database holds for one session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    """The session's id."""
    version: int
    """The memory's version."""
    active_items: int
    """Items in the active window."""
    archived_items: int
    """Items archived by compactions."""
    compactions: int
    """Compaction records (undone and failed ones included)."""
    saved_state: bool
    """Whether ``SQLSessionStore`` holds a saved state for it."""
    created_at: datetime
    """When the session's row was created (UTC)."""
    updated_at: datetime
    """When it was last written (UTC)."""


def list_sql_sessions(
    url_or_engine: str | URL | Engine, *, table_prefix: str = "compactkit_"
) -> list[SQLSessionInfo]:
    """Every session the database holds under ``table_prefix``, by id (never creates tables).

    Raises:
        ConfigError: a bad URL or prefix, or no compactkit tables with this prefix.
        StorageError: the database cannot be read.
    """
    t = tables(table_prefix)
    engine = connect(url_or_engine, t, create_schema=False)
    return _session_infos(engine, t, None)


def _record(row: Any) -> CompactionRecord:
    details = json.loads(row["details"]) if row["details"] else {}
    summary_after = details.pop(SUMMARY_AFTER_KEY, None)
    return CompactionRecord(
        id=row["id"],
        session_id=row["session_id"],
        created_at=_utc(row["created_at"]),
        strategy=row["strategy"],
        model=row["model"],
        prompt_version=row["prompt_version"],
        outcome=row["outcome"],
        error=row["error"],
        first_seq=row["first_seq"],
        last_seq=row["last_seq"],
        archived=row["archived"],
        items_before=row["items_before"],
        items_after=row["items_after"],
        tokens_before=row["tokens_before"],
        tokens_after=row["tokens_after"],
        details=details,
        undone_at=None if row["undone_at"] is None else _utc(row["undone_at"]),
        summary_after=summary_after if isinstance(summary_after, str) else None,
    )


def _session_infos(engine: Engine, t: Tables, session_id: str | None) -> list[SQLSessionInfo]:
    s, i, c = t.sessions, t.items, t.compactions

    def count(table: Any, *where: Any) -> Any:
        return (
            select(func.count())
            .select_from(table)
            .where(table.c.session_id == s.c.id, *where)
            .scalar_subquery()
        )

    query = select(
        s.c.id,
        s.c.version,
        count(i, i.c.status == _ACTIVE),
        count(i, i.c.status == _ARCHIVED),
        count(c),
        select(t.session_bases.c.session_id).where(t.session_bases.c.session_id == s.c.id).exists(),
        s.c.created_at,
        s.c.updated_at,
    )
    if session_id is not None:
        query = query.where(s.c.id == session_id)
    with read_transaction(engine, "cannot list sessions") as conn:
        rows = conn.execute(query).all()
    infos = [
        SQLSessionInfo(
            session_id=r[0],
            version=r[1],
            active_items=r[2],
            archived_items=r[3],
            compactions=r[4],
            saved_state=bool(r[5]),
            created_at=_utc(r[6]),
            updated_at=_utc(r[7]),
        )
        for r in rows
    ]
    return sorted(infos, key=lambda info: info.session_id)
