"""Runs that must survive: a long tool-heavy turn (compaction mid-turn), a provider overflow,
429/5xx faults, a crash between a call and its output, and resuming from a file store and
from SQLite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from runtime_support import make_agent, run

from compactkit import (
    Agent,
    ContextOverflowError,
    FileSessionStore,
    FunctionCall,
    FunctionCallOutput,
    ModelError,
    chat_to_items,
    counter_for,
    items_to_chat,
    tool,
)
from compactkit.budget import budget_for
from compactkit.compressors import RetryPolicy
from compactkit.memory import AgentMemory
from compactkit.runtime import (
    CompactionEvent,
    ModelCallEvent,
    ModelRetryEvent,
    OverflowEvent,
    PendingCallEvent,
)
from compactkit.testing import FakeOpenAI, http_error, overflow, text, tool_call

SMALL = "gpt-4"  # 8,192 tokens: a few dozen file reads overflow it


def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"# {path}\n" + "".join(f"line_{n} = {n}  # of {path}\n" for n in range(120))


def prompt_tokens(body: dict[str, Any]) -> int:
    """A chat request's tokens by the model's own counter, as compactkit counts them."""
    counter = counter_for(SMALL)
    return counter.count(chat_to_items(body["messages"])).tokens


def orphans(body: dict[str, Any]) -> set[str]:
    calls = {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}
    outputs = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
    return calls ^ outputs


def test_one_long_tool_heavy_turn_is_governed_before_every_call(mode: str) -> None:
    reads = [tool_call("read_file", {"path": f"src/m{n}.py"}) for n in range(30)]
    fake = FakeOpenAI([*reads, text("Read them all.")])
    agent = make_agent(fake, mode, model=SMALL, tools=[read_file], instructions="Be thorough.")
    session = agent.new_session()
    result = run(session, mode, "Read every module.")
    assert result.output == "Read them all."
    assert len(result.steps) == 31 and len(result.compactions) >= 1
    budget = budget_for(SMALL).usable_input
    for body in fake.requests:  # every prompt of the one turn fit and was well-formed
        assert prompt_tokens(body) <= budget
        assert not orphans(body)
        assert body["messages"][0] == {"role": "system", "content": "Be thorough."}
        assert any(
            m["role"] == "user" and m["content"] == "Read every module." for m in body["messages"]
        )
    history = session.memory.history()
    assert len(history) == 1 + 30 * 2 + 1  # compaction archived, lost nothing
    assert session.memory.summary


def test_provider_usage_calibrates_and_triggers_compaction(mode: str) -> None:
    # The provider bills twice what the local counter says (another tokenizer, hidden framing).
    def doubled(body: dict[str, Any]) -> Any:
        n = len(fake.requests)
        reply = tool_call("read_file", {"path": f"m{n}.py"}) if n < 12 else text("done")
        return type(reply)(
            text=reply.text, calls=reply.calls, prompt_tokens=2 * prompt_tokens(body)
        )

    fake = FakeOpenAI(default=doubled)
    agent = make_agent(fake, mode, model=SMALL, tools=[read_file])
    session = agent.new_session()
    result = run(session, mode, "go")
    assert agent.governor.calibration > 1.5
    assert result.compactions  # fired by usage_over / the calibrated count
    budget = budget_for(SMALL).usable_input
    assert max(prompt_tokens(b) for b in fake.requests[6:]) <= budget / 1.5


def test_an_overflow_forces_a_compaction_and_one_retry(mode: str) -> None:
    reads = [tool_call("read_file", {"path": f"src/m{n}.py"}) for n in range(6)]
    fake = FakeOpenAI([*reads, overflow(tokens=9_000, limit=8_192), text("done")])
    agent = make_agent(fake, mode, model=SMALL, tools=[read_file])
    session = agent.new_session()
    result = run(session, mode, "go")
    assert result.output == "done"
    (event,) = [e for e in result.events if isinstance(e, OverflowEvent)]
    assert event.reported_tokens == 9_000
    forced = [e for e in result.events if isinstance(e, CompactionEvent) and e.forced]
    assert forced and forced[0].applied
    refused, retried = fake.requests[-2], fake.requests[-1]
    assert prompt_tokens(retried) < prompt_tokens(refused)
    assert not orphans(retried)


def test_an_overflow_that_persists_is_a_typed_error_and_memory_is_intact(mode: str) -> None:
    fake = FakeOpenAI([tool_call("read_file", {"path": "a.py"}), overflow(), overflow()])
    agent = make_agent(fake, mode, model=SMALL, tools=[read_file])
    session = agent.new_session()
    with pytest.raises(ContextOverflowError, match="still too long") as info:
        run(session, mode, "go")
    assert info.value.reported_tokens == 200_000
    assert len(session.memory.history()) == 3  # input, call, output: nothing lost
    fake.add(text("recovered"))
    assert run(session, mode).output == "recovered"


def test_429_then_success_goes_through_one_retry_policy(mode: str) -> None:
    slept: list[float] = []

    async def asleep(seconds: float) -> None:
        slept.append(seconds)

    retry = RetryPolicy(
        attempts=3, initial_wait=0.5, jitter=0.0, sleep=slept.append, async_sleep=asleep
    )
    fake = FakeOpenAI([http_error(429, "slow down", retry_after=2), http_error(503), text("hi")])
    agent = make_agent(fake, mode, retry=retry)
    result = run(agent.new_session(), mode, "hello")
    assert result.output == "hi"
    assert slept == [2.0, 1.0]  # Retry-After honoured, then the backoff
    retries = [e for e in result.events if isinstance(e, ModelRetryEvent)]
    assert [r.attempt for r in retries] == [1, 2] and "429" in retries[0].error
    (call,) = [e for e in result.events if e.kind == "model_call"]
    assert isinstance(call, ModelCallEvent) and call.attempts == 3


def test_a_timeout_is_retried(mode: str) -> None:
    import httpx2

    fake = FakeOpenAI([httpx2.ReadTimeout("the server is slow"), text("on time")])
    result = run(make_agent(fake, mode).new_session(), mode, "hello")
    assert result.output == "on time" and len(fake.requests) == 2
    (retry,) = [e for e in result.events if isinstance(e, ModelRetryEvent)]
    assert "timed out" in retry.error


def test_giving_up_is_a_typed_error_and_the_session_resumes(tmp_path: Path, mode: str) -> None:
    store = FileSessionStore(tmp_path)
    fake = FakeOpenAI([tool_call("read_file", {"path": "a.py"}), *[http_error(500)] * 3])
    agent = make_agent(fake, mode, tools=[read_file], store=store)
    session = agent.new_session()
    with pytest.raises(ModelError, match="HTTP 500") as info:
        run(session, mode, "go")
    assert info.value.transient and info.value.attempts == 3
    assert not isinstance(info.value, ContextOverflowError)
    fake.add(text("back"))
    resumed = make_agent(fake, mode, tools=[read_file], store=store).resume(session.session_id)
    assert run(resumed, mode).output == "back"
    assert resumed.step == 2


def test_a_permanent_error_is_not_retried(mode: str) -> None:
    fake = FakeOpenAI([http_error(401, "bad key"), text("never")])
    with pytest.raises(ModelError, match="401") as info:
        run(make_agent(fake, mode).new_session(), mode, "hi")
    assert not info.value.transient and len(fake.requests) == 1


def test_resume_from_a_file_store_continues_the_conversation(tmp_path: Path, mode: str) -> None:
    store = FileSessionStore(tmp_path)
    fake = FakeOpenAI([tool_call("read_file", {"path": "a.py"}), text("first"), text("second")])
    session = make_agent(fake, mode, tools=[read_file], store=store).new_session()
    run(session, mode, "turn one")
    resumed = make_agent(fake, mode, tools=[read_file], store=store).resume(session.session_id)
    assert resumed.turn == 1 and resumed.step == 2
    assert run(resumed, mode, "turn two").output == "second"
    sent = [m.get("content") for m in fake.requests[-1]["messages"]]
    assert "turn one" in sent and "first" in sent and sent[-1] == "turn two"
    saved = store.load(session.session_id)
    assert saved.turn == 2 and saved.step == 3


def test_resume_from_sqlite_memory_and_store(tmp_path: Path, mode: str) -> None:
    from compactkit import SQLMemory, SQLSessionStore

    url = f"sqlite:///{tmp_path}/agent.db"
    store = SQLSessionStore(url)

    def factory(session_id: str) -> AgentMemory:
        return SQLMemory(url, session_id)

    reads = [tool_call("read_file", {"path": f"m{n}.py"}) for n in range(20)]
    fake = FakeOpenAI([*reads, text("first"), text("second")])
    agent = make_agent(
        fake, mode, model=SMALL, tools=[read_file], store=store, memory_factory=factory
    )
    session = agent.new_session()
    result = run(session, mode, "turn one")
    assert result.compactions
    before = session.memory.snapshot()
    again = make_agent(
        fake, mode, model=SMALL, tools=[read_file], store=store, memory_factory=factory
    )
    resumed = again.resume(session.session_id)
    assert resumed.memory.snapshot().items == before.items
    assert resumed.memory.summary == before.summary
    assert run(resumed, mode, "turn two").output == "second"


class Crash(BaseException):
    """The process dying between a tool call and its output."""


def crashing_agent(
    fake: FakeOpenAI, store: FileSessionStore, rerun: bool, runs: list[str]
) -> Agent:
    @tool(rerun_on_resume=rerun)
    def deploy(target: str) -> str:
        """Deploy the build."""
        runs.append(target)
        if len(runs) == 1:
            raise Crash()
        return f"deployed to {target}"

    return make_agent(fake, "sync", tools=[deploy], store=store)


@pytest.mark.parametrize("rerun", [False, True])
def test_a_crash_between_call_and_output_is_settled_on_resume(
    tmp_path: Path, mode: str, rerun: bool
) -> None:
    store = FileSessionStore(tmp_path)
    runs: list[str] = []
    fake = FakeOpenAI([tool_call("deploy", {"target": "prod"}, call_id="call_d")])
    session = crashing_agent(fake, store, rerun, runs).new_session()
    with pytest.raises(Crash):
        session.run("ship it")
    saved = store.load(session.session_id).memory.items
    assert isinstance(saved[-1], FunctionCall)  # the call was saved, its output never was

    fake.add(text("status noted"))
    agent = crashing_agent(fake, store, rerun, runs)
    if mode == "async":
        agent = Agent("gpt-4o", fake.async_client(), tools=list(agent.tools.values()), store=store)
    resumed = agent.resume(session.session_id)
    result = run(resumed, mode, "what happened?")
    (event,) = [e for e in result.events if isinstance(e, PendingCallEvent)]
    assert event.call_id == "call_d" and event.action == ("rerun" if rerun else "reported")
    messages = fake.requests[-1]["messages"]
    (answer,) = [m for m in messages if m["role"] == "tool"]
    assert answer["tool_call_id"] == "call_d"
    if rerun:
        assert answer["content"] == "deployed to prod" and runs == ["prod", "prod"]
    else:
        assert "interrupted" in answer["content"] and runs == ["prod"]
    outputs = [i for i in resumed.memory.snapshot().items if isinstance(i, FunctionCallOutput)]
    assert [o.call_id for o in outputs] == ["call_d"]
    assert (
        items_to_chat(resumed.memory.snapshot().items, lossy=True)[-1]["content"] == "status noted"
    )
