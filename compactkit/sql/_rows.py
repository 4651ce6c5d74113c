"""Rows and the cached active window of a SQL session: encoding items, positions, timestamps."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cached_property
from typing import Any, NamedTuple

from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql, sqlite

from compactkit.items import Item
from compactkit.items.snapshot import CompactResult, MemorySnapshot
from compactkit.sql._schema import Tables

_ACTIVE, _ARCHIVED = "active", "archived"
_CRASH_AT = "COMPACTKIT_TEST_CRASH_AT"


class _Row(NamedTuple):
    version: int
    window_version: int
    next_seq: int
    summary: str
    created_at: datetime  # tells a purged-and-recreated session from the one cached


@dataclass(eq=False)
class _Window:
    """The cached active window of one version of the session (never changed once built:
    not a frozen dataclass only because building one of those took a tenth of an append).

    Windows that only appends separate share their lists: extending the longest of them
    appends in place (so an append costs O(1), not a copy of the window); extending an older
    one copies its part first. Extend only under the memory's lock.
    """

    row: _Row
    shared_items: list[Item]
    shared_positions: list[int]
    size: int  # this window's part of the shared lists
    replaced: frozenset[int]  # seqs whose active form is a replacement of the original

    @cached_property
    def snapshot(self) -> MemorySnapshot:
        items = tuple(self.shared_items[: self.size])
        # Items come validated from the database or from a validated result: no revalidation.
        return MemorySnapshot.model_construct(
            summary=self.row.summary, items=items, version=self.row.version
        )

    @property
    def positions(self) -> list[int]:
        return self.shared_positions[: self.size]

    def extended(
        self,
        row: _Row,
        items: Sequence[Item],
        positions: Sequence[int],
        replaced: frozenset[int] = frozenset(),
    ) -> _Window:
        """This window plus appended ``items``, as of ``row``."""
        if len(self.shared_items) == self.size:
            shared_items, shared_positions = self.shared_items, self.shared_positions
        else:
            shared_items = self.shared_items[: self.size]
            shared_positions = self.shared_positions[: self.size]
        shared_items.extend(items)
        shared_positions.extend(positions)
        return _Window(
            row,
            shared_items,
            shared_positions,
            len(shared_items),
            self.replaced | replaced if replaced else self.replaced,
        )


def _crash_point(name: str) -> None:
    """Test hook: exit at once, mid-transaction, when ``COMPACTKIT_TEST_CRASH_AT`` names
    this point (proves a killed process leaves the session as before or as after)."""
    if os.environ.get(_CRASH_AT) == name:
        os._exit(1)


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)


def _seq(item: Item) -> int:
    assert item.seq is not None, "stored items always have a seq"
    return item.seq


_NOT_IN_PAYLOAD: set[str] = {"seq", "pinned"}  # columns of their own


def _payloads(items: Sequence[Item]) -> list[str]:
    """The stored JSON of each item (``_payload``)."""
    return [_payload(item) for item in items]


def _payload(item: Item) -> str:
    """The stored JSON of ``item``: its ``dump_items`` form (``None`` fields omitted) without
    seq and pin (columns of their own), by pydantic's serializer in one call."""
    return item.model_dump_json(exclude_none=True, exclude=_NOT_IN_PAYLOAD)


def _positions(previous: Sequence[int | None], next_seq: int) -> list[int]:
    """Positions for a new active window: strictly increasing, all below ``next_seq`` (so
    appends, positioned at their seq, come after), keeping each item's previous position
    (``None`` for new items) where the order allows — most compactions then move no row."""
    positions: list[int] = []
    lowest = 1
    for k, old in enumerate(previous):
        highest = next_seq - (len(previous) - k)  # leave room for the items after this one
        position = old if old is not None and lowest <= old <= highest else lowest
        positions.append(position)
        lowest = position + 1
    return positions


def _content_differs(item: Item, other: Item) -> bool:
    return item.model_copy(update={"pinned": other.pinned, "seq": other.seq}) != other


def _window(
    row: _Row, items: list[Item], positions: list[int], replaced: frozenset[int]
) -> _Window:
    return _Window(row, items, positions, len(items), replaced)


def _empty() -> _Window:
    """The window of a session the database holds nothing for."""
    return _window(
        _Row(0, 0, 1, "", datetime.min.replace(tzinfo=timezone.utc)), [], [], frozenset()
    )


def _insert_session(conn: Connection, t: Tables, session_id: str) -> None:
    """Insert the session's row unless it exists (another writer may have just inserted it);
    the counters and the summary start at their column defaults."""
    now = _now()
    row = {"id": session_id, "created_at": now, "updated_at": now}
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    conn.execute(dialect.insert(t.sessions).values(row).on_conflict_do_nothing())


def _call_key(call_id: str) -> str:
    """The ``call_id`` column's form of a call id (PostgreSQL text cannot hold NUL)."""
    return call_id.replace("\x00", "\ufffd")


def _json(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


SUMMARY_AFTER_KEY = "compactkit.summary_after"
"""Where a compaction row keeps the summary it left (read back as ``summary_after``)."""


def _compaction_values(session_id: str, result: CompactResult, now: datetime) -> dict[str, Any]:
    stats = result.stats
    details = stats.details
    if result.outcome in ("compacted", "fallback"):  # the summary each compaction left, so a
        # timeline can show how the summary changed (docs/doctor.md)
        details = {**details, SUMMARY_AFTER_KEY: result.snapshot.summary}

    def text(key: str) -> str | None:
        value = details.get(key)
        return None if value is None else str(value)[:255]

    return {
        "session_id": session_id,
        "strategy": stats.compressor[:255],
        "model": text("model"),
        "prompt_version": text("prompt_version"),
        "tokens_before": stats.tokens_before,
        "tokens_after": stats.tokens_after,
        "outcome": result.outcome,
        "error": None if result.error is None else result.error.replace("\x00", "\ufffd"),
        "details": json.dumps(details, ensure_ascii=False, default=str) if details else None,
        "created_at": now,
    }
