"""A real Redis for the tests: ``COMPACTKIT_TEST_REDIS_URL`` when set (CI starts one), else a
``redis-server`` started here on a free loopback port when the binary is installed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

REDIS_URL = os.environ.get("COMPACTKIT_TEST_REDIS_URL", "")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a running Redis (its keys from these tests are removed afterwards)."""
    if REDIS_URL:
        yield REDIS_URL
        return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("install redis-server or set COMPACTKIT_TEST_REDIS_URL to run the Redis tests")
    port = _free_port()
    directory: Path = tmp_path_factory.mktemp("redis")
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=directory,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    try:
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield url
    finally:
        client.close()
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def key_prefix(redis_client: redis.Redis) -> Iterator[str]:
    """A key prefix of this test's own; its keys are deleted afterwards."""
    prefix = f"cktest:{uuid.uuid4().hex[:10]}"
    yield prefix
    keys = list(redis_client.scan_iter(match=f"{prefix}:*", count=1000))
    if keys:
        redis_client.delete(*keys)
