"""A write the ``CompactkitSession`` refuses (a repeated call id, a ``FormatError``) keeps
nothing, in the memory or in the session's reader: a caller that catches the error and writes
the items corrected goes on as if the refused write never came. With the real ``Runner`` and
the SDK's ``ScriptedModel`` before and after."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from compactkit import InMemoryMemory
from compactkit.errors import FormatError
from compactkit.integrations import CompactkitSession

MODEL = "gpt-4"


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield


@function_tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"contents of {path}"


def agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="fixer", instructions="Fix it.", model=model, tools=[read_file])


def test_a_caller_that_catches_a_refused_write_goes_on_with_the_items_corrected() -> None:
    async def scenario() -> None:
        memory = InMemoryMemory()
        session = CompactkitSession(memory, model=MODEL, session_id="refused")
        model = ScriptedModel([[function_call("read_file", {"path": "a.py"}, call_id="call_0")]])
        model.extend([[assistant_message("read a.py")]])
        await Runner.run(agent(model), "Read a.py.", session=session)
        stored = memory.snapshot()
        # Between runs the caller stores a round trip it did itself (the SDK's session API),
        # with two calls sharing one id: refused, nothing stored.
        with pytest.raises(FormatError, match="share the call_id 'call_7'"):
            await session.add_items([call("call_7", "b.py"), call("call_7", "c.py")])
        assert memory.snapshot().items == stored.items
        # Corrected: read as if the refused write never came (before, the session's reader
        # kept the first call_7 open and refused this one as a second call sharing its id).
        await session.add_items([call("call_7", "b.py"), output("call_7", "b.py")])
        model.extend([[assistant_message("read b.py")]])
        result = await Runner.run(agent(model), "Go on.", session=session)
        assert result.final_output == "read b.py"
        seen = model.calls[-1].input  # what the model got: the whole history, once
        calls = [item["call_id"] for item in seen if item.get("type") == "function_call"]
        outputs = [item["call_id"] for item in seen if item.get("type") == "function_call_output"]
        assert calls == outputs == ["call_0", "call_7"]

    asyncio.run(scenario())


def call(call_id: str, path: str) -> dict[str, Any]:
    arguments = f'{{"path": "{path}"}}'
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": "read_file",
        "arguments": arguments,
    }


def output(call_id: str, path: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": f"contents of {path}"}


def test_a_write_retried_after_another_worker_held_the_session_is_stored() -> None:
    # A real SQLite SQLMemory written under lease_writes: the first write of a turn meets
    # another worker's lease (SessionBusyError: it writes nothing); the caller retries the same
    # items once the lease is free. Before, the session's reader kept the call read and
    # refused the retry as a second call sharing its id, on every retry (review21, F2).
    from compactkit.errors import SessionBusyError
    from compactkit.sql import SQLMemory

    async def scenario(url: str) -> None:
        memory, other = SQLMemory(url, "s-1"), SQLMemory(url, "s-1")
        session = CompactkitSession(memory, model=MODEL, session_id="s-1")
        await session.add_items([{"role": "user", "content": "Read b.py."}])
        with other.lease_writes(holder="worker-b", timeout=0.0):
            other.add_user_input("worker b's turn")  # (takes the lease)
            with (
                memory.lease_writes(holder="worker-a", timeout=0.0),
                pytest.raises(SessionBusyError),
            ):
                await session.add_items([call("call_7", "b.py")])
        with memory.lease_writes(holder="worker-a", timeout=5.0):
            await session.add_items([call("call_7", "b.py")])
            await session.add_items([output("call_7", "b.py")])
        stored = await session.get_items()
        assert [item.get("call_id") for item in stored if item.get("call_id")] == [
            "call_7",
            "call_7",
        ]

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(scenario(f"sqlite:///{folder}/agents.db"))
