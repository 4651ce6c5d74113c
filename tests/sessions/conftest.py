"""Fixtures of the session-store tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis_support import redis_url  # noqa: F401
from sql_support import POSTGRES_URL, needs_postgres

STORES = ["file", "sqlite", pytest.param("postgresql", marks=needs_postgres), "redis"]


@pytest.fixture(params=STORES)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """(kind, location, table or key prefix) of a fresh store of each kind (a test module's
    own ``where`` takes precedence)."""
    prefix = f"w{uuid.uuid4().hex[:8]}_"
    if request.param == "file":
        yield "file", str(tmp_path / "sessions"), prefix
    elif request.param == "sqlite":
        yield "sqlite", f"sqlite:///{tmp_path}/sessions.db", prefix
    elif request.param == "redis":
        url = request.getfixturevalue("redis_url")
        yield "redis", url, prefix
        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        client.close()
    else:
        assert POSTGRES_URL
        yield "postgresql", POSTGRES_URL, prefix
