"""The reads of a SQL session and its cached active window (the part of ``SQLMemory`` every
write builds on).

Each read fetches the session row; when its version is the cached one nothing else is read; when
only appends happened since (its ``window_version`` is unchanged), only rows with newer seqs are
fetched; otherwise — another worker compacted, restored, cleared or pinned — the active window is
read again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Connection, Engine, delete, select

from compactkit.errors import ConfigError, StorageError
from compactkit.items import ITEMS_ADAPTER, FunctionCall, FunctionCallOutput, Item
from compactkit.memory.rules import CallIndex, Lineage
from compactkit.sessions.lease import SessionLease
from compactkit.sql._append import AppendSQL
from compactkit.sql._engine import (
    RawWriter,
    read_transaction,
    single_statement,
    write_transaction,
)
from compactkit.sql._held import raw_writer
from compactkit.sql._lease import WriteLease, acquire, lease_scope, lost
from compactkit.sql._rows import (
    _ACTIVE,
    _ARCHIVED,
    _call_key,
    _empty,
    _insert_session,
    _Row,
    _seq,
    _Window,
    _window,
)
from compactkit.sql._schema import Tables

__all__ = ["SQLSession"]


class SQLSession:
    """The state one ``SQLMemory`` object keeps, and the reads its writes share."""

    _t: Tables
    _engine: Engine
    _session_id: str
    _lock: threading.Lock
    _window: _Window | None
    _lineage: Lineage
    _appends: AppendSQL
    _raw_write: RawWriter
    _write_failure: str
    _fence: SessionLease | None
    _held: WriteLease | None
    accept_unknown_call_ids: bool

    def _open(self, t: Tables, engine: Engine, session_id: str) -> None:
        self._t = t
        self._engine = engine
        self._session_id = session_id
        self._lock = threading.Lock()
        self._window = None
        self._lineage = Lineage()
        self._appends = AppendSQL(t, engine)
        self._raw_write = raw_writer(engine)
        self._write_failure = f"cannot write session {session_id!r}"
        self._fence = None
        self._held = None  # a lease_writes block's lease (compactkit.sql._writes)

    @contextmanager
    def _write_transaction(self, failure: str) -> Iterator[Connection]:
        """``write_transaction`` for a write to the session's contents: in a ``lease_writes``
        block whose lease is not held yet, it is taken first (an append takes it in its own
        transaction instead)."""
        held = self._held
        if held is not None and (held.lease is None or held.released):
            with held.lock:
                if held.lease is None or held.released:
                    self._took(held, self._acquire(held))
        with write_transaction(self._engine, failure) as conn:
            yield conn

    def _acquire(self, held: WriteLease) -> SessionLease:
        """Take ``held``'s lease in a transaction of its own, waiting for a live holder."""
        return acquire(
            self._engine,
            self._t,
            self._session_id,
            holder=held.holder,
            timeout=held.timeout,
            ttl=held.ttl,
        )

    def _took(self, held: WriteLease, lease: SessionLease, *, released: bool = False) -> None:
        """Note that a write took (and maybe gave back) ``held``'s lease: it fences the
        block's later writes."""
        held.lease, held.released = lease, released
        if released:
            held.release_next = False
        self._fence = None if released else lease

    def _lock_row(self, conn: Connection) -> _Row:
        """Lock the session's row for this transaction, creating it if missing, and read it."""
        found = self._lock_existing(conn)
        if found is None:
            _insert_session(conn, self._t, self._session_id)
            found = self._lock_existing(conn)
            assert found is not None
        return found

    def _lock_existing(self, conn: Connection) -> _Row | None:
        """Lock and read the session's row; ``None`` when there is none.

        Raises:
            LeaseLostError: this memory is fenced by a lease that was taken over.
        """
        row = self._session_row(conn, lock=True)
        fence = self._fence
        if fence is not None:
            s = self._t.sessions
            token = conn.execute(select(s.c.lease_token).where(s.c.id == self._session_id)).scalar()
            if token != fence.token:
                raise lost(fence, None)
        return row

    def fence(self, lease: SessionLease | None) -> bool:
        """Fence this memory's writes by ``lease`` (a run's, from an ``SQLSessionStore`` on the
        same database and prefix): once another run takes the lease over, every write raises
        ``LeaseLostError`` and is not applied. ``None`` stops fencing. Returns whether the
        lease lives in this memory's tables (a lease from elsewhere is ignored)."""
        if self._held is not None:
            raise ConfigError(
                f"cannot fence session {self._session_id!r} by a lease inside lease_writes(): "
                "its writes are already fenced by the block's own lease"
            )
        if lease is None:
            self._fence = None
            return True
        if (
            lease.scope != lease_scope(self._engine, self._t)
            or lease.session_id != self._session_id
        ):
            return False
        self._fence = lease
        return True

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
