"""``RedisSessionStore``: saved sessions (``SessionState`` JSON) in Redis, sync and asyncio.

A state is a base at ``<prefix>:{<id>}:state`` plus a journal of patches at ``…:journal``
(``compactkit.sessions.journal``), its revision at ``…:revision``; a sorted set
``<prefix>:sessions`` lists the saved ids (scored by when they expire, so ``list()`` drops expired
ones). ``save`` is one Lua script (a reader never sees half a state), fenced by the run's lease
and the stored revision like the SQL and file stores (``compactkit.redis._lease``,
``compactkit.sessions.lease``): ``acquire``/``release`` lease a session to a run. Saves are
incremental: the session object that saved last appends one patch holding what changed (what it
costs does not grow with the session); any other save, and one once the journal outgrows the
base, writes the whole state and starts a new journal. With ``ttl`` a saved state expires that
long after its last save.

``save``/``load``/``delete``/``list`` use the ``redis.Redis`` client; ``asave``/``aload``/
``adelete``/``alist`` the same commands on a ``redis.asyncio.Redis`` client, for event loops.
The commands are queued by shared helpers, so only the execution differs.
"""

from __future__ import annotations

import builtins
import hashlib
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, cast

from compactkit.errors import ConfigError, SessionNotFoundError, StorageError
from compactkit.redis._keys import (
    connect,
    connect_async,
    require_prefix,
    require_ttl,
    session_tag,
)
from compactkit.redis._lease import (
    ACQUIRE,
    RELEASE,
    SAVE,
    busy_error,
    lease_keys,
    lease_scope,
    save_outcome,
)
from compactkit.sessions.journal import SaveMark, SaveMarks, read_journal, save_patch, save_whole
from compactkit.sessions.lease import (
    DEFAULT_TTL,
    GivenBack,
    SessionLease,
    check_lease_times,
    default_holder,
    wait_steps,
)
from compactkit.sessions.session import AgentSession, SessionState

__all__ = ["RedisSessionStore"]


class RedisSessionStore:
    """Saves sessions in Redis; safe to share between threads and processes."""

    def __init__(
        self,
        client_or_url: Any = None,
        *,
        async_client: Any = None,
        key_prefix: str = "compactkit",
        ttl: float | timedelta | None = None,
    ) -> None:
        """Use the Redis at ``client_or_url`` (and ``async_client`` for the ``a*`` methods).

        Args:
            client_or_url: A ``redis.Redis`` client (``decode_responses=False``) or a URL; a URL
                also gives the ``a*`` methods an asyncio client of their own.
            async_client: A ``redis.asyncio.Redis`` client for ``asave``/``aload``/…; ``None``
                with a client alone leaves the store sync only.
            key_prefix: The start of every key; use your ``RedisMemory``'s to keep a session's
                memory and checkpoints side by side.
            ttl: Expire a saved state this long after its last save; ``None`` keeps it.

        Raises:
            ConfigError: a bad client, URL, prefix or ttl, or no client at all.
        """
        if client_or_url is None and async_client is None:
            raise ConfigError("RedisSessionStore needs a redis URL, a client or an async_client")
        self._client = (
            None if client_or_url is None else connect(client_or_url, "RedisSessionStore")
        )
        self._owns = isinstance(client_or_url, str), isinstance(async_client, str)
        if async_client is None and isinstance(client_or_url, str):
            async_client = client_or_url
            self._owns = True, True
        self._async_client = (
            None if async_client is None else connect_async(async_client, "RedisSessionStore")
        )
        self._prefix = require_prefix(key_prefix)
        self._index = f"{self._prefix}:sessions"
        self._ttl_ms = require_ttl(ttl)
        client = self._client if self._client is not None else self._async_client
        self._scope = lease_scope(client, self._prefix)
        self._marks = SaveMarks()
        self._keys: dict[str, tuple[bytes, ...]] = {}  # session id -> SAVE's keys, its id
        # leases a save_and_release gave back (their release is then a no-op)
        self._released = GivenBack()  # leases a save_and_release gave back

    def __repr__(self) -> str:
        return f"RedisSessionStore(key_prefix={self._prefix!r})"

    # -- the commands, shared by both drivers ----------------------------------------------------

    def _key(self, session_id: str) -> str:
        return f"{session_tag(self._prefix, session_id)}:state"

    def _save_keys(self, session_id: str) -> tuple[bytes, ...]:
        """``SAVE``'s keys of ``session_id``, then the id, as bytes (built once per session:
        every save of a run names them, and redis-py sends bytes as they are)."""
        keys = self._keys.get(session_id)
        if keys is None:
            tag = session_tag(self._prefix, session_id)
            lease_key, _, revision_key = lease_keys(tag)
            names = (f"{tag}:state", self._index, lease_key, revision_key, f"{tag}:journal")
            keys = (*(name.encode() for name in names), session_id.encode())
            if len(self._keys) >= 1024:  # a bound: a long-lived store sees many sessions
                self._keys.clear()
            self._keys[session_id] = keys
        return keys

    def _save_call(
        self, session: AgentSession, whole: bool = False, release: bool = False
    ) -> tuple[tuple[Any, ...], SaveMark, bytes]:
        """``SAVE``'s script, keys and arguments, the mark the save leaves and its base id:
        a patch when this store saw ``session``'s last save (and ``whole`` is false), else the
        whole state. Fenced by ``session.lease`` when it is one of this store's, else refused
        while a run holds the session; checked against the stored revision when the session was
        resumed. With ``release`` (and a lease of this store) the save gives the lease back.

        Every argument is bytes: redis-py encodes anything else one type check at a time."""
        session_id = session.session_id
        *keys, encoded_id = self._save_keys(session_id)
        lease = session.lease
        fenced = lease is not None and lease.scope == self._scope
        expected = session.revision if session.fenced_by_revision else None
        mark = None if whole else self._marks.get(session)
        if mark is not None and not mark.outgrown():
            base, extends = cast("tuple[bytes, int]", mark.proof)
            change = save_patch(session, mark, mark.revision + 1)
            data, new_mark, mode = change.data, change.mark, (b"patch", base, b"%d" % extends)
        else:
            # The base's own revision only numbers its patches: a load takes the stored one.
            data, new_mark = save_whole(session, (session.revision or 0) + 1)
            base = secrets.token_hex(8).encode()
            mode = (b"whole", base, b"")
        if not fenced or lease is None:
            token, lease_ms = b"", b"0"
        else:
            token = b"%d" % lease.token
            lease_ms = b"" if release else b"%d" % max(1, round((lease.ttl or 60.0) * 1000))
        if self._ttl_ms is None:
            ttl, score = b"", b"inf"
        else:
            ttl, score = b"%d" % self._ttl_ms, repr(time.time() * 1000 + self._ttl_ms).encode()
        call = (
            SAVE,
            b"5",
            *keys,
            token,
            lease_ms,
            b"" if expected is None else b"%d" % expected,
            data,
            ttl,
            score,
            encoded_id,
            *mode,
        )
        return call, new_mark, base

    def _saved(self, session: AgentSession, reply: Any, mark: SaveMark, base: bytes) -> None:
        revision = save_outcome(reply, session)
        mark.proof = (base, revision)
        self._marks.set(session, mark)
        session.revision = revision

    def _loaded(
        self,
        session_id: str,
        data: bytes | None,
        patches: builtins.list[bytes],
        revision: bytes | None,
    ) -> SessionState:
        if data is None:
            raise SessionNotFoundError(session_id)
        state = read_journal(data, patches, source=f"Redis key {self._key(session_id)!r}")
        return state.model_copy(update={"revision": int(revision or 0)})

    def _queue_load(self, pipe: Any, session_id: str) -> None:
        tag = session_tag(self._prefix, session_id)
        pipe.get(f"{tag}:state")
        pipe.lrange(f"{tag}:journal", 1, -1)  # after the base id
        pipe.get(self._revision_key(session_id))

    def _queue_delete(self, pipe: Any, session_id: str) -> None:
        pipe.delete(self._key(session_id), f"{session_tag(self._prefix, session_id)}:journal")
        pipe.zrem(self._index, session_id.encode())

    def _queue_list(self, pipe: Any) -> None:
        pipe.zremrangebyscore(self._index, "-inf", f"({time.time() * 1000}")
        pipe.zrange(self._index, 0, -1)

    # -- sync ----------------------------------------------------------------------------------

    def save(self, session: AgentSession) -> None:
        """Save ``session.state()`` atomically (one script on the server), replacing its earlier
        saved state.

        Incremental: when this store object saved this session object last, only what changed
        since is written (one patch appended to the journal); otherwise, and once the journal
        outgrows the base, the whole state (see ``compactkit.sessions.journal``).

        Fenced: under ``session.lease`` (a run's, from this store) the save is applied only
        while that lease still holds the session, and extends it; without a lease it is refused
        while a run holds a live one. A resumed session saved after another run saved the
        session since it was loaded is refused.

        Raises:
            ConfigError: ``session`` is not an ``AgentSession``.
            LeaseLostError: the run's lease expired or was taken over; nothing was saved.
            SessionBusyError: another run holds the session's lease; nothing was saved.
            ConcurrencyError: the session was saved since this object loaded it.
            StorageError: Redis failed; the earlier state is unchanged.
        """
        self._save(_require_session(session), release=False)

    def save_and_release(self, session: AgentSession) -> None:
        """``save(session)``, then ``release(session.lease)`` — in the same script: an
        ``Agent`` run's last save (its answer) also gives its lease back, so a run pays one
        round trip less. The later ``release`` of that lease does nothing.

        Raises:
            As ``save``; the lease is given back only when the save was applied under it (a
            taken-over run gets ``LeaseLostError`` and the new holder keeps the lease).
        """
        session = _require_session(session)
        lease = session.lease
        if lease is None or lease.scope != self._scope:
            self._save(session, release=False)
            return
        self._save(session, release=True)
        self._released.add(lease)

    def _save(self, session: AgentSession, *, release: bool) -> None:
        client = self._sync("save")
        try:
            call, mark, base = self._save_call(session, release=release)
            with self._storage(f"save session {session.session_id!r}"):
                reply = _evalsha(client, call)
                if _rebase(reply):  # something else was saved since: write it all
                    call, mark, base = self._save_call(session, whole=True, release=release)
                    reply = _evalsha(client, call)
            self._saved(session, reply, mark, base)
        except BaseException:
            self._marks.forget(session)
            raise

    def load(self, session_id: str) -> SessionState:
        """The saved state of ``session_id``.

        Raises:
            SessionNotFoundError: nothing is saved under ``session_id`` (or it expired).
            StorageError: the saved state is corrupt or Redis failed.
        """
        pipe = self._sync("load").pipeline(transaction=True)  # one snapshot: base and journal
        self._queue_load(pipe, session_id)
        with self._storage(f"load session {session_id!r}"):
            data, patches, revision = pipe.execute()
        return self._loaded(session_id, data, patches, revision)

    def delete(self, session_id: str) -> bool:
        """Delete the saved state; ``False`` when there was none."""
        pipe = self._sync("delete").pipeline(transaction=True)
        self._queue_delete(pipe, session_id)
        with self._storage(f"delete session {session_id!r}"):
            deleted, _ = pipe.execute()
        return bool(deleted)

    def list(self) -> builtins.list[str]:
        """The ids of the saved sessions (not expired), sorted."""
        pipe = self._sync("list").pipeline(transaction=True)
        self._queue_list(pipe)
        with self._storage("list sessions"):
            _, ids = pipe.execute()
        return sorted(raw.decode() for raw in ids)

    # -- asyncio -------------------------------------------------------------------------------

    async def asave(self, session: AgentSession) -> None:
        """``save`` on the asyncio client."""
        session = _require_session(session)
        client = self._asyncio("asave")
        try:
            call, mark, base = self._save_call(session)
            with self._storage(f"save session {session.session_id!r}"):
                reply = await _aevalsha(client, call)
                if _rebase(reply):  # something else was saved since: write it all
                    call, mark, base = self._save_call(session, whole=True)
                    reply = await _aevalsha(client, call)
            self._saved(session, reply, mark, base)
        except BaseException:
            self._marks.forget(session)
            raise

    async def aload(self, session_id: str) -> SessionState:
        """``load`` on the asyncio client."""
        pipe = self._asyncio("aload").pipeline(transaction=True)
        self._queue_load(pipe, session_id)
        with self._storage(f"load session {session_id!r}"):
            data, patches, revision = await pipe.execute()
        return self._loaded(session_id, data, patches, revision)

    async def adelete(self, session_id: str) -> bool:
        """``delete`` on the asyncio client."""
        pipe = self._asyncio("adelete").pipeline(transaction=True)
        self._queue_delete(pipe, session_id)
        with self._storage(f"delete session {session_id!r}"):
            deleted, _ = await pipe.execute()
        return bool(deleted)

    async def alist(self) -> builtins.list[str]:
        """``list`` on the asyncio client."""
        pipe = self._asyncio("alist").pipeline(transaction=True)
        self._queue_list(pipe)
        with self._storage("list sessions"):
            _, ids = await pipe.execute()
        return sorted(raw.decode() for raw in ids)

    # -- the session lease (compactkit.sessions.lease) ----------------------------------------

    def acquire(
        self,
        session_id: str,
        *,
        holder: str | None = None,
        timeout: float = 0.0,
        ttl: float = DEFAULT_TTL,
    ) -> SessionLease:
        """Take the lease of ``session_id`` for a run: free, expired or already ``holder``'s,
        it gets the next fencing token (``INCR``) and lives ``ttl`` seconds past its last
        fenced write, by the server's clock (see ``compactkit.sessions.lease``).

        Raises:
            SessionBusyError: another holder kept it for the whole ``timeout``, naming it and
                since when.
            ConfigError: ``timeout`` or ``ttl`` is not a number of seconds.
        """
        check_lease_times(timeout, ttl)
        holder = holder or default_holder()
        tag = session_tag(self._prefix, session_id)
        client = self._sync("acquire")
        pauses = iter(wait_steps(timeout))
        while True:
            since = datetime.now(timezone.utc)
            with self._storage(f"lease session {session_id!r}"):
                taken, first, second = client.eval(
                    ACQUIRE,
                    3,
                    *lease_keys(tag),
                    holder,
                    since.isoformat(),
                    max(1, round(ttl * 1000)),
                )
            if taken:
                return SessionLease(
                    session_id, holder, int(first), since, int(second), self._scope, ttl
                )
            pause = next(pauses, None)
            if pause is None:
                raise busy_error(session_id, first, second, timeout)
            time.sleep(pause)

    def release(self, lease: SessionLease) -> None:
        """Give ``lease`` back (nothing when it expired or was taken over meanwhile, or a
        ``save_and_release`` gave it back)."""
        if self._released.take(lease):
            return
        lease_key = lease_keys(session_tag(self._prefix, lease.session_id))[0]
        with self._storage(f"release session {lease.session_id!r}"):
            self._sync("release").eval(RELEASE, 1, lease_key, str(lease.token))

    def close(self) -> None:
        """Close the sync client this store made from a URL (clients you passed stay open)."""
        if self._owns[0] and self._client is not None:
            self._client.close()

    async def aclose(self) -> None:
        """Close the clients this store made from a URL, the asyncio one included (call it in
        the event loop that used it)."""
        self.close()
        if self._owns[1] and self._async_client is not None:
            await self._async_client.aclose()

    # -- helpers -------------------------------------------------------------------------------

    def _revision_key(self, session_id: str) -> str:
        return lease_keys(session_tag(self._prefix, session_id))[2]

    def _sync(self, method: str) -> Any:
        if self._client is None:
            raise ConfigError(
                f"RedisSessionStore.{method} needs a sync client: this store has only an "
                f"async_client; await a{method}(...) or pass a redis.Redis client or a URL"
            )
        return self._client

    def _asyncio(self, method: str) -> Any:
        if self._async_client is None:
            raise ConfigError(
                f"RedisSessionStore.{method} needs an asyncio client: pass "
                "async_client=redis.asyncio.Redis(...) or build the store from a URL"
            )
        return self._async_client

    @contextmanager
    def _storage(self, what: str) -> Iterator[None]:
        import redis

        try:
            yield
        except redis.RedisError as exc:
            raise StorageError(f"cannot {what} in Redis: {exc}") from exc


_SAVE_SHA = hashlib.sha1(SAVE.encode()).hexdigest().encode()


def _evalsha(client: Any, call: tuple[Any, ...]) -> Any:
    """Run ``SAVE`` by its hash (the script's text is sent only when the server lacks it:
    sending it with every save cost more than the save's own work)."""
    import redis

    try:
        return client.evalsha(_SAVE_SHA, *call[1:])
    except redis.exceptions.NoScriptError:
        return client.eval(*call)


async def _aevalsha(client: Any, call: tuple[Any, ...]) -> Any:
    import redis

    try:
        return await client.evalsha(_SAVE_SHA, *call[1:])
    except redis.exceptions.NoScriptError:
        return await client.eval(*call)


def _rebase(reply: Any) -> bool:
    """Whether ``SAVE`` answered that the stored base moved (a patch cannot go on top)."""
    return isinstance(reply, list) and _text(reply[0]) == "rebase"


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _require_session(value: object) -> AgentSession:
    if isinstance(value, AgentSession):
        return value
    raise ConfigError(
        f"RedisSessionStore.save takes an AgentSession, got {type(value).__name__}; save the "
        "session that holds the memory (AgentSession(memory=memory))"
    )
