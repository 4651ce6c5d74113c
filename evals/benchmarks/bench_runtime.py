"""Benchmark: the agent loop's own cost per step, beside LangChain and the OpenAI Agents SDK.

One scripted workload for three loops: turns of ``STEPS_PER_TURN`` model calls (a user message,
then tool calls whose outputs are ~100 tokens each, then an answer). Every loop gets a scripted
model that answers instantly and a trivial tool; the time spent inside the model and the tool
is measured and subtracted, so what is reported is each framework's own cost per step:
governance, conversions, state and session handling.

* compactkit: ``Agent`` + ``RunnableSession.run`` with compaction on (the model's policy and the
  ladder) on an ``openai.OpenAI`` client whose ``chat.completions.create`` is the scripted
  model (the agent builds the whole request every step; the SDK's own request handling is
  model time, and is skipped so that the run stays short).
* LangChain: ``create_agent`` + ``SummarizationMiddleware`` (trigger at the same token count as
  compactkit's policy, keeping 20 messages) + an ``InMemorySaver`` checkpointer, with a
  scripted ``BaseChatModel`` (its summarizer is scripted too, and counted as model time).
* OpenAI Agents SDK: ``Runner.run_sync`` with an in-memory ``SQLiteSession`` and a scripted
  ``Model`` (tracing off). It has no compaction for a chat session: its history only grows.

Like with like (issue 35): compactkit runs three times, once per persistence: no store (the
loop alone), an ``InMemorySessionStore`` (the peer of LangChain's ``InMemorySaver``) and a
``SQLSessionStore`` on an SQLite file (the peer of the Agents SDK's ``SQLiteSession``; compactkit's
is durable, the peer's in memory); each peer's ratio is against the compactkit loop that
persists as it does, and the table says which. compactkit's ``FileSessionStore`` (and, with
``COMPACTKIT_TEST_REDIS_URL`` set, its ``RedisSessionStore``; the server's CPU is not counted)
run too. Each store is checked against issue 35's target: own cost per step at most twice the
no-store loop's, plus, for a durable store, the one plain write-and-commit per save a plain
insert pays — the floor — measured where the store pays it: in the agent loop. The floor is the
no-store loop saving by a plain write per save (a ``sqlite3`` INSERT + COMMIT on a WAL file, an
append + ``fsync``, a Redis ``RPUSH``; SQLite both WAL and the driver's default
synchronous=FULL, so every commit fsyncs in the floor as in the store) minus the no-store loop,
both measured in the same round: the limit is 2 x the no-store step + that floor. And each
store's 2,000-step session flat (last/first half <= 1.3, or within the no-store loop's own
drift).

Why the floor is measured in the loop (the rule since session 14; until then it was the
write timed alone, in a tight loop, times the saves per step — still printed beside, labelled):
a write that blocks (``fsync``, a socket) makes the code that runs after it dearer. The process
is switched out while it waits and comes back with cold caches (on this 2-core virtual machine
the virtual CPU halts). Measured on session 14's machine (a fixed 460 µs of Python work per
iteration, alone): after a write + ``fsync`` whose own CPU is ~100 µs, that work cost 1,100-1,250 µs;
after a 0.3 ms sleep, 500-1,000 µs. In the agent loop at 10,000 items (load 2-5): no store 187
µs/step, the no-store loop saving by a plain append + ``fsync`` 569 µs (the tight-loop floor
said ~100-130), ``FileSessionStore`` 647 µs; with ``fsync`` made a no-op, no store 207 and
``FileSessionStore`` 284: the store's own code is ~80 µs a step, the rest is what any durable
write costs the loop, which the tight-loop floor leaves out and which moves with the machine's
load (+130 µs a step at load 2, +380 at load 5): against it the verdict followed the load.

The store target is checked over ``--rounds`` rounds (default 3) at the largest size: each round
builds the no-store loop, every store and, for each durable store, the no-store loop saving by its
plain write (the floor in the loop), and measures them interleaved turn by turn, in an order
rotated by round (each loop runs a turn to have its caches back, then the measured one), so that
all of a round's loops see the same stretch of the machine's load; each store's tight-loop floor
is measured at the round's start and end (a disk busy with other work moves fsync's CPU
cost). A step saves once when its tools are ``rerun_on_resume`` (the bench's read tool is; see
``docs/agent.md``), plus the user input once per turn: 1.1 saves per step here.

Measured: cost per step with 100, 1,000 and 10,000 items already in the session (a model with
a 1M-token window, so no loop compacts), and a 2,000-step session end to end on gpt-4o's budget
(compactkit compacts several times), with the flatness of compactkit's cost (mean per step over
the last 1,000 steps / the first 1,000; the no-store loop and each store run five times,
interleaved run by run, each with compactkit's process-wide caches cold, as in a new process;
the median run is shown): each store's <= 1.3, or within the no-store loop's own drift — at
most the highest last/first of the no-store runs made beside it (a miss is printed) — with
what the store adds to a step, first half and last half, against the no-store run beside it;
the no-store loop's own over 1.3 is printed as a note, and fails nothing by itself. Times
are process CPU time (all threads; other processes on a busy machine do not count). Ratios are peer / compactkit (higher: compactkit
is cheaper).

Run: ``python evals/benchmarks/bench_runtime.py`` (``--tiny`` for CI's smoke run, ``--json``;
``--store-target`` for the store target's rounds alone).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

from compactkit import Agent, FunctionCall, Message
from compactkit.runtime import CompactionEvent, Event, RunnableSession, tool

clock = time.process_time
STEPS_PER_TURN = 10
BIG_MODEL = "gpt-4.1"  # a 1M-token window: no compaction while the history is pre-filled
MODEL = "gpt-4o"  # 128k: a 2,000-step session compacts several times
OUTPUT = "".join(f"line {n}: value_{n} = compute({n}, retries=3)\n" for n in range(10))  # ~100 tok


class Timer:
    """Accumulates time spent in code that is not the framework's (the model, the tool)."""

    def __init__(self) -> None:
        self.excluded = 0.0

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = clock()
            try:
                return function(*args, **kwargs)
            finally:
                self.excluded += clock() - started

        return timed


def read(path: str) -> str:
    """Read a file of the project."""
    return f"# {path}\n{OUTPUT}"


def prefill(n: int) -> list[tuple[str, str]]:
    """``n`` items of history as (kind, text): a user turn, then call/output pairs, answers."""
    out: list[tuple[str, str]] = [("user", "start")]
    k = 0
    while len(out) < n:
        if k % 10 == 9:
            out.append(("assistant", f"answer {k}"))
        else:
            out += [("call", f"p{k}"), ("output", f"ok {k}")]
        k += 1
    return out[:n] if out[min(n, len(out)) - 1][0] != "call" else out[: n - 1]


# -- compactkit ------------------------------------------------------------------------------


class Compactkit:
    name = "compactkit"
    persistence = "no store"

    def _store(self) -> Any:
        return None

    def __init__(self, model: str, history: list[tuple[str, str]]) -> None:
        import openai
        from openai.types.chat import ChatCompletion

        self.timer = Timer()
        client = openai.OpenAI(api_key="sk-test", base_url="http://unused.test/v1", max_retries=0)
        # The scripted model answers in place of the SDK's request: the SDK's own work (it
        # re-validates every message of the request, O(prompt) and slow) is model time here,
        # and would only make the run long. The agent still builds the full request.
        completion = ChatCompletion.model_validate

        def create(**request: Any) -> ChatCompletion:
            assert request["messages"] and request["tools"]
            return completion(self._reply())

        client.chat.completions.create = self.timer.wrap(create)  # type: ignore[method-assign]
        self.compacted = 0
        self.compaction_turns: list[int] = []  # the turns in which a compaction was applied
        store = self._store()
        self.saves = 0  # the store's saves (how many commits a step pays)
        if store is not None:
            save = store.save

            def counted(session: Any) -> None:
                self.saves += 1
                save(session)

            store.save = counted
            if hasattr(store, "save_and_release"):  # a run's last save, releasing its lease
                save_and_release = store.save_and_release

                def counted_last(session: Any) -> None:
                    self.saves += 1
                    save_and_release(session)

                store.save_and_release = counted_last
        self.agent = Agent(
            model,
            client,
            # A read is safe to repeat (as the docs mark reads): its output rides the step's
            # next save, so a step costs one save; a tool that is not pays two (see main()).
            tools=[tool(self.timer.wrap(read), rerun_on_resume=True)],
            max_steps=100,
            on_event=self._count,
            store=store,
        )
        self.session: RunnableSession = self.agent.new_session()
        _fill_memory(self.session, history)
        self.step = 0

    def _reply(self) -> dict[str, Any]:
        self.step += 1
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if self.step % STEPS_PER_TURN == 0:
            message["content"] = f"done {self.step}"
        else:
            arguments = json.dumps({"path": f"src/m{self.step}.py"})
            message["tool_calls"] = [
                {
                    "id": f"c{self.step}",
                    "type": "function",
                    "function": {"name": "read", "arguments": arguments},
                }
            ]
        return {
            "id": f"chatcmpl-{self.step}",
            "object": "chat.completion",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }

    def _count(self, event: Event) -> None:
        if isinstance(event, CompactionEvent) and event.applied:
            self.compacted += 1

    def turn(self, n: int) -> None:
        before = self.compacted
        self.session.run(f"turn {n}: read the next modules")
        if self.compacted != before:
            self.compaction_turns.append(n)


class CompactkitInMemoryStore(Compactkit):
    """compactkit saving every step to an ``InMemorySessionStore`` (LangChain's peer here keeps
    an ``InMemorySaver`` checkpoint)."""

    name = "compactkit+InMemorySessionStore"
    persistence = "InMemorySessionStore"

    def _store(self) -> Any:
        from compactkit import InMemorySessionStore

        return InMemorySessionStore()


class CompactkitSQLStore(Compactkit):
    """compactkit saving every step to a ``SQLSessionStore`` on an SQLite file (the Agents
    SDK's peer here keeps an in-memory ``SQLiteSession``: compactkit's store is the durable
    one, which costs it a commit to a file per save)."""

    name = "compactkit+SQLSessionStore"
    persistence = "SQLSessionStore, SQLite file"

    def _store(self) -> Any:
        from compactkit import SQLSessionStore

        folder = scratch("bench-runtime-")
        return SQLSessionStore(f"sqlite:///{folder}/sessions.db")


class CompactkitFileStore(Compactkit):
    """compactkit saving every step to a ``FileSessionStore`` (a JSON base and an fsynced
    journal line per save; no peer here persists to files)."""

    name = "compactkit+FileSessionStore"
    persistence = "FileSessionStore"

    def _store(self) -> Any:
        from compactkit.sessions import FileSessionStore

        return FileSessionStore(scratch("bench-runtime-files-"))


class CompactkitRedisStore(Compactkit):
    """compactkit saving every step to a ``RedisSessionStore`` (run only with
    ``COMPACTKIT_TEST_REDIS_URL``; the server's own CPU time is not in the process's)."""

    name = "compactkit+RedisSessionStore"
    persistence = "RedisSessionStore"

    def _store(self) -> Any:
        import os
        import uuid

        from compactkit.redis import RedisSessionStore

        prefix = f"bench-runtime:{uuid.uuid4().hex[:10]}"
        REDIS_PREFIXES.append(prefix)
        return RedisSessionStore(os.environ["COMPACTKIT_TEST_REDIS_URL"], key_prefix=prefix)


class PlainWrites:
    """A ``SessionStore`` that persists nothing of the session: each save is one plain
    durable write of a ``size``-byte record (``write``), the floor a durable store's save pays.
    Run in the agent loop, it also pays what a blocking write costs the code around it (the
    process waits in ``fsync`` or on a socket, and its caches are cold when it resumes), which
    a tight loop of writes does not show."""

    def __init__(self, write: Callable[[bytes], None], size: int = 600) -> None:
        self._write = write
        self._record = b"x" * size

    def save(self, session: Any) -> None:
        self._write(self._record)

    def load(self, session_id: str) -> Any:
        raise NotImplementedError("the floor keeps nothing to load")

    def delete(self, session_id: str) -> bool:
        return False

    def list(self) -> list[str]:
        return []


class SQLiteFloor(Compactkit):
    """The agent loop whose every save is a plain ``sqlite3`` INSERT + COMMIT (WAL, the
    driver's default synchronous=FULL, as ``SQLSessionStore`` opens its file)."""

    name = "floor: plain sqlite3 insert"

    def _store(self) -> Any:
        import sqlite3

        folder = scratch("bench-runtime-floor-")
        conn = sqlite3.connect(f"{folder}/floor.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")

        def write(record: bytes) -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t (body) VALUES (?)", (record,))
            conn.execute("COMMIT")

        return PlainWrites(write)


class FsyncFloor(Compactkit):
    """The agent loop whose every save is a plain append + ``fsync`` of one line."""

    name = "floor: plain append + fsync"

    def _store(self) -> Any:
        folder = scratch("bench-runtime-floor-")
        fd = os.open(f"{folder}/floor.jnl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

        def write(record: bytes) -> None:
            os.write(fd, record + b"\n")
            os.fsync(fd)

        return PlainWrites(write)


class RedisFloor(Compactkit):
    """The agent loop whose every save is a plain Redis ``RPUSH``."""

    name = "floor: plain Redis RPUSH"

    def _store(self) -> Any:
        import uuid

        import redis

        client = redis.Redis.from_url(REDIS_URL)
        prefix = f"bench-runtime:{uuid.uuid4().hex[:10]}"
        REDIS_PREFIXES.append(prefix)
        return PlainWrites(lambda record: client.rpush(f"{prefix}:floor", record))


REDIS_PREFIXES: list[str] = []
SCRATCH: list[str] = []
REDIS_URL = os.environ.get("COMPACTKIT_TEST_REDIS_URL", "")


def scratch(prefix: str) -> str:
    """A new temporary folder for a loop's database or journal, removed by
    ``remove_scratch`` when the run ends (a run makes hundreds)."""
    folder = tempfile.mkdtemp(prefix=prefix)
    SCRATCH.append(folder)
    return folder


def remove_scratch() -> None:
    """Delete the folders ``scratch`` made."""
    while SCRATCH:
        shutil.rmtree(SCRATCH.pop(), ignore_errors=True)


def drop_redis_keys() -> None:
    """Delete the keys the Redis loops wrote."""
    import os

    import redis

    client = redis.Redis.from_url(os.environ["COMPACTKIT_TEST_REDIS_URL"])
    for prefix in REDIS_PREFIXES:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    client.close()


def sqlite_commit_floor(rows: int = 400, size: int = 600) -> float:
    """CPU seconds of one plain ``sqlite3`` INSERT + COMMIT of a ``size``-byte row into a file
    database, as ``SQLSessionStore`` opens it (WAL, the driver's default synchronous=FULL):
    the floor a durable save pays, whatever it writes. Median of ``rows`` commits."""
    import sqlite3

    folder = scratch("bench-runtime-floor-")
    conn = sqlite3.connect(f"{folder}/floor.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    body = "x" * size
    costs = []
    for _ in range(rows):
        started = clock()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t (body) VALUES (?)", (body,))
        conn.execute("COMMIT")
        costs.append(clock() - started)
    conn.close()
    return statistics.median(costs)


def fsync_append_floor(rows: int = 400, size: int = 600) -> float:
    """CPU seconds of one plain append of a ``size``-byte line to a file + ``fsync``: the floor
    of a durable file save. Median of ``rows``."""
    folder = scratch("bench-runtime-floor-")
    fd = os.open(f"{folder}/floor.jnl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    line = b"x" * (size - 1) + b"\n"
    costs = []
    for _ in range(rows):
        started = clock()
        os.write(fd, line)
        os.fsync(fd)
        costs.append(clock() - started)
    os.close(fd)
    return statistics.median(costs)


def redis_call_floor(rows: int = 400, size: int = 600) -> float:
    """CPU seconds (this process's) of one plain ``RPUSH`` of a ``size``-byte value: the floor
    of a save that is one round trip to Redis. Median of ``rows``."""
    import uuid

    import redis

    client = redis.Redis.from_url(REDIS_URL)
    key = f"bench-runtime:{uuid.uuid4().hex[:10]}:floor"
    value = b"x" * size
    costs = []
    for _ in range(rows):
        started = clock()
        client.rpush(key, value)
        costs.append(clock() - started)
    client.delete(key)
    client.close()
    return statistics.median(costs)


def _fill_memory(session: RunnableSession, history: list[tuple[str, str]]) -> None:
    memory = session.memory
    for kind, value in history:
        if kind == "user":
            memory.add_user_input(value)
        elif kind == "assistant":
            memory.add_output_items([Message(role="assistant", content=value)])
        elif kind == "call":
            memory.add_output_items([FunctionCall(call_id=value, name="read", arguments="{}")])
        else:
            memory.add_tool_output(value.replace("ok ", "p"), value)


# -- LangChain -------------------------------------------------------------------------------


class LangChain:
    name = "langchain"

    def __init__(self, model: str, history: list[tuple[str, str]]) -> None:
        from langchain.agents import create_agent
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_core.language_models import BaseChatModel
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.tools import tool as lc_tool
        from langgraph.checkpoint.memory import InMemorySaver

        from compactkit.budget import budget_for

        self.timer = timer = Timer()
        self.state = state = {"step": 0, "summaries": 0}

        class Scripted(BaseChatModel):
            summarizer: bool = False

            @property
            def _llm_type(self) -> str:
                return "scripted"

            def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
                return self

            def _generate(
                self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
            ) -> ChatResult:
                started = clock()
                if self.summarizer:
                    state["summaries"] += 1
                    message = AIMessage("## Summary\n- read many modules; all values computed")
                else:
                    state["step"] += 1
                    step = state["step"]
                    if step % STEPS_PER_TURN == 0:
                        message = AIMessage(f"done {step}")
                    else:
                        message = AIMessage(
                            "",
                            tool_calls=[
                                {
                                    "name": "read",
                                    "args": {"path": f"src/m{step}.py"},
                                    "id": f"c{step}",
                                    "type": "tool_call",
                                }
                            ],
                        )
                result = ChatResult(generations=[ChatGeneration(message=message)])
                timer.excluded += clock() - started
                return result

        @lc_tool
        def read_tool(path: str) -> str:
            """Read a file of the project."""
            return timer.wrap(read)(path)

        read_tool.name = "read"
        trigger = budget_for(model).trigger_tokens
        self.agent = create_agent(
            Scripted(),
            tools=[read_tool],
            middleware=[
                SummarizationMiddleware(
                    Scripted(summarizer=True), trigger=("tokens", trigger), keep=("messages", 20)
                )
            ],
            checkpointer=InMemorySaver(),
        )
        self.config: dict[str, Any] = {
            "configurable": {"thread_id": "bench"},
            "recursion_limit": 1000,
        }
        messages: list[Any] = []
        for kind, value in history:
            if kind == "user":
                messages.append(HumanMessage(value))
            elif kind == "assistant":
                messages.append(AIMessage(value))
            elif kind == "call":
                messages.append(
                    AIMessage(
                        "",
                        tool_calls=[{"name": "read", "args": {}, "id": value, "type": "tool_call"}],
                    )
                )
            else:
                messages.append(ToolMessage(value, tool_call_id=value.replace("ok ", "p")))
        self._human = HumanMessage
        if messages:
            self.agent.update_state(self.config, {"messages": messages})

    def turn(self, n: int) -> None:
        self.agent.invoke(
            {"messages": [self._human(f"turn {n}: read the next modules")]}, self.config
        )


# -- OpenAI Agents SDK -------------------------------------------------------------------------


class AgentsSDK:
    name = "openai-agents"

    def __init__(self, model: str, history: list[tuple[str, str]]) -> None:
        from agents import Agent as SDKAgent
        from agents import Runner, SQLiteSession, function_tool, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.testing import assistant_message, function_call
        from agents.usage import Usage

        set_tracing_disabled(True)
        self.timer = timer = Timer()
        state = {"step": 0}

        class Scripted(Model):
            async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
                started = clock()
                state["step"] += 1
                step = state["step"]
                if step % STEPS_PER_TURN == 0:
                    output = [assistant_message(f"done {step}", item_id=f"m{step}")]
                else:
                    output = [
                        function_call("read", {"path": f"src/m{step}.py"}, call_id=f"c{step}")
                    ]
                response = ModelResponse(output=output, usage=Usage(), response_id=None)
                timer.excluded += clock() - started
                return response

            def stream_response(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError

        @function_tool(name_override="read")
        def read_tool(path: str) -> str:
            """Read a file of the project."""
            return timer.wrap(read)(path)

        self.runner = Runner
        self.agent = SDKAgent(name="bench", model=Scripted(), tools=[read_tool])
        self.session = SQLiteSession("bench")
        items: list[Any] = []
        for kind, value in history:
            if kind in ("user", "assistant"):
                items.append({"role": kind, "content": value})
            elif kind == "call":
                items.append(
                    {"type": "function_call", "call_id": value, "name": "read", "arguments": "{}"}
                )
            else:
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": value.replace("ok ", "p"),
                        "output": value,
                    }
                )
        if items:
            asyncio.run(self.session.add_items(items))

    def turn(self, n: int) -> None:
        self.runner.run_sync(
            self.agent,
            f"turn {n}: read the next modules",
            session=self.session,
            max_turns=STEPS_PER_TURN + 1,
        )


STORES: tuple[type[Compactkit], ...] = (
    CompactkitInMemoryStore,
    CompactkitFileStore,
    CompactkitSQLStore,
    *((CompactkitRedisStore,) if REDIS_URL else ()),
)
DURABLE = {CompactkitFileStore.name, CompactkitSQLStore.name, CompactkitRedisStore.name}
LOOPS = (Compactkit, *STORES, LangChain, AgentsSDK)
# Each peer against the compactkit loop that persists as it does (like with like).
PEERS = {
    "langchain": ("InMemorySaver", CompactkitInMemoryStore.name),
    "openai-agents": ("SQLiteSession, in memory", CompactkitSQLStore.name),
}


def own_cost(loop: Any, turns: int, start: int = 0) -> list[float]:
    """The loop's own CPU seconds per step, for each of ``turns`` turns."""
    out = []
    for n in range(start, start + turns):
        before, excluded = clock(), loop.timer.excluded
        loop.turn(n)
        own = (clock() - before) - (loop.timer.excluded - excluded)
        out.append(own / STEPS_PER_TURN)
    return out


def cold_caches() -> None:
    """Empty compactkit's process-wide caches of content, as in a new process: the token counts
    of texts, the digest's entry counts and merge keys, tool outputs' error lines. Every run of
    the scripted session holds the same texts; without this, a second run would find them all
    counted by the first."""
    from compactkit.budget._encodings import text_counts
    from compactkit.compressors import _entries, _facts
    from compactkit.compressors.digest import _sizer

    for encoding in ("o200k_base", "cl100k_base"):
        text_counts(encoding).clear()
    _sizer._BULLET_COUNTS.clear()
    _entries.entry_key.cache_clear()
    _facts._error_lines.cache_clear()


def session_entry(kind: type, half: int, session_steps: int) -> dict[str, Any]:
    """One ``2 * half``-turn session of ``kind`` from an empty history, compactkit's caches
    cold: its own cost and flatness (last half's mean step over the first half's)."""
    cold_caches()
    gc.collect()  # the garbage of the previous loop is not charged to this one
    loop = kind(MODEL, [])
    full_gcs: list[float] = []  # CPU ms of each full collection during the session
    started = [0.0]

    def watch(phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                started[0] = clock()
            else:
                full_gcs.append(round((clock() - started[0]) * 1e3, 1))

    gc.callbacks.append(watch)
    try:
        costs = own_cost(loop, half)
        in_first = len(full_gcs)
        costs += own_cost(loop, half, half)
    finally:
        gc.callbacks.remove(watch)
    first, last = statistics.mean(costs[:half]), statistics.mean(costs[half:])
    entry: dict[str, Any] = {
        "steps": session_steps,
        "total_s": sum(costs) * STEPS_PER_TURN,
        "per_step_us": statistics.mean(costs) * 1e6,
        "flatness": last / first,
        # the typical step (compaction spikes aside), last half over first half
        "flatness_median": statistics.median(costs[half:]) / statistics.median(costs[:half]),
        "costs": costs,
    }
    # Full garbage collections (CPU ms each) by half: one in the last half alone moves the
    # ratio by about a tenth; where they fall depends on the whole process's heap.
    entry["full_gc_ms"] = {"first_half": full_gcs[:in_first], "last_half": full_gcs[in_first:]}
    if isinstance(loop, Compactkit):
        entry["compactions"] = loop.compacted
        # Where the session's cost goes: the turns that compacted (ms per turn), by half.
        turn_ms = {n: round(costs[n] * STEPS_PER_TURN * 1e3, 1) for n in loop.compaction_turns}
        entry["compaction_turn_ms"] = {
            "first_half": [ms for n, ms in turn_ms.items() if n < half],
            "last_half": [ms for n, ms in turn_ms.items() if n >= half],
        }
        entry["other_turn_ms_median"] = [
            round(
                statistics.median(c for n, c in enumerate(part, start) if n not in turn_ms)
                * STEPS_PER_TURN
                * 1e3,
                2,
            )
            for start, part in ((0, costs[:half]), (half, costs[half:]))
        ]
    if isinstance(loop, LangChain):
        entry["compactions"] = loop.state["summaries"]
    return entry


def session_runs(
    kinds: tuple[type[Compactkit], ...], runs: int, half: int, session_steps: int
) -> dict[str, dict[str, Any]]:
    """``runs`` sessions of each of ``kinds`` (the no-store loop first), interleaved run by run:
    for each kind, the run of median flatness with every run's flatness beside it, and for each
    store its own cost over the no-store loop's (per step, the runs' medians, paired by run:
    each store run against the no-store run made just before it) in each half."""
    made: dict[str, list[dict[str, Any]]] = {kind.name: [] for kind in kinds}
    for _ in range(runs):
        for kind in kinds:
            made[kind.name].append(session_entry(kind, half, session_steps))
    base_runs = made[kinds[0].name]
    out: dict[str, dict[str, Any]] = {}
    for kind in kinds:
        entries = made[kind.name]
        ranked = sorted(entries, key=lambda entry: entry["flatness"])
        entry = ranked[len(ranked) // 2]
        entry["flatness_runs"] = [round(e["flatness"], 3) for e in ranked]
        entry["last_half_full_gcs_runs"] = [len(e["full_gc_ms"]["last_half"]) for e in ranked]
        if runs > 1:
            # Every run does the same work turn by turn: each turn's fastest over the runs is
            # its cost without a busy machine's noise or a collection that fell there in one
            # run (a second view, beside the median run the target is checked on).
            fastest = [min(turn) for turn in zip(*(e["costs"] for e in entries), strict=True)]
            entry["flatness_fastest_turns"] = statistics.mean(fastest[half:]) / statistics.mean(
                fastest[:half]
            )
        if kind is not kinds[0]:
            # What the store adds to each step (µs), in each half, run by run against the
            # no-store run beside it: a store that does not drift adds as much late as early.
            added = [
                [
                    (statistics.mean(e["costs"][part]) - statistics.mean(b["costs"][part])) * 1e6
                    for part in (slice(0, half), slice(half, None))
                ]
                for e, b in zip(entries, base_runs, strict=True)
            ]
            entry["added_us"] = [statistics.median(column) for column in zip(*added, strict=True)]
        out[kind.name] = entry
    for kind in kinds:
        for e in made[kind.name]:
            e.pop("costs", None)
        print(f"session, {kind.name}: {out[kind.name]}", file=sys.stderr)
    return out


def drift_limit(base: dict[str, Any]) -> float:
    """How far a store's last/first half may go: 1.3, or the no-store loop's own drift — the
    highest last/first any of its runs beside the stores' showed (one run's ratio moves by a
    tenth with the machine's load and where a full collection falls, so a store whose median
    run is within what the loop alone showed in the same runs does not drift beyond it)."""
    return max(1.3, max(base["flatness_runs"]))


FLOORS: dict[str, Callable[..., float]] = {
    CompactkitSQLStore.name: sqlite_commit_floor,
    CompactkitFileStore.name: fsync_append_floor,
    CompactkitRedisStore.name: redis_call_floor,
}


IN_LOOP_FLOORS: dict[str, type[Compactkit]] = {
    CompactkitSQLStore.name: SQLiteFloor,
    CompactkitFileStore.name: FsyncFloor,
    CompactkitRedisStore.name: RedisFloor,
}


def store_rounds(size: int, rounds: int, turns: int) -> list[dict[str, Any]]:
    """The store target, measured ``rounds`` times at ``size`` items.

    Each round builds the no-store loop, every store and, for each durable store, the no-store
    loop saving by its plain write (the floor in the loop), and measures them interleaved turn
    by turn (in an order rotated by round): ``turns`` times, each loop runs one turn to have its
    caches back, then the turn measured. So every loop of a round is measured within the same
    stretch of the machine's load (it moves a step's cost by a factor of two or more on a busy
    machine), not one loop after the other. Each durable store's tight-loop floor is measured at
    the round's start and end. Per round and loop: µs per step (median of its turns), saves per
    step, the floor per save (µs), and the limit (2 x that round's no-store step + saves x
    floor)."""
    history = prefill(size)
    floors = tuple(IN_LOOP_FLOORS[k.name] for k in STORES if k.name in IN_LOOP_FLOORS)
    kinds = (Compactkit, *STORES, *floors)
    out = []
    for number in range(rounds):
        order = kinds[number % len(kinds) :] + kinds[: number % len(kinds)]
        gc.collect()
        loops = {kind.name: kind(BIG_MODEL, history) for kind in order}
        started: dict[str, tuple[int, int, int]] = {}
        for name, loop in loops.items():
            own_cost(loop, 1)  # warm-up: imports, caches, first-turn setup
            started[name] = (1, loop.saves, loop.step)
        before = {name: floor(rows=100) for name, floor in FLOORS.items() if name in loops}
        costs: dict[str, list[float]] = {name: [] for name in loops}
        for _ in range(turns):
            for name, loop in loops.items():
                turn = started[name][0] + len(costs[name]) * 2
                own_cost(loop, 1, turn)  # its caches back after the other loops' turns
                costs[name] += own_cost(loop, 1, turn + 1)
        row: dict[str, dict[str, float]] = {}
        for name, loop in loops.items():
            floor = FLOORS.get(name)
            after = floor(rows=100) if floor else 0.0
            _, saves, steps = started[name]
            row[name] = {
                "us": statistics.median(costs[name]) * 1e6,
                # (the warm turns save as the measured ones do)
                "saves_per_step": (loop.saves - saves) / (loop.step - steps),
                "floor_us": statistics.median((before.get(name, 0.0), after)) * 1e6,
            }
        del loops
        base = row[Compactkit.name]["us"]
        for kind in STORES:
            entry = row[kind.name]
            entry["ratio"] = entry["us"] / base
            entry["limit_us"] = 2 * base + entry["saves_per_step"] * entry["floor_us"]
            if kind.name in IN_LOOP_FLOORS:
                # the same loop saving by plain writes: what they cost in the loop, per step
                entry["in_loop_floor_us"] = row[IN_LOOP_FLOORS[kind.name].name]["us"] - base
                entry["in_loop_limit_us"] = 2 * base + max(0.0, entry["in_loop_floor_us"])
        out.append(row)
    return out


def print_rounds(size: int, rounds: list[dict[str, Any]]) -> list[str]:
    """The store target's table; the stores whose median round misses it (the rule: 2 x the
    no-store step + the floor in the loop; the tight-loop floor's verdict is printed beside)."""
    print(
        f"store target at {size:,} items, {len(rounds)} rounds (own µs/step; x no store; the "
        "rule: limit = 2 x no store + the floor in the loop, i.e. what the no-store loop saving "
        "by one plain write-and-commit per save costs over the no-store loop, measured in the "
        "same round; beside it the tight-loop floor = saves/step x one plain write-and-commit "
        "timed alone, which leaves out what blocking in the commit costs the loop; SQLite floor "
        "and store both WAL + synchronous=FULL, the driver's default: every commit fsyncs)"
    )
    bases = ", ".join(f"{r[Compactkit.name]['us']:,.0f}" for r in rounds)
    print(f"  {'compactkit (no store)':<34} {bases} µs")
    for floor_kind in IN_LOOP_FLOORS.values():
        if floor_kind.name in rounds[0]:
            cells = ", ".join(f"{r[floor_kind.name]['us']:,.0f}" for r in rounds)
            print(f"  {floor_kind.name:<34} {cells} µs (the no-store loop, saving by it)")
    missed = []
    for kind in STORES:
        cells, shares, tight = [], [], []
        for r in rounds:
            e = r[kind.name]
            floor = e["saves_per_step"] * e["floor_us"]
            tight.append(e["us"] / e["limit_us"])
            limit = e.get("in_loop_limit_us", e["limit_us"])
            shares.append(e["us"] / limit)
            cell = f"{e['us']:,.0f} ({e['ratio']:.2f}x"
            if "in_loop_limit_us" in e:
                cell += f"; floor in the loop {e['in_loop_floor_us']:,.0f}, limit {limit:,.0f}"
                cell += f"; tight floor {floor:,.0f}, limit {e['limit_us']:,.0f}"
            else:
                cell += f"; limit {limit:,.0f}"
            cells.append(cell + f"; {e['saves_per_step']:.2f} saves)")
        verdict = "met" if statistics.median(shares) <= 1 else "MISSED"
        met = sum(share <= 1 for share in shares)
        if verdict == "MISSED":
            missed.append(kind.name)
        line = f"  {kind.name:<34} " + " | ".join(cells) + f": {verdict} ({met}/{len(shares)})"
        if kind.name in IN_LOOP_FLOORS:
            met_tight = sum(share <= 1 for share in tight)
            tight_verdict = "met" if statistics.median(tight) <= 1 else "missed"
            line += (
                f"; against the tight-loop floor (the rule before session 14): {tight_verdict} "
                f"({met_tight}/{len(tight)})"
            )
        print(line)
    return missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="CI smoke run (a few seconds)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of the store target (default 3)"
    )
    parser.add_argument(
        "--store-target",
        action="store_true",
        help="only the store target's rounds (at 10,000 items; 1,000 with --tiny)",
    )
    args = parser.parse_args()
    sizes = (100, 1_000) if args.tiny else (100, 1_000, 10_000)
    session_steps = 200 if args.tiny else 2_000
    measure_turns = 2 if args.tiny else 5
    warnings.simplefilter("ignore")  # peers' deprecation chatter is not the measurement
    if args.store_target:
        rounds = store_rounds(max(sizes), args.rounds, measure_turns)
        if REDIS_PREFIXES:
            drop_redis_keys()
        if args.json:
            json.dump({"store_rounds": rounds}, sys.stdout, indent=2)
            print()
            return
        missed = print_rounds(max(sizes), rounds)
        if missed:
            print(f"STORE COST TARGET MISSED at {max(sizes):,} items: {missed}")
        return
    results: dict[str, Any] = {"per_step_us": {}, "session": {}, "saves_per_step": {}}
    results["commit_floor_us"] = {
        CompactkitSQLStore.name: sqlite_commit_floor() * 1e6,
        CompactkitFileStore.name: fsync_append_floor() * 1e6,
        **({CompactkitRedisStore.name: redis_call_floor() * 1e6} if REDIS_URL else {}),
    }

    for size in sizes:
        history = prefill(size)
        row = {}
        for kind in LOOPS:
            gc.collect()
            loop = kind(BIG_MODEL, history)
            own_cost(loop, 1)  # warm-up: imports, caches, first-turn setup
            saves, steps = (
                getattr(loop, "saves", 0),
                loop.step if isinstance(loop, Compactkit) else 0,
            )
            row[kind.name] = statistics.median(own_cost(loop, measure_turns, 1)) * 1e6
            if kind in STORES:
                per_step = (loop.saves - saves) / (loop.step - steps)  # type: ignore[attr-defined]
                results["saves_per_step"][kind.name] = per_step
            print(f"{size} items, {kind.name}: {row[kind.name]:,.0f} µs/step", file=sys.stderr)
            del loop  # nothing measured later walks this loop's objects in its collections
        results["per_step_us"][size] = row
        del history

    target_size = max(sizes)
    results["store_rounds"] = store_rounds(target_size, args.rounds, measure_turns)

    half = session_steps // 2 // STEPS_PER_TURN
    # compactkit's sessions are short: the no-store loop and every store run five times,
    # interleaved run by run (a busy machine, and where a full garbage collection falls, move
    # one run's ratio by several hundredths; each store is held to the no-store runs made beside
    # its own); the peers' runs take 20-60 s each and are run once.
    runs = 1 if args.tiny else 5
    results["session"] = session_runs((Compactkit, *STORES), runs, half, session_steps)
    for kind in (LangChain, AgentsSDK):
        results["session"][kind.name] = entry = session_entry(kind, half, session_steps)
        del entry["costs"]
        print(f"session, {kind.name}: {entry}", file=sys.stderr)

    if REDIS_PREFIXES:
        drop_redis_keys()
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return
    print(
        "own cost per step (µs, median), by items already in the session; each peer beside the "
        "compactkit loop that persists as it does; ratio = peer / that compactkit loop"
    )
    for size, row in results["per_step_us"].items():
        line = [f"compactkit (no store) {row['compactkit']:,.0f}"]
        for peer, (persistence, match) in PEERS.items():
            line.append(
                f"{match} {row[match]:,.0f} vs {peer} ({persistence}) {row[peer]:,.0f} "
                f"({row[peer] / row[match]:.2f}x)"
            )
        print(f"  {size:>6,} items: " + "; ".join(line))
    floors = results["commit_floor_us"]
    print(
        "each store vs the no-store step, one measurement per size (the target is checked on "
        "the rounds below; floors measured once at the start: "
        + ", ".join(f"{name.split('+')[1]} {us:,.0f} µs" for name, us in floors.items())
        + ")"
    )
    for size, row in results["per_step_us"].items():
        base = row["compactkit"]
        for kind in STORES:
            saves = results["saves_per_step"].get(kind.name, 0.0)
            floor = saves * floors.get(kind.name, 0.0)
            limit = 2 * base + floor
            verdict = "met" if row[kind.name] <= limit else "over"
            print(
                f"  {size:>6,} items: {kind.name} {row[kind.name]:,.0f} µs = "
                f"{row[kind.name] / base:.2f}x no store; {saves:.2f} saves/step, floor "
                f"{floor:,.0f} µs; limit {limit:,.0f} µs: {verdict}"
            )
    missed = print_rounds(max(results["per_step_us"]), results["store_rounds"])
    print(f"{session_steps:,}-step session end to end (own cost)")
    ck = results["session"]["compactkit"]
    for name, entry in results["session"].items():
        extra = f", {entry['compactions']} compactions" if "compactions" in entry else ""
        if "compaction_turn_ms" in entry:
            first_ms, last_ms = entry["compaction_turn_ms"].values()
            other = entry["other_turn_ms_median"]
            extra += (
                f" (turns that compacted, ms: first half {first_ms}, last half {last_ms}; "
                f"other turns' median {other[0]} / {other[1]} ms)"
            )
        if "flatness_fastest_turns" in entry:
            runs_seen = entry["flatness_runs"]
            extra += (
                f"; flatness of {len(runs_seen)} runs {runs_seen}, the median run shown (full "
                f"garbage collections in their last half: {entry['last_half_full_gcs_runs']}); "
                f"each turn's fastest of the runs: {entry['flatness_fastest_turns']:.2f}"
            )
        match = PEERS.get(name, (None, "compactkit"))[1]
        base = results["session"][match]
        ratio = (
            ""
            if name.startswith("compactkit")
            else f" ({entry['total_s'] / base['total_s']:.2f}x {match})"
        )
        print(
            f"  {name:<32} {entry['total_s']:7.2f} s{ratio}, {entry['per_step_us']:,.0f} µs/step, "
            f"last/first half {entry['flatness']:.2f} (median step "
            f"{entry['flatness_median']:.2f}){extra}"
        )
    drift = drift_limit(ck)
    for kind in STORES:
        entry = results["session"][kind.name]
        verdict = "met" if entry["flatness"] <= drift else "MISSED"
        first_us, last_us = entry["added_us"]
        print(
            f"  flatness {kind.name}: {entry['flatness']:.2f}, runs {entry['flatness_runs']} "
            f"(target <= 1.3 or within the no-store loop's own drift: its runs "
            f"{ck['flatness_runs']}, up to {drift:.2f}): {verdict}; the store's own cost per "
            f"step over the no-store run beside it: first half {first_us:,.0f} µs, last half "
            f"{last_us:,.0f} µs"
        )
    if missed:
        print(f"STORE COST TARGET MISSED at {max(results['per_step_us']):,} items: {missed}")
    flat_missed = [
        kind.name for kind in STORES if results["session"][kind.name]["flatness"] > drift
    ]
    if flat_missed:
        print(f"STORE FLATNESS TARGET MISSED: {flat_missed}")
    if not args.tiny and ck["flatness"] > 1.3:
        # The reference loop's own drift: each store is held to it (issue 35: "last/first <= 1.3,
        # or within the no-store loop's own drift"), so it fails no store target by itself.
        print(
            f"note: the no-store loop's own last/first half is {ck['flatness']:.2f} (> 1.3); "
            "the stores' flatness is checked within it"
        )


if __name__ == "__main__":
    try:
        main()
    finally:
        remove_scratch()
