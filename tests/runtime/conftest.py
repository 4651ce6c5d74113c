"""Shared pieces of the agent-loop tests: no network, and drivers for sync and async runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compactkit.testing import block_network


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    with block_network(allow=["127.0.0.1", "localhost"]):
        yield


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["chat", "responses"])
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)
