"""``RedisSessionStore``: saved sessions (``SessionState`` JSON) in Redis.

A state lives at ``<prefix>:{<id>}:state``; a sorted set ``<prefix>:sessions`` lists the saved ids
(scored by when they expire, so ``list()`` drops expired ones). ``save`` is one MULTI/EXEC (last
writer wins; a reader never sees half a state). With ``ttl`` a saved state expires that long
after its last save.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from compactkit.errors import ConfigError, SessionNotFoundError, StorageError
from compactkit.redis._keys import connect, require_prefix, require_ttl, session_tag
from compactkit.sessions.session import AgentSession, SessionState

__all__ = ["RedisSessionStore"]

_FOREVER = float("inf")


class RedisSessionStore:
    """Saves sessions in Redis; safe to share between threads and processes."""

    def __init__(
        self,
        client_or_url: Any,
        *,
        key_prefix: str = "compactkit",
        ttl: float | timedelta | None = None,
    ) -> None:
        """Use the Redis at ``client_or_url``.

        Args:
            client_or_url: A ``redis.Redis`` client (``decode_responses=False``) or a URL.
            key_prefix: The start of every key; use your ``RedisMemory``'s to keep a session's
                memory and checkpoints side by side.
            ttl: Expire a saved state this long after its last save; ``None`` keeps it.

        Raises:
            ConfigError: a bad client, URL, prefix or ttl.
        """
        self._client = connect(client_or_url, "RedisSessionStore")
        self._prefix = require_prefix(key_prefix)
        self._index = f"{self._prefix}:sessions"
        self._ttl_ms = require_ttl(ttl)

    def __repr__(self) -> str:
        return f"RedisSessionStore(key_prefix={self._prefix!r})"

    def _key(self, session_id: str) -> str:
        return f"{session_tag(self._prefix, session_id)}:state"

    def save(self, session: AgentSession) -> None:
        """Save ``session.state()`` atomically, replacing its earlier saved state.

        Raises:
            ConfigError: ``session`` is not an ``AgentSession``.
            StorageError: Redis failed; the earlier state is unchanged.
        """
        session = _require_session(session)
        data = session.state().to_json()
        key = self._key(session.session_id)
        expires = _FOREVER if self._ttl_ms is None else time.time() * 1000 + self._ttl_ms
        with self._storage(f"save session {session.session_id!r}"):
            pipe = self._client.pipeline(transaction=True)
            if self._ttl_ms is None:
                pipe.set(key, data)
            else:
                pipe.set(key, data, px=self._ttl_ms)
            pipe.zadd(self._index, {session.session_id.encode(): expires})
            pipe.execute()

    def load(self, session_id: str) -> SessionState:
        """The saved state of ``session_id``.

        Raises:
            SessionNotFoundError: nothing is saved under ``session_id`` (or it expired).
            StorageError: the saved state is corrupt or Redis failed.
        """
        with self._storage(f"load session {session_id!r}"):
            data = self._client.get(self._key(session_id))
        if data is None:
            raise SessionNotFoundError(session_id)
        return SessionState.from_json(data, source=f"Redis key {self._key(session_id)!r}")

    def delete(self, session_id: str) -> bool:
        """Delete the saved state; ``False`` when there was none."""
        with self._storage(f"delete session {session_id!r}"):
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(self._key(session_id))
            pipe.zrem(self._index, session_id.encode())
            deleted, _ = pipe.execute()
        return bool(deleted)

    def list(self) -> builtins.list[str]:
        """The ids of the saved sessions (not expired), sorted."""
        with self._storage("list sessions"):
            pipe = self._client.pipeline(transaction=True)
            pipe.zremrangebyscore(self._index, "-inf", f"({time.time() * 1000}")
            pipe.zrange(self._index, 0, -1)
            _, ids = pipe.execute()
        return sorted(raw.decode() for raw in ids)

    @contextmanager
    def _storage(self, what: str) -> Iterator[None]:
        import redis

        try:
            yield
        except redis.RedisError as exc:
            raise StorageError(f"cannot {what} in Redis: {exc}") from exc


def _require_session(value: object) -> AgentSession:
    if isinstance(value, AgentSession):
        return value
    raise ConfigError(
        f"RedisSessionStore.save takes an AgentSession, got {type(value).__name__}; save the "
        "session that holds the memory (AgentSession(memory=memory))"
    )
