"""Drivers shared by the agent-loop tests (a module of its own: ``from conftest import`` would
pick whichever conftest another test folder loaded first)."""

from __future__ import annotations

import asyncio
from typing import Any

from compactkit import Agent, RunResult
from compactkit.compressors import RetryPolicy
from compactkit.runtime import RunnableSession
from compactkit.testing import FakeOpenAI

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
