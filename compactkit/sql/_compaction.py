"""Compactions of a SQL session: ``apply`` (with the rebase over appends) and undo."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from compactkit.items import Item
from compactkit.items.snapshot import CompactResult
from compactkit.memory.rules import plan_apply, rebase_point, require_result
from compactkit.sql._reads import SQLSession
from compactkit.sql._rows import (
    _ACTIVE,
    _ARCHIVED,
    _compaction_values,
    _content_differs,
    _crash_point,
    _json,
    _now,
    _payloads,
    _positions,
    _seq,
    _Window,
    _window,
)
from compactkit.sql.records import CompactionRecord, _record

__all__ = ["Compactions"]


class Compactions(SQLSession):
    """``apply`` and ``undo_last_compaction`` of ``SQLMemory``."""

    def apply(self, result: CompactResult) -> bool:
        """Swap in ``result`` in one transaction; ``False`` (and no change) when it changed
        nothing. A failed result is recorded in the compaction history.

        Items appended since the result's snapshot (by any worker) are kept after its items: a
        rebase over pure appends, decided under the session lock from ``window_version``.

        Raises:
            ConcurrencyError: the session was compacted, undone, restored, cleared or pinned
                after the result's snapshot was read (appends alone never refuse a result), or
                the snapshot was read through another ``SQLMemory`` object.
            ConfigError: the result has no version, or breaks the compressor contract.
            StorageError: the database failed; nothing was applied.
        """
        require_result(result)
        if not result.changed:
            if result.outcome == "failed":
                self._record_failure(result)
            return False
        i, s, c = self._t.items, self._t.sessions, self._t.compactions
        with self._write_transaction(
            f"cannot apply a compaction to session {self._session_id!r}"
        ) as conn:
            row = self._lock_row(conn)
            since = rebase_point(result, row.version, row.window_version, self._lineage)
            before = self._refresh(conn, row)
            plan = plan_apply(before.snapshot.items, result, row.next_seq, appended_from=since)
            now = _now()
            archived = [_seq(item) for item in plan.archived]
            undo = {
                "summary": row.summary,
                "window": [
                    [
                        _seq(item),
                        position,
                        item.pinned,
                        _payloads([item])[0] if item.seq in before.replaced else None,
                    ]
                    for item, position in zip(before.snapshot.items, before.positions, strict=True)
                ],
            }
            inserted = conn.execute(
                insert(c).values(
                    **_compaction_values(self._session_id, result, now),
                    first_seq=min(archived, default=None),
                    last_seq=max(archived, default=None),
                    archived=len(archived),
                    items_before=len(before.snapshot.items),
                    items_after=len(plan.items),
                    undo=json.dumps(undo),
                )
            )
            compaction_id = int(inserted.inserted_primary_key[0])  # type: ignore[index]
            if archived:
                conn.execute(
                    update(i)
                    .where(i.c.session_id == self._session_id, i.c.seq == bindparam("_seq"))
                    .values(status=_ARCHIVED, position=None, archived_by=compaction_id),
                    [{"_seq": seq} for seq in archived],
                )
            _crash_point("after_archive")
            positions, replaced = self._write_window(
                conn, before, plan.items, plan.next_seq, compaction_id, now
            )
            conn.execute(
                update(s)
                .where(s.c.id == self._session_id)
                .values(
                    summary=_json(result.snapshot.summary),
                    version=row.version + 1,
                    window_version=row.window_version + 1,
                    next_seq=plan.next_seq,
                    updated_at=now,
                )
            )
            _crash_point("before_commit")
        _crash_point("after_commit")
        after = row._replace(
            version=row.version + 1,
            window_version=row.window_version + 1,
            next_seq=plan.next_seq,
            summary=result.snapshot.summary,
        )
        self._store(_window(after, plan.items, positions, replaced))
        return True

    def undo_last_compaction(self) -> CompactionRecord | None:
        """Revert the newest compaction that still stands; ``None`` when there is none.

        The summary and the active window return to what they were before it (archived items
        become active again, replaced items get their earlier form back, items it created are
        deleted); everything written after it stays, after the restored window. Seqs are never
        reused. ``restore()`` and ``clear()`` forget the compactions before them.
        """
        i, s, c = self._t.items, self._t.sessions, self._t.compactions
        with self._write_transaction(
            f"cannot undo a compaction of session {self._session_id!r}"
        ) as conn:
            row = self._lock_existing(conn)
            if row is None:
                return None
            last = conn.execute(
                select(c.c.id, c.c.undo)
                .where(
                    c.c.session_id == self._session_id,
                    c.c.undone_at.is_(None),
                    c.c.outcome != "failed",
                )
                .order_by(c.c.id.desc())
                .limit(1)
            ).first()
            if last is None:
                return None
            undo = json.loads(last.undo)
            now = _now()
            restored = {entry[0]: entry[1:] for entry in undo["window"]}
            current = conn.execute(
                select(i.c.seq, i.c.status, i.c.pinned, i.c.created_by).where(
                    i.c.session_id == self._session_id,
                    (i.c.status == _ACTIVE) | (i.c.archived_by == last.id),
                )
            ).all()
            created = [r.seq for r in current if r.created_by == last.id]
            changes = [
                {
                    "_seq": r.seq,
                    "position": restored[r.seq][0],
                    # A pin set since stays; an archived item gets its pin back.
                    "pinned": r.pinned if r.status == _ACTIVE else restored[r.seq][1],
                    "replacement": restored[r.seq][2],
                }
                for r in current
                if r.seq in restored
            ]
            if created:
                conn.execute(
                    delete(i).where(i.c.session_id == self._session_id, i.c.seq.in_(created))
                )
            if changes:
                conn.execute(
                    update(i)
                    .where(i.c.session_id == self._session_id, i.c.seq == bindparam("_seq"))
                    .values(
                        status=_ACTIVE,
                        archived_by=None,
                        position=bindparam("position"),
                        pinned=bindparam("pinned"),
                        replacement=bindparam("replacement"),
                    ),
                    changes,
                )
            conn.execute(update(c).where(c.c.id == last.id).values(undone_at=now))
            conn.execute(
                update(s)
                .where(s.c.id == self._session_id)
                .values(
                    summary=_json(undo["summary"]),
                    version=row.version + 1,
                    window_version=row.window_version + 1,
                    updated_at=now,
                )
            )
            record = conn.execute(
                select(*[col for col in c.c if col.name != "undo"]).where(c.c.id == last.id)
            ).one()
        return _record(record._mapping)

    def _write_window(
        self,
        conn: Connection,
        before: _Window,
        items: list[Item],
        next_seq: int,
        compaction_id: int,
        now: datetime,
    ) -> tuple[list[int], frozenset[int]]:
        """Write the new active window ``items``: rows for new items, and new positions,
        replacements and pins where they changed. Returns the positions and replaced seqs."""
        i = self._t.items
        old = {
            _seq(item): (item, position)
            for item, position in zip(before.snapshot.items, before.positions, strict=True)
        }
        positions = _positions(
            [old[_seq(item)][1] if _seq(item) in old else None for item in items], next_seq
        )
        new = [item for item in items if _seq(item) not in old]
        payloads = dict(zip([_seq(item) for item in new], _payloads(new), strict=True))
        created: list[dict[str, Any]] = []
        changed: list[dict[str, Any]] = []
        replaced: set[int] = set()
        for item, position in zip(items, positions, strict=True):
            seq = _seq(item)
            if seq in payloads:
                values = self._item_row(item, payloads[seq], position=position, now=now)
                values["created_by"] = compaction_id
                created.append(values)
                continue
            previous, previous_position = old[seq]
            differs = _content_differs(item, previous)
            if differs or seq in before.replaced:
                replaced.add(seq)
            if differs or item.pinned != previous.pinned or position != previous_position:
                changed.append(
                    {
                        "_seq": seq,
                        "position": position,
                        "pinned": item.pinned,
                        "replacement": _payloads([item])[0] if seq in replaced else None,
                    }
                )
        if created:
            conn.execute(insert(i), created)
        if changed:
            conn.execute(
                update(i)
                .where(i.c.session_id == self._session_id, i.c.seq == bindparam("_seq"))
                .values(
                    position=bindparam("position"),
                    pinned=bindparam("pinned"),
                    replacement=bindparam("replacement"),
                ),
                changed,
            )
        return positions, frozenset(replaced)

    def _record_failure(self, result: CompactResult) -> None:
        c = self._t.compactions
        with self._write_transaction(
            f"cannot record a compaction of session {self._session_id!r}"
        ) as conn:
            if self._lock_existing(conn) is None:
                return
            items = len(result.snapshot.items)
            conn.execute(
                insert(c).values(
                    **_compaction_values(self._session_id, result, _now()),
                    archived=0,
                    items_before=result.stats.items_before or items,
                    items_after=result.stats.items_after or items,
                )
            )
