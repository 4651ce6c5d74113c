"""Shared pieces of the agent-loop tests: no network, and drivers for sync and async runs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from compactkit import Agent, RetryPolicy, RunnableSession, RunResult
from compactkit.testing import FakeOpenAI, block_network


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    with block_network(allow=["127.0.0.1", "localhost"]):
        yield


NO_WAIT = RetryPolicy(attempts=3, initial_wait=0.0, jitter=0.0)


def make_agent(fake: FakeOpenAI, mode: str, **options: Any) -> Agent:
    """An agent on ``fake``: a sync client for ``mode="sync"``, an async one otherwise."""
    client = fake.client() if mode == "sync" else fake.async_client()
    options.setdefault("retry", NO_WAIT)
    return Agent(options.pop("model", "gpt-4o"), client, **options)


def run(session: RunnableSession, mode: str, input: Any = None, **options: Any) -> RunResult:
    """``session.run`` or ``session.arun``, by ``mode``."""
    if mode == "sync":
        return session.run(input, **options)
    return asyncio.run(session.arun(input, **options))


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["chat", "responses"])
def api(request: pytest.FixtureRequest) -> str:
    return str(request.param)
