"""Code the many-workers tests run in other processes (free of pytest so workers start fast):
agents on one store resuming sessions and running turns, and a lease holder that hangs."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from compactkit import Agent
from compactkit.errors import ConcurrencyError
from compactkit.memory import InMemoryMemory
from compactkit.runtime import FunctionTool, tool
from compactkit.sessions import FileSessionStore
from compactkit.sql import SQLMemory, SQLSessionStore
from compactkit.testing import FakeOpenAI, tool_call


def open_store(kind: str, where: str, prefix: str) -> tuple[Any, Any]:
    """The store and memory factory of ``kind`` (``file``, ``sqlite``, ``postgresql``,
    ``redis``)."""
    if kind == "file":
        return FileSessionStore(where), lambda _sid: InMemoryMemory()
    if kind == "redis":
        from compactkit.redis import RedisMemory, RedisSessionStore

        return (
            RedisSessionStore(where, key_prefix=prefix),
            lambda sid: RedisMemory(where, sid, key_prefix=prefix),
        )
    return (
        SQLSessionStore(where, table_prefix=prefix),
        lambda sid: SQLMemory(where, sid, table_prefix=prefix),
    )


def agent(kind: str, where: str, prefix: str, **options: Any) -> Agent:
    """An agent whose model always answers "ok", saving to the store of ``kind``."""
    store, factory = open_store(kind, where, prefix)
    fake = FakeOpenAI(default="ok")
    return Agent(
        "gpt-4o", fake.client(), store=store, memory_factory=factory, compaction=False, **options
    )


def run_turns(
    kind: str, where: str, prefix: str, session_id: str, worker: int, turns: int, report: str
) -> None:
    """Resume ``session_id`` and run ``turns`` turns ``w<worker>-t<n>``; write what happened
    (turns done, the names of typed refusals) to ``report``. Anything untyped crashes."""
    done, refused = 0, []
    session = agent(kind, where, prefix, lease_timeout=60.0).resume(session_id)
    for n in range(turns):
        try:
            session.run(f"w{worker}-t{n}")
            done += 1
        except ConcurrencyError as exc:  # typed refusals are counted, never swallowed silently
            refused.append(type(exc).__name__)
    Path(report).write_text(json.dumps({"done": done, "refused": refused}), encoding="utf-8")


def hold_lease(kind: str, where: str, prefix: str, session_id: str, ready: str) -> None:
    """Take the session's lease (ttl 3 s: the test's own acquire must come before it runs out,
    also on a loaded machine), say so in ``ready``, and hang until killed."""
    store, _ = open_store(kind, where, prefix)
    lease = store.acquire(session_id, holder="doomed", ttl=3.0)
    Path(ready).write_text(str(lease.token), encoding="utf-8")
    while True:
        time.sleep(1)


def tool_step_then_hang(
    kind: str,
    where: str,
    prefix: str,
    session_id: str,
    rerun: bool,
    own_memory: bool,
    log: str,
    ready: str,
) -> None:
    """Run a turn whose first step calls a tool (``rerun_on_resume=rerun``; each run of it is
    a line in ``log``); during the next model call, say so in ``ready`` and hang until killed.
    The memory is the store's kind (``own_memory``: SQL, Redis) or in memory, saved by the
    store alone."""
    store, factory = open_store(kind, where, prefix)
    if not own_memory:
        factory = lambda _sid: InMemoryMemory()  # noqa: E731

    def hang(_body: dict[str, Any]) -> Any:
        Path(ready).write_text("in the model call", encoding="utf-8")
        while True:
            time.sleep(1)

    fake = FakeOpenAI([tool_call("act", {"target": "prod"}, call_id="call_a"), hang])
    agent = Agent(
        "gpt-4o",
        fake.client(),
        tools=[logged_tool(rerun, log)],
        store=store,
        memory_factory=factory,
        compaction=False,
        lease_ttl=2.0,  # the resuming process takes the killed run's lease over soon
    )
    agent.new_session(session_id).run("ship it")


def logged_tool(rerun: bool, log: str) -> FunctionTool:
    """The tool ``act``: each run appends its target to ``log``."""

    def act(target: str) -> str:
        """Act on the target."""
        with open(log, "a", encoding="utf-8") as file:
            file.write(f"{target}\n")
        return f"acted on {target}"

    return tool(act, rerun_on_resume=rerun)


def two_turns_killed_in_the_second(
    kind: str, where: str, prefix: str, session_id: str, turn_done: str, go: str, ready: str
) -> None:
    """Run one turn (then say so in ``turn_done``), wait for ``go``, start a second turn and
    hang in its model call (saying so in ``ready``) until killed."""
    store, _ = open_store(kind, where, prefix)

    def hang(_body: dict[str, Any]) -> Any:
        Path(ready).write_text("in the model call", encoding="utf-8")
        while True:
            time.sleep(1)

    fake = FakeOpenAI(["first answer", hang])
    agent = Agent(
        "gpt-4o",
        fake.client(),
        store=store,
        memory_factory=lambda _sid: InMemoryMemory(),
        compaction=False,
        lease_ttl=2.0,
    )
    session = agent.new_session(session_id)
    session.run("turn one")
    Path(turn_done).write_text("done", encoding="utf-8")
    while not Path(go).exists():
        time.sleep(0.02)
    session.run("turn two")
