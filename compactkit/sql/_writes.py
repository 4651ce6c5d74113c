"""Writes to a SQL session other than compactions: appends (the hot path), restore, clear,
purge and pins — and ``lease_writes``, the session lease carried by those writes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone

from sqlalchemy import delete, insert, select, update

from compactkit.errors import ConcurrencyError, ConfigError
from compactkit.items import Item
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory.lease import default_holder
from compactkit.memory.rules import not_active_error, plan_restore, require_seq
from compactkit.sessions.lease import DEFAULT_TTL, SessionLease, check_lease_times
from compactkit.sql._append import Appended, LeaseTake
from compactkit.sql._lease import LeaseBusy, WriteLease, lease_scope, release
from compactkit.sql._reads import SQLSession
from compactkit.sql._rows import (
    _ACTIVE,
    _content_differs,
    _json,
    _now,
    _payloads,
    _Row,
    _seq,
    _window,
)

__all__ = ["Writes"]


class Writes(SQLSession):
    """Appends, ``restore``, ``clear``, ``purge``, ``pin`` and ``unpin`` of ``SQLMemory``."""

    def _append(self, items: Sequence[Item]) -> None:
        appends, session_id, accept = self._appends, self._session_id, self.accept_unknown_call_ids
        held = self._held
        if held is not None:
            done = self._leased_append(held, items)
        else:
            # One statement on PostgreSQL (most appends): committed as it runs, no BEGIN and
            # COMMIT round trips (``RawWriter.one_statement``).
            write = self._raw_write
            done = (write.one_statement if appends.in_one_statement(items) else write)(
                self._write_failure,
                appends.append,
                session_id,
                items,
                accept_unknown=accept,
                fence=self._fence,
            )
        with self._lock:  # extend the cache only if it held exactly the version we appended to
            window = self._window
            if window is None:
                return
            row = window.row  # the summary changes only with the window version: these say
            if (  # which state the cache holds
                row.version == done.version - 1
                and row.window_version == done.window_version
                and row.next_seq == done.next_seq - len(items)
                and row.created_at == done.created_at
            ):
                after = _Row(
                    done.version, row.window_version, done.next_seq, row.summary, row.created_at
                )
                self._window = window.extended(after, done.items, [_seq(i) for i in done.items])

    def _leased_append(self, held: WriteLease, items: Sequence[Item]) -> Appended:
        """An append in a ``lease_writes`` block: it takes the block's lease when it is not
        held (in this append's transaction; a busy lease is waited for as ``acquire`` does),
        is fenced by it otherwise, and gives it back when asked to."""
        write, append, failure = self._raw_write, self._appends.append, self._write_failure
        session_id, accept = self._session_id, self.accept_unknown_call_ids
        with held.lock:
            release_now = held.release_next
            lease = None if held.released else held.lease
            if lease is not None:
                done = write(
                    failure,
                    append,
                    session_id,
                    items,
                    accept_unknown=accept,
                    fence=lease,
                    release=release_now,
                )
                self._took(held, lease, released=release_now)
                return done
            since = datetime.now(timezone.utc)
            take = LeaseTake(held.holder, held.ttl, since)
            try:
                done = write(
                    failure,
                    append,
                    session_id,
                    items,
                    accept_unknown=accept,
                    take=take,
                    release=release_now,
                )
            except LeaseBusy:  # another holder's live lease: wait for it, then append fenced
                lease = self._acquire(held)
                self._took(held, lease)
                done = write(
                    failure,
                    append,
                    session_id,
                    items,
                    accept_unknown=accept,
                    fence=lease,
                    release=release_now,
                )
            else:
                scope = lease_scope(self._engine, self._t)
                lease = SessionLease(
                    session_id, held.holder, done.lease_token, since, done.revision, scope, held.ttl
                )
            self._took(held, lease, released=release_now)
            return done

    @contextmanager
    def lease_writes(
        self, holder: str | None = None, *, timeout: float = 0.0, ttl: float = DEFAULT_TTL
    ) -> Iterator[WriteLease]:
        """Hold the session's lease (``SQLSessionStore.acquire``'s) over the writes of a
        ``with`` block, at no transaction of its own: the block's first write takes it in its
        own transaction, every later one is fenced by it (``LeaseLostError`` once it was
        taken over), and it is given back by the append after
        ``held.release_with_next_append()`` or, when no append did, as the block ends.

        Exclusion starts at the first write: what the block read before it, another run may
        have changed. Take the lease with ``SQLSessionStore.acquire`` first when a turn must
        decide on what it reads (see docs/many-workers.md).

        Args:
            holder: Who holds it (shown in ``SessionBusyError``); default ``host:pid:tag``.
            timeout: Seconds the first write waits for another holder's live lease.
            ttl: Seconds the lease lives past the block's last write (a holder that died
                is taken over after that long).

        Raises:
            ConfigError: a bad ``timeout``/``ttl``, or the memory is already fenced.
            SessionBusyError: (from the first write) another holder kept the lease for the
                whole ``timeout``; nothing was written.
            LeaseLostError: (from a later write) the lease was taken over; nothing written.
        """
        check_lease_times(timeout, ttl)
        if self._held is not None or self._fence is not None:
            raise ConfigError(
                f"session {self._session_id!r}'s writes are already fenced by a lease: one "
                "lease_writes() block (or fence()) at a time on one memory"
            )
        held = WriteLease(holder or default_holder(), float(timeout), float(ttl))
        self._held = held
        try:
            yield held
        finally:
            self._held, self._fence = None, None
            if held.lease is not None and not held.released:
                release(self._engine, self._t, held.lease)  # nothing when it was taken over

    def restore(self, snapshot: MemorySnapshot, *, history: Sequence[Item] = ()) -> None:
        """Replace the whole state with ``snapshot`` (and ``history``) in one transaction.

        The version becomes one more than both the current and the snapshot's version. The
        session's compaction records are deleted (they described the state replaced).
        Never compacts.

        Raises:
            ConcurrencyError: the session holds items appended after the snapshot (a seq
                above every seq it restores) that this object has not read: restoring would
                delete another worker's turns. Nothing is written; read the memory (or
                ``clear()``) first to discard them deliberately.
            ConfigError: the snapshot is not a state appends could build (see
                ``AgentMemory.restore``).
        """
        i, s = self._t.items, self._t.sessions
        with self._write_transaction(f"cannot restore session {self._session_id!r}") as conn:
            row = self._lock_row(conn)
            # Validated first: what restore takes, and a state appends could build.
            plan = plan_restore(
                snapshot, history, row.next_seq, accept_unknown=self.accept_unknown_call_ids
            )
            given = (*snapshot.items, *history)
            top = max([0, *(item.seq for item in given if item.seq is not None)])
            # Items this object has read it may discard (a deliberate rollback, popping the
            # last item); items appended since its last read — another worker's — it may not.
            cached = self._window
            seen = (
                cached.row.next_seq
                if cached is not None and cached.row.created_at == row.created_at
                else 1
            )
            newer = (
                conn.execute(
                    select(i.c.seq)
                    .where(
                        i.c.session_id == self._session_id,
                        i.c.seq > top,
                        i.c.seq >= seen,
                        i.c.created_by.is_(None),
                    )
                    .order_by(i.c.seq)
                )
                .scalars()
                .all()
            )
            if newer:
                raise ConcurrencyError(
                    f"restore() would delete {len(newer)} items of session "
                    f"{self._session_id!r} appended after the snapshot it restores (seq "
                    f"{newer[0]}..{newer[-1]}, above its newest seq {top}); another worker may "
                    "have written them. Nothing was restored: resume from the memory as it is, "
                    "or clear() first to discard them deliberately"
                )
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
        with self._write_transaction(f"cannot clear session {self._session_id!r}") as conn:
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
        with self._write_transaction(f"cannot purge session {self._session_id!r}") as conn:
            if self._lock_existing(conn) is None:
                return False
            self._delete_contents(conn)
            for table in (self._t.session_patches, self._t.session_bases):  # the store's state
                conn.execute(delete(table).where(table.c.session_id == self._session_id))
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

    def _set_pinned(self, seq: int, pinned: bool) -> None:
        require_seq(seq)
        i, s = self._t.items, self._t.sessions
        with self._write_transaction(f"cannot write session {self._session_id!r}") as conn:
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
