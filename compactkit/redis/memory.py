"""``RedisMemory``: a session's memory in Redis, the worked example of a custom backend.

Keys of one session (``<prefix>:{<id>}:…``, see ``_keys``):

* ``meta`` — a hash: ``version`` (every write), ``window`` (every write that is not an append),
  ``next_seq`` and ``summary``;
* ``active`` — a list of the active items as JSON: an append is one ``RPUSH``, O(batch);
* ``history`` — a hash seq → the item as first stored (archive and originals of replaced ones);
* ``calls`` / ``answered`` — sets of call ids, so an append checks only its own ids;
* ``made`` — seqs of the items compactions created (placeholders), which ``restore`` may drop.

Every write is one MULTI/EXEC transaction under ``WATCH meta``: an append reads the counter and
the call ids it needs, checks them with the shared rules, and commits only if no other writer
touched the session meanwhile (redis-py retries it otherwise). A compaction (``apply``) is
checked against the session version the same way and swaps summary and items in one EXEC, so a
reader in any process sees the old state or the new one. Reading the active items each step
fetches only those appended since the last read (``LRANGE`` from the cached length) while the
``window`` counter says the list was only appended to.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from compactkit.compressors.base import CompressorLike
from compactkit.errors import ConcurrencyError, ConfigError, StorageError
from compactkit.items import FunctionCall, FunctionCallOutput, Item
from compactkit.items.snapshot import (
    DEFAULT_SUMMARY_ROLE,
    CompactResult,
    MemorySnapshot,
    SummaryRole,
)
from compactkit.items.view import ItemsView
from compactkit.memory.base import BaseMemory, CompactCallback, SnapshotTrigger
from compactkit.memory.lease import DEFAULT_COMPACTION_TTL, check_compaction_options
from compactkit.memory.rules import (
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
from compactkit.redis._keys import (
    connect,
    dump_item,
    load_items,
    require_prefix,
    require_ttl,
    session_tag,
)
from compactkit.redis._lease import (
    RELEASE_COMPACTION,
    TAKE_COMPACTION,
    lease_keys,
    lease_scope,
    lost_error,
)
from compactkit.sessions.lease import DEFAULT_TTL, SessionLease, wait_steps

__all__ = ["RedisMemory"]

_META = ("version", "window", "next_seq")


class RedisMemory(BaseMemory):
    """A session's memory in Redis; safe to share between threads, and many processes may open
    the same session (writes are fenced by the session version)."""

    def __init__(
        self,
        client_or_url: Any,
        session_id: str,
        *,
        key_prefix: str = "compactkit",
        ttl: float | timedelta | None = None,
        policy: SnapshotTrigger | None = None,
        compressor: CompressorLike | None = None,
        on_compact: CompactCallback | None = None,
        accept_unknown_call_ids: bool = False,
        summary_role: SummaryRole = DEFAULT_SUMMARY_ROLE,
        compaction_ttl: float = DEFAULT_COMPACTION_TTL,
        compaction_wait: float = 0.0,
    ) -> None:
        """Open the memory of ``session_id`` (empty until written).

        Args:
            client_or_url: A ``redis.Redis`` client (``decode_responses=False``) or a URL.
            session_id: The session's id; any non-empty string.
            key_prefix: The start of every key (letters, digits, ``_.-``, parts joined by
                ``:``).
            ttl: Expire the session this long after its last write (seconds or a
                ``timedelta``); ``None`` keeps it until ``clear()``.
            policy: See ``BaseMemory``.
            compressor: See ``BaseMemory``.
            on_compact: See ``BaseMemory``.
            accept_unknown_call_ids: See ``BaseMemory``.
            summary_role: See ``BaseMemory``.
            compaction_ttl: Seconds the compaction lease lives (``compactkit.memory.lease``;
                Redis expires it): a compactor that died holding it is replaced after that long.
            compaction_wait: Seconds a compactor waits for the compaction lease another
                holds before it skips (0: skip at once, without calling the compressor).

        Raises:
            ConfigError: a bad client, URL, prefix, ttl, compaction option or session id.
        """
        super().__init__(
            policy=policy,
            compressor=compressor,
            on_compact=on_compact,
            accept_unknown_call_ids=accept_unknown_call_ids,
            summary_role=summary_role,
        )
        self.compaction_ttl, self.compaction_wait = check_compaction_options(
            compaction_ttl, compaction_wait
        )
        self._client = connect(client_or_url, "RedisMemory")
        self._owns_client = isinstance(client_or_url, str)
        self._session_id = session_id
        tag = session_tag(require_prefix(key_prefix), session_id)
        self._meta, self._active = f"{tag}:meta", f"{tag}:active"
        self._history, self._calls, self._answered = (
            f"{tag}:history",
            f"{tag}:calls",
            f"{tag}:answered",
        )
        self._made = f"{tag}:made"
        self._compaction = f"{tag}:compaction"  # the compaction lease: its holder, with a PX
        self._lease_key = lease_keys(tag)[0]  # a run's session lease (RedisSessionStore)
        self._scope = lease_scope(self._client, key_prefix)
        self._fence: SessionLease | None = None
        self._keys = (
            self._meta,
            self._active,
            self._history,
            self._calls,
            self._answered,
            self._made,
        )
        self._ttl_ms = require_ttl(ttl)
        self._lineage = Lineage()
        self._lock = threading.Lock()  # guards the cached window below
        self._cache: list[Item] = []  # only appended to; replaced when the window changes
        self._cache_window: int | None = None
        self._cache_version = 0

    def __repr__(self) -> str:
        return f"RedisMemory(session_id={self._session_id!r}, key={self._meta!r})"

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self._session_id

    @property
    def client(self) -> Any:
        """The ``redis.Redis`` client."""
        return self._client

    def close(self) -> None:
        """Close the client this memory made from a URL (a client you passed stays open)."""
        if self._owns_client:
            self._client.close()

    def fence(self, lease: SessionLease | None) -> bool:
        """Fence this memory's writes by ``lease`` (a run's, from a ``RedisSessionStore`` on
        the same server, database and key prefix): once it expired or another run took it
        over, every write raises ``LeaseLostError`` and writes nothing; each fenced write
        extends it. ``None`` stops fencing. Returns whether the lease lives where this memory
        does (a lease from elsewhere is ignored)."""
        if lease is None:
            self._fence = None
            return True
        if lease.scope != self._scope or lease.session_id != self._session_id:
            return False
        self._fence = lease
        return True

    # -- the compaction lease (compactkit.memory.lease) ----------------------------------------

    def take_compaction(self, holder: str) -> str:
        """Take the session's compaction lease for ``holder`` unless another holds a live one
        (waiting up to ``compaction_wait``); who holds it afterwards. Redis expires it after
        ``compaction_ttl``, by the server's clock."""
        ttl_ms = max(1, round(self.compaction_ttl * 1000))
        pauses = iter(wait_steps(self.compaction_wait))
        while True:
            with self._storage("lease the compaction of"):
                current = self._client.eval(TAKE_COMPACTION, 1, self._compaction, holder, ttl_ms)
            pause = next(pauses, None)
            if current.decode() == holder or pause is None:
                return str(current.decode())
            time.sleep(pause)

    def release_compaction(self, holder: str) -> None:
        """Give the compaction lease back, if ``holder`` still holds it."""
        with self._storage("release the compaction lease of"):
            self._client.eval(RELEASE_COMPACTION, 1, self._compaction, holder)

    # -- storage ------------------------------------------------------------------------------

    def _append(self, items: Sequence[Item]) -> None:
        ids = [i.call_id for i in items if isinstance(i, (FunctionCall, FunctionCallOutput))]

        def write(pipe: Any) -> None:
            version, _, next_seq = self._counters(pipe)
            index = CallIndex()
            if ids:
                for call_id, called, answered in zip(
                    ids,
                    pipe.smismember(self._calls, ids),
                    pipe.smismember(self._answered, ids),
                    strict=True,
                ):
                    if called:
                        index.calls.add(call_id)
                    if answered:
                        index.answered.add(call_id)
            index.check(items, accept_unknown=self.accept_unknown_call_ids)
            stored, next_seq = assign_seqs(items, next_seq)
            pipe.multi()
            pipe.rpush(self._active, *[dump_item(i) for i in stored])
            pipe.hset(self._history, mapping={str(i.seq): dump_item(i) for i in stored})
            self._index_calls(pipe, stored)
            pipe.hset(self._meta, mapping={"version": version + 1, "next_seq": next_seq})
            self._expire(pipe)

        self._transaction(write, "append to")

    @property
    def version(self) -> int:
        """Increases with every write; 0 for a memory never written."""
        with self._storage("read"):
            raw = self._client.hget(self._meta, "version")
        return int(raw or 0)

    def snapshot(self) -> MemorySnapshot:
        """The summary and active items, with ``version``; reads only the items appended since
        the last read while nothing but appends happened."""
        with self._lock, self._storage("read"):
            pipe = self._client.pipeline(transaction=True)
            pipe.hmget(self._meta, *_META, "summary")
            pipe.lrange(self._active, len(self._cache), -1)
            (version, window, next_seq, summary), tail = pipe.execute()
            # A new window (compaction, pin, restore, clear) or a lower version (the keys
            # expired and the session started again) invalidates the cached items.
            if _int(window, 0) != self._cache_window or _int(version, 0) < self._cache_version:
                pipe.hmget(self._meta, *_META, "summary")
                pipe.lrange(self._active, 0, -1)
                (version, window, next_seq, summary), every = pipe.execute()
                self._cache, self._cache_window = load_items(every), _int(window, 0)
            elif tail:
                self._cache.extend(load_items(tail))
            version, next_seq = _int(version, 0), _int(next_seq, 1)
            self._cache_version = version
            self._lineage.note(version, self._cache_window, next_seq)
            return MemorySnapshot.model_construct(
                summary=(summary or b"").decode(),
                items=ItemsView(self._cache, len(self._cache)),
                version=version,
            )

    def history(self) -> list[Item]:
        """Every item stored since the last ``clear()``, archived ones included, by seq."""
        with self._storage("read"):
            raw = self._client.hgetall(self._history)
        return load_items([raw[k] for k in sorted(raw, key=int)])

    def apply(self, result: CompactResult) -> bool:
        """Swap in ``result`` in one MULTI/EXEC checked against the session version; items
        appended since its snapshot are kept after its items.

        Raises:
            ConcurrencyError: the session was compacted, restored, cleared or pinned (here or
                in another process) after the result's snapshot was read.
            ConfigError: the result has no version, or breaks the compressor contract.
        """
        require_result(result)
        if not result.changed:
            return False

        def swap(pipe: Any) -> None:
            version, window, next_seq = self._counters(pipe)
            since = rebase_point(result, version, window, self._lineage)
            active = load_items(pipe.lrange(self._active, 0, -1))
            self._unchanged_since(pipe, version)
            plan = plan_apply(active, result, next_seq, appended_from=since)
            seqs = [str(i.seq) for i in plan.items]
            originals = (
                dict(zip(seqs, pipe.hmget(self._history, seqs), strict=True)) if seqs else {}
            )
            history: dict[str, bytes] = {}
            new: list[Item] = []
            for item, key in zip(plan.items, seqs, strict=True):
                raw = originals.get(key)
                if raw is None:
                    new.append(item)
                    history[key] = dump_item(item)
                else:
                    (original,) = load_items([raw])
                    if original.pinned != item.pinned:
                        history[key] = dump_item(
                            original.model_copy(update={"pinned": item.pinned})
                        )
            pipe.multi()
            pipe.delete(self._active)
            if plan.items:
                pipe.rpush(self._active, *[dump_item(i) for i in plan.items])
            if history:
                pipe.hset(self._history, mapping=history)
            self._index_calls(pipe, new)
            if new:
                pipe.sadd(self._made, *[str(i.seq) for i in new])
            meta = {"summary": result.snapshot.summary, "next_seq": plan.next_seq}
            pipe.hset(self._meta, mapping={**meta, "version": version + 1, "window": window + 1})
            self._expire(pipe)

        self._transaction(swap, "compact")
        return True

    def restore(self, snapshot: MemorySnapshot, *, history: Sequence[Item] = ()) -> None:
        """Replace the whole session with ``snapshot`` (and ``history``) in one transaction;
        the version becomes one more than both the current and the snapshot's. Never compacts.

        Raises:
            ConcurrencyError: the session holds items appended after the snapshot (a seq above
                every seq it restores) — another worker's turns, most likely; nothing is
                written. ``clear()`` first to discard them deliberately.
            ConfigError: the snapshot is not a state appends could build.
        """
        top = max([0, *(i.seq for i in (*snapshot.items, *history) if i.seq is not None)])

        def load(pipe: Any) -> None:
            version, window, next_seq = self._counters(pipe)
            above = sorted(int(k) for k in pipe.hkeys(self._history) if int(k) > top)
            if above:
                made = pipe.smismember(self._made, [str(seq) for seq in above])
                newer = [seq for seq, created in zip(above, made, strict=True) if not created]
                if newer:
                    raise ConcurrencyError(
                        f"restore() would delete {len(newer)} items of session "
                        f"{self._session_id!r} appended after the snapshot it restores (seq "
                        f"{newer[0]}..{newer[-1]}, above its newest seq {top}); another worker "
                        "may have written them. Nothing was restored: resume from the memory as "
                        "it is, or clear() first to discard them deliberately"
                    )
            plan = plan_restore(
                snapshot, history, next_seq, accept_unknown=self.accept_unknown_call_ids
            )
            pipe.multi()
            pipe.delete(self._active, self._history, self._calls, self._answered, self._made)
            if plan.items:
                pipe.rpush(self._active, *[dump_item(i) for i in plan.items])
            if plan.history:
                pipe.hset(
                    self._history, mapping={str(s): dump_item(i) for s, i in plan.history.items()}
                )
            self._index_calls(pipe, list(plan.history.values()))
            pipe.hset(
                self._meta,
                mapping={
                    "summary": snapshot.summary,
                    "next_seq": plan.next_seq,
                    "version": max(version, snapshot.version or 0) + 1,
                    "window": window + 1,
                },
            )
            self._expire(pipe)

        self._transaction(load, "restore")
        self._lineage.forget()

    def clear(self) -> None:
        """Forget the summary, items, pins and history; seqs are still never reused."""

        def wipe(pipe: Any) -> None:
            pipe.multi()
            pipe.delete(self._active, self._history, self._calls, self._answered, self._made)
            pipe.hset(self._meta, "summary", "")
            pipe.hincrby(self._meta, "version", 1)
            pipe.hincrby(self._meta, "window", 1)
            self._expire(pipe)

        self._transaction(wipe, "clear")

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

        def flag(pipe: Any) -> None:
            version, window, _ = self._counters(pipe)
            active = load_items(pipe.lrange(self._active, 0, -1))
            self._unchanged_since(pipe, version)
            index = next((n for n, item in enumerate(active) if item.seq == seq), None)
            if index is None:
                raise not_active_error(seq, archived=bool(pipe.hexists(self._history, str(seq))))
            if active[index].pinned == pinned:
                return
            (original,) = load_items([pipe.hget(self._history, str(seq))])
            pipe.multi()
            pipe.lset(
                self._active, index, dump_item(active[index].model_copy(update={"pinned": pinned}))
            )
            pipe.hset(
                self._history, str(seq), dump_item(original.model_copy(update={"pinned": pinned}))
            )
            pipe.hset(self._meta, mapping={"version": version + 1, "window": window + 1})
            self._expire(pipe)

        self._transaction(flag, "pin in")

    # -- helpers -----------------------------------------------------------------------------

    def _counters(self, pipe: Any) -> tuple[int, int, int]:
        version, window, next_seq = pipe.hmget(self._meta, *_META)
        return _int(version, 0), _int(window, 0), _int(next_seq, 1)

    def _unchanged_since(self, pipe: Any, version: int) -> None:
        """Retry the transaction when a write landed between reading the counters and the
        items: WATCH would refuse its EXEC anyway, and the plan must not mix two states."""
        import redis

        if _int(pipe.hget(self._meta, "version"), 0) != version:
            raise redis.WatchError("the session changed while it was read")

    def _index_calls(self, pipe: Any, items: Sequence[Item]) -> None:
        calls = [i.call_id for i in items if isinstance(i, FunctionCall)]
        answered = [i.call_id for i in items if isinstance(i, FunctionCallOutput)]
        if calls:
            pipe.sadd(self._calls, *calls)
        if answered:
            pipe.sadd(self._answered, *answered)

    def _expire(self, pipe: Any) -> None:
        if self._ttl_ms is not None:
            for key in self._keys:
                pipe.pexpire(key, self._ttl_ms)

    def _transaction(self, body: Callable[[Any], None], what: str) -> None:
        """Run ``body`` under ``WATCH meta`` and commit its MULTI; redis-py re-runs it when
        another writer touched the session first. Fenced by a run's lease, the lease key is
        watched too and its token checked first: a takeover before EXEC aborts the write."""
        lease = self._fence
        if lease is None:
            with self._storage(what):
                self._client.transaction(body, self._meta)
            return

        def fenced(pipe: Any) -> None:
            holder, token = pipe.hmget(self._lease_key, "holder", "token")
            if token is None or int(token) != lease.token:
                raise lost_error(lease, holder)
            body(pipe)
            pipe.pexpire(self._lease_key, max(1, round((lease.ttl or DEFAULT_TTL) * 1000)))

        with self._storage(what):
            self._client.transaction(fenced, self._meta, self._lease_key)

    @contextmanager
    def _storage(self, what: str) -> Iterator[None]:
        import redis

        try:
            yield
        except (ConfigError, ConcurrencyError):
            raise
        except redis.RedisError as exc:
            raise StorageError(
                f"cannot {what} session {self._session_id!r} in Redis: {exc}"
            ) from exc


def _int(raw: bytes | None, default: int) -> int:
    return default if raw is None else int(raw)
