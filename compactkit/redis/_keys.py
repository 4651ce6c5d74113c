"""Key names, client set-up and item encoding shared by ``RedisMemory`` and ``RedisSessionStore``.

Every key of a session carries the session id, percent-encoded, inside a hash tag
(``<prefix>:{<id>}:<part>``): ids that differ by a separator, a suffix or case never share a key,
and on Redis Cluster all keys of one session live in one slot, so MULTI/EXEC spans them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from compactkit.errors import ConfigError
from compactkit.items import ITEMS_ADAPTER, Item

_PREFIX = re.compile(r"[A-Za-z0-9_.-]+(:[A-Za-z0-9_.-]+)*")


def require_prefix(prefix: object) -> str:
    """``prefix`` when it is a usable key prefix; else ``ConfigError`` saying what is."""
    if not isinstance(prefix, str) or not 0 < len(prefix) <= 64 or not _PREFIX.fullmatch(prefix):
        raise ConfigError(
            f"key_prefix must be 1-64 characters of letters, digits, '_', '.', '-', with ':' "
            f"between parts (no braces, spaces or trailing ':'), got {prefix!r}; for example "
            "key_prefix='myapp:agents'"
        )
    return prefix


def require_ttl(ttl: object) -> int | None:
    """``ttl`` (seconds or a ``timedelta``) in milliseconds, or ``None`` for no expiry."""
    if ttl is None:
        return None
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ConfigError(
            f"ttl must be a positive number of seconds or a timedelta (None: keep forever), "
            f"got {ttl!r}"
        )
    return max(1, round(seconds * 1000))


def session_tag(prefix: str, session_id: object) -> str:
    """``<prefix>:{<encoded id>}``: the start of every key of ``session_id``."""
    if not isinstance(session_id, str) or not session_id:
        raise ConfigError(f"a session id must be a non-empty string, got {session_id!r}")
    try:
        encoded = quote(session_id, safe="")
    except UnicodeEncodeError:
        raise ConfigError(
            f"session id {session_id!r:.60} is not valid Unicode (a lone surrogate); clean it"
        ) from None
    return f"{prefix}:{{{encoded}}}"


def connect(client_or_url: Any, owner: str) -> Any:
    """A ``redis.Redis`` from a URL, or the client given (``ConfigError`` for anything else)."""
    try:
        import redis
    except ImportError as exc:  # pragma: no cover - the extra is installed in the tests
        raise ConfigError(
            f"{owner} needs the redis client: pip install 'compactkit[redis]'"
        ) from exc
    if isinstance(client_or_url, str):
        try:
            return redis.Redis.from_url(client_or_url)
        except ValueError as exc:
            raise ConfigError(f"{owner}: not a Redis URL {client_or_url!r}: {exc}") from exc
    if isinstance(client_or_url, redis.Redis):
        if client_or_url.get_encoder().decode_responses:
            raise ConfigError(
                f"{owner} needs a client made with decode_responses=False (the default): it "
                "stores items as JSON bytes"
            )
        return client_or_url
    raise ConfigError(
        f"{owner} takes a redis URL (redis://host:6379/0) or a redis.Redis client, got "
        f"{type(client_or_url).__name__}"
    )


def connect_async(client_or_url: Any, owner: str) -> Any:
    """A ``redis.asyncio.Redis`` from a URL, or the asyncio client given."""
    import redis.asyncio

    if isinstance(client_or_url, str):
        try:
            return redis.asyncio.Redis.from_url(client_or_url)
        except ValueError as exc:
            raise ConfigError(f"{owner}: not a Redis URL {client_or_url!r}: {exc}") from exc
    if isinstance(client_or_url, redis.asyncio.Redis):
        if client_or_url.get_encoder().decode_responses:  # type: ignore[no-untyped-call]
            raise ConfigError(
                f"{owner} needs a client made with decode_responses=False (the default): it "
                "stores JSON bytes"
            )
        return client_or_url
    raise ConfigError(
        f"{owner}: async_client takes a redis.asyncio.Redis client or a URL, got "
        f"{type(client_or_url).__name__}"
    )


def dump_item(item: Item) -> bytes:
    """One item as JSON (the shared serialiser's element form)."""
    return ITEMS_ADAPTER.dump_json([item])[1:-1]


def load_items(raw: Sequence[bytes]) -> list[Item]:
    """Items from their JSON forms, validated in one pass."""
    if not raw:
        return []
    return ITEMS_ADAPTER.validate_json(b"[" + b",".join(raw) + b"]")
