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

Reads: the active window is cached in the process. Each read fetches the session row; when its
version is the cached one nothing else is read; when only appends happened since (its
``window_version`` is unchanged), only rows with newer seqs are fetched; otherwise — another
worker compacted, restored, cleared or pinned — the active window is read again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Connection, Engine, bindparam, delete, insert, select, update
from sqlalchemy.engine import URL

from compactkit.compressors.base import MemoryCompressor
from compactkit.errors import StorageError
from compactkit.items import ITEMS_ADAPTER, FunctionCall, FunctionCallOutput, Item
from compactkit.items.snapshot import (
    DEFAULT_SUMMARY_ROLE,
    CompactResult,
    MemorySnapshot,
    SummaryRole,
)
from compactkit.memory._rules import (
    CallIndex,
    Lineage,
    assign_seqs,
    not_active_error,
    plan_apply,
    plan_restore,
    rebase_point,
    require_result,
    require_seq,
)
from compactkit.memory.base import BaseMemory, CompactCallback, SnapshotTrigger
from compactkit.sql._engine import (
    connect,
    read_transaction,
    single_statement,
    write_transaction,
)
from compactkit.sql._rows import (
    _ACTIVE,
    _ARCHIVED,
    _call_key,
    _compaction_values,
    _content_differs,
    _crash_point,
    _empty,
    _insert_session,
    _json,
    _now,
    _payloads,
    _positions,
    _Row,
    _seq,
    _Window,
    _window,
)
from compactkit.sql._schema import Tables, tables, validate_session_id
from compactkit.sql.records import (
    CompactionRecord,
    SQLSessionInfo,
    _record,
    _session_infos,
    list_sql_sessions,
)

__all__ = ["CompactionRecord", "SQLMemory", "SQLSessionInfo", "list_sql_sessions"]


class SQLMemory(BaseMemory):
    """A memory stored in SQLite or PostgreSQL through SQLAlchemy Core (see the module docs).

    Safe to share between threads; any number of ``SQLMemory`` objects in any number of
    processes may serve one session at the same time.
    """

    def __init__(
        self,
        url_or_engine: str | URL | Engine,
        session_id: str,
        *,
        table_prefix: str = "compactkit_",
        create_schema: bool = True,
        policy: SnapshotTrigger | None = None,
        compressor: MemoryCompressor | None = None,
        on_compact: CompactCallback | None = None,
        accept_unknown_call_ids: bool = False,
        summary_role: SummaryRole = DEFAULT_SUMMARY_ROLE,
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
        self._t: Tables = tables(table_prefix)
        self._engine = connect(url_or_engine, self._t, create_schema=create_schema)
        self._session_id = session_id
        self._lock = threading.Lock()
        self._window: _Window | None = None
        self._lineage = Lineage()

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

    # -- writes -------------------------------------------------------------------------------

    def _append(self, items: Sequence[Item]) -> None:
        i, s = self._t.items, self._t.sessions
        with write_transaction(self._engine, f"cannot write session {self._session_id!r}") as conn:
            row = self._lock_row(conn)
            self._call_index(conn, items).check(items, accept_unknown=self.accept_unknown_call_ids)
            stored, next_seq = assign_seqs(items, row.next_seq)
            now = _now()
            conn.execute(
                insert(i),
                [
                    self._item_row(item, payload, position=_seq(item), now=now)
                    for item, payload in zip(stored, _payloads(stored), strict=True)
                ],
            )
            conn.execute(
                update(s)
                .where(s.c.id == self._session_id)
                .values(version=row.version + 1, next_seq=next_seq, updated_at=now)
            )
        after = row._replace(version=row.version + 1, next_seq=next_seq)
        with self._lock:  # extend the cache only if it held exactly the version we appended to
            window = self._window
            if window is not None and window.row == row:
                self._window = window.extended(after, stored, [_seq(item) for item in stored])

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
        with write_transaction(
            self._engine, f"cannot apply a compaction to session {self._session_id!r}"
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
        with write_transaction(
            self._engine, f"cannot undo a compaction of session {self._session_id!r}"
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

    def restore(self, snapshot: MemorySnapshot, *, history: Sequence[Item] = ()) -> None:
        """Replace the whole state with ``snapshot`` (and ``history``) in one transaction.

        The version becomes one more than both the current and the snapshot's version. The
        session's compaction records are deleted (they described the state replaced).
        Never compacts.
        """
        i, s = self._t.items, self._t.sessions
        with write_transaction(
            self._engine, f"cannot restore session {self._session_id!r}"
        ) as conn:
            row = self._lock_row(conn)
            plan = plan_restore(snapshot, history, row.next_seq)
            self._delete_contents(conn)
            base = plan.next_seq - len(plan.items)
            active = {_seq(item): (k, item) for k, item in enumerate(plan.items)}
            originals = list(plan.history.values())
            now = _now()
            rows = []
            for original, payload in zip(originals, _payloads(originals), strict=True):
                seq = _seq(original)
                position, current = active.get(seq, (None, None))
                values = self._item_row(
                    original,
                    payload,
                    position=None if position is None else base + position,
                    now=now,
                )
                if current is not None and _content_differs(current, original):
                    values["replacement"] = _payloads([current])[0]
                rows.append(values)
            if rows:
                conn.execute(insert(i), rows)
            conn.execute(
                update(s)
                .where(s.c.id == self._session_id)
                .values(
                    summary=_json(snapshot.summary),
                    version=max(row.version, snapshot.version or 0) + 1,
                    window_version=row.window_version + 1,
                    next_seq=plan.next_seq,
                    updated_at=now,
                )
            )

    def clear(self) -> None:
        """Forget the summary, items, pins, history and compaction records; seqs are still
        never reused (the session row keeps its counter)."""
        s = self._t.sessions
        with write_transaction(self._engine, f"cannot clear session {self._session_id!r}") as conn:
            row = self._lock_row(conn)
            self._delete_contents(conn)
            conn.execute(
                update(s)
                .where(s.c.id == self._session_id)
                .values(
                    summary=_json(""),
                    version=row.version + 1,
                    window_version=row.window_version + 1,
                    updated_at=_now(),
                )
            )

    def purge(self) -> bool:
        """Delete everything stored for this session — items, archive, compaction records,
        the store's saved state and the session row — for retention and PII requests.

        Unlike ``clear()`` nothing is kept, not even the seq counter: do not keep using a
        purged session. Returns ``False`` when there was nothing to delete.
        """
        s = self._t.sessions
        with write_transaction(self._engine, f"cannot purge session {self._session_id!r}") as conn:
            if self._lock_existing(conn) is None:
                return False
            self._delete_contents(conn)
            conn.execute(delete(s).where(s.c.id == self._session_id))
        with self._lock:
            self._window = None
        return True

    def pin(self, seq: int) -> None:
        """Pin the active item ``seq`` (no-op when already pinned).

        Raises:
            ConfigError: no active item has this seq.
        """
        self._set_pinned(seq, True)

    def unpin(self, seq: int) -> None:
        """Unpin the active item ``seq`` (no-op when not pinned).

        Raises:
            ConfigError: no active item has this seq.
        """
        self._set_pinned(seq, False)

    # -- internals ----------------------------------------------------------------------------

    def _set_pinned(self, seq: int, pinned: bool) -> None:
        require_seq(seq)
        i, s = self._t.items, self._t.sessions
        with write_transaction(self._engine, f"cannot write session {self._session_id!r}") as conn:
            row = self._lock_existing(conn)
            found = None
            if row is not None:
                found = conn.execute(
                    select(i.c.status, i.c.pinned).where(
                        i.c.session_id == self._session_id, i.c.seq == seq
                    )
                ).first()
            if found is None or found.status != _ACTIVE:
                raise not_active_error(seq, archived=found is not None)
            if found.pinned == pinned or row is None:
                return
            now = _now()
            conn.execute(
                update(i)
                .where(i.c.session_id == self._session_id, i.c.seq == seq)
                .values(pinned=pinned)
            )
            conn.execute(
                update(s)
                .where(s.c.id == self._session_id)
                .values(
                    version=row.version + 1,
                    window_version=row.window_version + 1,
                    updated_at=now,
                )
            )
        after = row._replace(version=row.version + 1, window_version=row.window_version + 1)
        with self._lock:
            window = self._window
            if window is not None and window.row == row:
                items = [
                    item.model_copy(update={"pinned": pinned}) if item.seq == seq else item
                    for item in window.snapshot.items
                ]
                self._window = _window(after, items, window.positions, window.replaced)

    def _lock_row(self, conn: Connection) -> _Row:
        """Lock the session's row for this transaction, creating it if missing, and read it."""
        found = self._lock_existing(conn)
        if found is None:
            _insert_session(conn, self._t, self._session_id)
            found = self._lock_existing(conn)
            assert found is not None
        return found

    def _lock_existing(self, conn: Connection) -> _Row | None:
        """Lock and read the session's row; ``None`` when there is none."""
        return self._session_row(conn, lock=True)

    def _read(self) -> _Window:
        """The current window: one statement when the cache is current, else a consistent
        read of the session row and the rows the cache lacks."""
        failure = f"cannot read session {self._session_id!r}"
        with single_statement(self._engine, failure) as conn:
            probe = self._session_row(conn)
        cached = self._window
        if probe is None:
            return _empty()
        if cached is not None and cached.row == probe:
            return cached
        with read_transaction(self._engine, failure) as conn:
            row = self._session_row(conn)
            return _empty() if row is None else self._refresh(conn, row)

    def _session_row(self, conn: Connection, *, lock: bool = False) -> _Row | None:
        s = self._t.sessions
        query = select(
            s.c.version, s.c.window_version, s.c.next_seq, s.c.summary, s.c.created_at
        ).where(s.c.id == self._session_id)
        found = conn.execute(query.with_for_update() if lock else query).first()
        if found is None:
            return None
        version, window_version, next_seq, summary, created_at = found
        try:
            summary = json.loads(summary)
        except ValueError as exc:
            raise StorageError(
                f"session {self._session_id!r} has a corrupt summary (not a JSON string)"
            ) from exc
        return _Row(version, window_version, next_seq, summary, created_at)

    def _refresh(self, conn: Connection, row: _Row) -> _Window:
        """The window at ``row``, read in ``conn``'s snapshot, from the cache where it can."""
        cached = self._window
        if cached is not None and cached.row.created_at == row.created_at:
            if cached.row == row:
                return cached
            if (
                cached.row.window_version == row.window_version and cached.row.version < row.version
            ):  # only appends since: fetch the newer rows
                items, positions, replaced = self._fetch(conn, since=cached.row.next_seq)
                with self._lock:
                    window = cached.extended(row, items, positions, replaced)
                self._store(window)
                return window
        window = _window(row, *self._fetch(conn))
        self._store(window)
        return window

    def _fetch(
        self, conn: Connection, *, since: int = 0
    ) -> tuple[list[Item], list[int], frozenset[int]]:
        i = self._t.items
        query = select(i.c.seq, i.c.payload, i.c.replacement, i.c.pinned, i.c.position).where(
            i.c.session_id == self._session_id, i.c.status == _ACTIVE
        )
        if since:
            query = query.where(i.c.seq >= since)
        rows = conn.execute(query.order_by(i.c.position)).all()
        items = self._items([(r.replacement or r.payload, r.seq, r.pinned) for r in rows])
        replaced = frozenset(r.seq for r in rows if r.replacement is not None)
        return items, [r.position for r in rows], replaced

    def _store(self, window: _Window) -> None:
        with self._lock:
            cached = self._window
            if (
                cached is None
                or cached.row.created_at != window.row.created_at
                or cached.row.version <= window.row.version
            ):
                self._window = window

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

    def _call_index(self, conn: Connection, items: Iterable[Item]) -> CallIndex:
        """The stored calls and outputs sharing a call id with ``items`` (index lookups)."""
        keys = {
            _call_key(item.call_id): item.call_id
            for item in items
            if isinstance(item, (FunctionCall, FunctionCallOutput))
        }
        index = CallIndex()
        if not keys:
            return index
        i = self._t.items
        rows = conn.execute(
            select(i.c.kind, i.c.call_id).where(
                i.c.session_id == self._session_id, i.c.call_id.in_(keys)
            )
        ).all()
        for kind, key in rows:
            call_id = keys[key]
            (index.calls if kind == "function_call" else index.answered).add(call_id)
        return index

    def _record_failure(self, result: CompactResult) -> None:
        c = self._t.compactions
        with write_transaction(
            self._engine, f"cannot record a compaction of session {self._session_id!r}"
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

    def _delete_contents(self, conn: Connection) -> None:
        i, c = self._t.items, self._t.compactions
        conn.execute(delete(i).where(i.c.session_id == self._session_id))
        conn.execute(delete(c).where(c.c.session_id == self._session_id))

    def _item_row(
        self, item: Item, payload: str, *, position: int | None, now: datetime
    ) -> dict[str, Any]:
        call_id = (
            _call_key(item.call_id)
            if isinstance(item, (FunctionCall, FunctionCallOutput))
            else None
        )
        return {
            "session_id": self._session_id,
            "seq": _seq(item),
            "kind": item.type,
            "call_id": call_id,
            "payload": payload,
            "replacement": None,
            "pinned": item.pinned,
            "status": _ARCHIVED if position is None else _ACTIVE,
            "position": position,
            "archived_by": None,
            "created_by": None,
            "created_at": now,
        }

    def _items(self, rows: Sequence[tuple[str, int, bool]]) -> list[Item]:
        """Items from ``(payload, seq, pinned)`` rows, validated in one pass."""
        if not rows:
            return []
        try:
            items = ITEMS_ADAPTER.validate_json("[" + ",".join(r[0] for r in rows) + "]")
        except (ValidationError, ValueError) as exc:
            raise StorageError(
                f"session {self._session_id!r} holds items this compactkit cannot read: {exc}"
            ) from exc
        return [
            item.model_copy(update={"seq": seq, "pinned": pinned})
            for item, (_, seq, pinned) in zip(items, rows, strict=True)
        ]
