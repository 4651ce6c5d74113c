"""One save per step, and what a crash costs: a step's tool outputs are saved with the next
save when every tool of the step is safe to re-run (``rerun_on_resume``), at once otherwise.
Killed (SIGKILL) during the next model call, a second process resumes: a re-runnable call is run
again, any other call's output was already saved and reaches the model as it was."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest
import session_workers
import sql_workers
from redis_support import redis_url  # noqa: F401
from sql_support import needs_postgres

from compactkit import Agent, FunctionCallOutput, tool
from compactkit.errors import MaxStepsError, ModelError
from compactkit.memory import InMemoryMemory
from compactkit.runtime import PendingCallEvent
from compactkit.sessions import AgentSession, FileSessionStore, InMemorySessionStore
from compactkit.testing import FakeOpenAI, http_error, text, tool_call

STORES = ["file", "sqlite", pytest.param("postgresql", marks=needs_postgres), "redis"]


@pytest.mark.parametrize("rerun", [True, False], ids=["rerun_on_resume", "not_rerun"])
def test_a_kill_during_the_next_model_call_loses_no_output_that_cannot_be_rerun(
    where: tuple[str, str, str], tmp_path: Path, rerun: bool
) -> None:
    killed_in_the_next_model_call(where, tmp_path, rerun, own_memory=False)


@pytest.mark.parametrize("where", STORES[1:], indirect=True)
def test_a_memory_that_stores_each_write_keeps_the_output_of_a_rerunnable_call(
    where: tuple[str, str, str], tmp_path: Path
) -> None:
    # SQLMemory/RedisMemory commit each item as it is added: the output outlives the kill.
    killed_in_the_next_model_call(where, tmp_path, True, own_memory=True)


def killed_in_the_next_model_call(
    where: tuple[str, str, str], tmp_path: Path, rerun: bool, *, own_memory: bool
) -> None:
    """A worker process killed in the model call after a tool step; this process resumes."""
    kind, location, prefix = where
    log, ready = tmp_path / "runs.log", tmp_path / "ready"
    (worker,) = sql_workers.start(
        session_workers.tool_step_then_hang,
        (kind, location, prefix, "s", rerun, own_memory, str(log), str(ready)),
    )
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline and worker.is_alive():
        time.sleep(0.02)
    assert ready.exists(), "the worker never reached its second model call"
    assert worker.pid is not None
    os.kill(worker.pid, signal.SIGKILL)
    worker.join()

    store, factory = session_workers.open_store(kind, location, prefix)
    if not own_memory:
        factory = lambda _sid: InMemoryMemory()  # noqa: E731
    fake = FakeOpenAI([text("noted")])
    agent = Agent(
        "gpt-4o",
        fake.client(),
        tools=[session_workers.logged_tool(rerun, str(log))],
        store=store,
        memory_factory=factory,
        compaction=False,
        lease_timeout=30.0,
    )
    result = agent.resume("s").run(None)
    (request,) = fake.requests
    (output,) = [m for m in request["messages"] if m["role"] == "tool"]
    assert output["tool_call_id"] == "call_a" and output["content"] == "acted on prod"
    pending = [e for e in result.events if isinstance(e, PendingCallEvent)]
    if rerun and not own_memory:  # its output was to ride the next save: the kill lost it
        assert [(e.call_id, e.action) for e in pending] == [("call_a", "rerun")]
        assert log.read_text(encoding="utf-8").split() == ["prod", "prod"]
    else:  # stored before the model was called: never run twice, never reported lost
        assert pending == []
        assert log.read_text(encoding="utf-8").split() == ["prod"]
    assert result.output == "noted"


def read(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def deploy(target: str) -> str:
    """Deploy."""
    return f"deployed to {target}"


def drive(session: AgentSession, mode: str, text_in: str | None, **options: object) -> object:
    run = getattr(session, "arun" if mode == "async" else "run")
    if mode == "async":
        return asyncio.run(run(text_in, **options))
    return run(text_in, **options)


class CountingStore(InMemorySessionStore):
    """An in-memory store that counts its saves."""

    def __init__(self) -> None:
        super().__init__()
        self.saves = 0

    def save(self, session: AgentSession) -> None:
        self.saves += 1
        super().save(session)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    ("rerun", "saves"), [(True, 1 + 3), (False, 1 + 3 + 2)], ids=["rerun", "not_rerun"]
)
def test_a_step_of_tools_safe_to_rerun_is_one_save(mode: str, rerun: bool, saves: int) -> None:
    store = CountingStore()
    fake = FakeOpenAI(
        [tool_call("act", {"path": "a.py"}), tool_call("act", {"path": "b.py"}), text("done")]
    )
    act = tool(read if rerun else deploy, name="act", rerun_on_resume=rerun)
    agent = Agent("gpt-4o", fake.client(), tools=[act], store=store, compaction=False)
    if mode == "async":
        agent = Agent("gpt-4o", fake.async_client(), tools=[act], store=store, compaction=False)
    session = agent.new_session()
    before = store.saves
    drive(session, mode, "go")
    # the input, then each reply; outputs of tools that must not run twice are saved at once
    assert store.saves - before == saves
    saved = store.load(session.session_id).memory.items
    assert [type(i).__name__ for i in saved][-3:] == [
        "FunctionCall",
        "FunctionCallOutput",
        "Message",
    ]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("ending", ["max_steps", "model_error"])
def test_outputs_waiting_for_a_save_are_saved_when_the_run_stops(
    tmp_path: Path, mode: str, ending: str
) -> None:
    store = FileSessionStore(tmp_path)
    replies: list[object] = [tool_call("read", {"path": "a.py"}, call_id="call_r")]
    if ending == "model_error":
        replies.append(http_error(401, "bad key"))
    fake = FakeOpenAI(replies)  # type: ignore[arg-type]
    client = fake.async_client() if mode == "async" else fake.client()
    agent = Agent(
        "gpt-4o", client, tools=[tool(read, rerun_on_resume=True)], store=store, compaction=False
    )
    session = agent.new_session()
    with pytest.raises(ModelError if ending == "model_error" else MaxStepsError):
        drive(session, mode, "go", max_steps=1 if ending == "max_steps" else 5)
    fresh = FileSessionStore(tmp_path).load(session.session_id)  # what another process reads
    (output,) = [i for i in fresh.memory.items if isinstance(i, FunctionCallOutput)]
    assert output.call_id == "call_r" and output.output == "contents of a.py"


def wait_for(path: Path, worker: BaseProcess) -> None:
    deadline = time.monotonic() + 60
    while not path.exists() and time.monotonic() < deadline and worker.is_alive():
        time.sleep(0.02)
    assert path.exists(), f"the worker never wrote {path.name}"


def test_a_session_loaded_before_a_killed_run_continues_from_what_that_run_saved(
    where: tuple[str, str, str], tmp_path: Path
) -> None:
    kind, location, prefix = where
    turn_done, go, ready = tmp_path / "turn_done", tmp_path / "go", tmp_path / "ready"
    (worker,) = sql_workers.start(
        session_workers.two_turns_killed_in_the_second,
        (kind, location, prefix, "s", str(turn_done), str(go), str(ready)),
    )
    wait_for(turn_done, worker)
    store, _ = session_workers.open_store(kind, location, prefix)
    fake = FakeOpenAI([text("noted")])
    agent = Agent(
        "gpt-4o",
        fake.client(),
        store=store,
        memory_factory=lambda _sid: InMemoryMemory(),
        compaction=False,
        lease_timeout=30.0,
    )
    older = agent.resume("s")  # loaded after the worker's first turn
    go.write_text("go", encoding="utf-8")
    wait_for(ready, worker)  # the second turn's input is saved; its model call hangs
    assert worker.pid is not None
    os.kill(worker.pid, signal.SIGKILL)
    worker.join()
    older.run("after the crash")  # its lease shows the store moved on: it reloads first
    (request,) = fake.requests
    sent = [m.get("content") for m in request["messages"]]
    assert sent == ["turn one", "first answer", "turn two", "after the crash"]


@pytest.mark.parametrize("written", ["right", "wrong"])
def test_a_lease_info_file_of_an_earlier_compactkit_is_read(tmp_path: Path, written: str) -> None:
    # Earlier versions wrote the revision alone, on every save; without the identities of the
    # files it belongs to, the revision is read from the session's files.
    store = FileSessionStore(tmp_path)
    agent = Agent("gpt-4o", FakeOpenAI(default="ok").client(), store=store, compaction=False)
    session = agent.new_session("s")
    session.run("one")
    saved = FileSessionStore(tmp_path).load("s").revision
    info = {"token": 7, "holder": None, "since": None}
    info["revision"] = saved if written == "right" else 1
    (tmp_path / ".leases" / "s.info").write_text(json.dumps(info), encoding="utf-8")
    lease = FileSessionStore(tmp_path).acquire("s")
    assert (lease.token, lease.revision) == (8, saved)


@pytest.mark.parametrize("where", STORES[1:3], indirect=True)
def test_a_run_lease_taken_in_one_statement_reads_back_as_the_full_path_writes_it(
    where: tuple[str, str, str],
) -> None:
    # SQLSessionStore takes a run's lease with one UPDATE … RETURNING on the driver's cursor;
    # what it stores is what the locking path (and a second process) reads back.
    from compactkit.errors import LeaseLostError, SessionBusyError

    kind, location, prefix = where
    store, _ = session_workers.open_store(kind, location, prefix)
    agent = Agent("gpt-4o", FakeOpenAI(default="ok").client(), store=store, compaction=False)
    session = agent.new_session("s")
    session.run("one")
    first = store.acquire("s", holder="first", ttl=60.0)
    other, _ = session_workers.open_store(kind, location, prefix)
    with pytest.raises(SessionBusyError) as busy:
        other.acquire("s", holder="second", timeout=0.0)
    assert (busy.value.holder, busy.value.since) == ("first", first.since)
    assert first.revision == session.revision
    store.release(first)
    second = other.acquire("s", holder="second", timeout=0.0)
    assert second.token == first.token + 1 and second.revision == first.revision
    session.lease = first
    with pytest.raises(LeaseLostError):
        store.save(session)  # the released lease fences nothing any more


@pytest.mark.parametrize("where", STORES[1:], indirect=True)
def test_the_answer_save_gives_the_lease_back_only_while_the_run_holds_it(
    where: tuple[str, str, str],
) -> None:
    # save_and_release (SQL, Redis): the run's last save also releases its lease; a lease that
    # expired and was taken over is refused by its token, and the new holder keeps it.
    from compactkit.errors import LeaseLostError, SessionBusyError

    kind, location, prefix = where
    store, _ = session_workers.open_store(kind, location, prefix)
    agent = Agent("gpt-4o", FakeOpenAI(default="ok").client(), store=store, compaction=False)
    session = agent.new_session("s")
    session.run("one")
    other, _ = session_workers.open_store(kind, location, prefix)
    lease = other.acquire("s", holder="next", timeout=0.0)  # free at once
    assert lease.revision == other.load("s").revision == session.revision
    assert other.load("s").memory.items[-1].text == "ok"  # type: ignore[union-attr]
    other.release(lease)

    def taken_over_meanwhile(_body: dict[str, object]) -> str:
        time.sleep(0.6)  # the run's lease (ttl 0.5 s) expires; another run takes it over
        other.acquire("s", holder="thief", timeout=0.0, ttl=60.0)
        return "late answer"

    slow = Agent(
        "gpt-4o",
        FakeOpenAI([taken_over_meanwhile]).client(),
        store=store,
        compaction=False,
        lease_ttl=0.5,
    )
    stalled = slow.resume("s")
    with pytest.raises(LeaseLostError):
        stalled.run("two")
    with pytest.raises(SessionBusyError) as busy:  # the stalled run released nothing
        other.acquire("s", holder="third", timeout=0.0)
    assert busy.value.holder == "thief"
    assert other.load("s").memory.items[-1].text == "two"  # type: ignore[union-attr]


@pytest.mark.parametrize("where", STORES[1:], indirect=True)
def test_save_and_release_saves_then_frees_the_lease_and_a_later_release_frees_nothing(
    where: tuple[str, str, str],
) -> None:
    from compactkit.errors import LeaseLostError, SessionBusyError

    kind, location, prefix = where
    store, _ = session_workers.open_store(kind, location, prefix)
    other, _ = session_workers.open_store(kind, location, prefix)
    session = AgentSession(session_id="s")
    store.save(session)
    for saved in (["one"], ["one", "two"]):  # a whole save, then a patch on top of it
        turn = saved[-1]
        session.lease = store.acquire("s", holder="run", ttl=60.0)
        session.memory.add_user_input(turn)
        store.save_and_release(session)
        lease, session.lease = session.lease, None
        assert lease is not None
        after = other.acquire("s", holder="next", timeout=0.0)  # free at once
        assert after.revision == session.revision == other.load("s").revision
        assert [m.text for m in other.load("s").memory.items] == saved  # type: ignore[union-attr]
        store.release(lease)  # already given back: it must not free the next holder's lease
        with pytest.raises(SessionBusyError) as busy:
            store.acquire("s", holder="third", timeout=0.0)
        assert busy.value.holder == "next"
        other.release(after)

    # A lease taken over before the save: nothing is saved and nothing released.
    session.lease = store.acquire("s", holder="run", ttl=60.0)
    store.release(session.lease)
    thief = other.acquire("s", holder="thief", timeout=0.0, ttl=60.0)
    session.memory.add_user_input("three")
    with pytest.raises(LeaseLostError):
        store.save_and_release(session)
    with pytest.raises(SessionBusyError) as busy:
        store.acquire("s", holder="third", timeout=0.0)
    assert busy.value.holder == "thief"
    assert [m.text for m in other.load("s").memory.items] == ["one", "two"]  # type: ignore[union-attr]
    other.release(thief)
