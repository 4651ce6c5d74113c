"""openai-agents' own session tests, run against ``CompactkitSession``.

Adapted from openai-agents 0.24.0 (``tests/memory/test_session.py``,
``tests/memory/test_session_limit.py``, ``tests/memory/test_session_context_wrapper.py``,
``tests/memory/test_openai_responses_compaction_session.py``), Copyright (c) 2025 OpenAI,
MIT License (the sdist's LICENSE). What changed: where the SDK builds ``SQLiteSession(...)``
these build ``CompactkitSession`` over an SDK ``SQLiteSession``, an ``InMemoryMemory`` and an
``SQLMemory`` (the ``session`` fixture); async tests run through ``asyncio.run``; the
``run_sync`` variants are left out (``Runner.run_sync`` cannot run inside ``asyncio.run``).
Tests of ``SQLiteSession``'s own internals (its connections, locks, corrupt rows) do not apply.
The defects these found (issue #34) have a test each below the adapted ones.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import httpx2
import pytest
from agents import (
    Agent,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SessionSettings,
    SQLiteSession,
    TResponseInputItem,
    set_tracing_disabled,
)
from agents.memory import OpenAIResponsesCompactionSession
from agents.testing import ScriptedModel, assistant_message
from openai import AsyncOpenAI

from compactkit import InMemoryMemory
from compactkit.integrations import CompactkitSession
from compactkit.sql import SQLMemory

MODEL = "gpt-4o"
BACKENDS = ["sdk", "memory", "sql"]


@pytest.fixture(autouse=True)
def _no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)
    yield


Make = Callable[..., CompactkitSession]


@pytest.fixture(params=BACKENDS)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Make]:
    """Builds the session under test where the SDK's tests build ``SQLiteSession``."""
    built: list[CompactkitSession] = []

    def build(session_id: str, **options: Any) -> CompactkitSession:
        store: Any
        if request.param == "sdk":
            store = SQLiteSession(session_id, tmp_path / "sdk.db")
        elif request.param == "memory":
            store = InMemoryMemory()
        else:
            store = SQLMemory(f"sqlite:///{tmp_path / 'ck.db'}", session_id)
        session = CompactkitSession(store, model=MODEL, session_id=session_id, **options)
        built.append(session)
        return session

    yield build
    for session in built:
        session.close()


def text(content: str) -> Any:
    return assistant_message(content, item_id="1")


async def run(agent: Agent[Any], prompt: str, streamed: bool, **kwargs: Any) -> Any:
    if not streamed:
        return await Runner.run(agent, prompt, **kwargs)
    result = Runner.run_streamed(agent, prompt, **kwargs)
    async for _ in result.stream_events():
        pass
    return result


# -- adapted from tests/memory/test_session.py ---------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
def test_session_memory_basic_functionality(make: Make, streamed: bool) -> None:
    async def scenario() -> None:
        session = make("test_session_123")
        model = ScriptedModel()
        agent = Agent(name="test", model=model)
        model.enqueue([text("San Francisco")])
        result1 = await run(
            agent, "What city is the Golden Gate Bridge in?", streamed, session=session
        )
        assert result1.final_output == "San Francisco"
        model.enqueue([text("California")])
        result2 = await run(agent, "What state is it in?", streamed, session=session)
        assert result2.final_output == "California"
        assert len(model.calls[-1].input) > 1

    asyncio.run(scenario())


@pytest.mark.parametrize("streamed", [False, True])
def test_session_memory_different_sessions(make: Make, streamed: bool) -> None:
    async def scenario() -> None:
        model = ScriptedModel()
        agent = Agent(name="test", model=model)
        session_1 = make("session_1")
        model.enqueue([text("I like cats")])
        await run(agent, "I like cats", streamed, session=session_1)
        session_2 = make("session_2")
        model.enqueue([text("I like dogs")])
        await run(agent, "I like dogs", streamed, session=session_2)
        model.enqueue([text("Yes, you mentioned cats")])
        result3 = await run(agent, "What did I say I like?", streamed, session=session_1)
        assert result3.final_output == "Yes, you mentioned cats"
        contents = json.dumps(model.calls[-1].input)
        assert "cats" in contents and "dogs" not in contents

    asyncio.run(scenario())


def test_session_memory_direct(make: Make) -> None:
    async def scenario() -> None:
        session = make("direct_test")
        items: list[TResponseInputItem] = [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
        ]
        await session.add_items(items)
        assert await session.get_items() == items  # exactly what was added (defect 4)
        await session.clear_session()
        assert await session.get_items() == []

    asyncio.run(scenario())


def test_session_memory_pop_item(make: Make) -> None:
    async def scenario() -> None:
        session = make("pop_test")
        assert await session.pop_item() is None
        items: list[TResponseInputItem] = [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi there!"},
            {"role": "user", "content": "How are you?"},
        ]
        await session.add_items(items)
        assert await session.pop_item() == items[-1]
        assert await session.get_items() == items[:2]
        assert await session.pop_item() == items[1]
        assert await session.pop_item() == items[0]
        assert await session.pop_item() is None

    asyncio.run(scenario())


def test_session_get_items_with_limit(make: Make) -> None:
    async def scenario() -> None:
        session = make("count_test")
        items: list[TResponseInputItem] = [
            {"role": role, "content": f"{word} {n}"}
            for n in (1, 2, 3)
            for role, word in (("user", "Message"), ("assistant", "Response"))
        ]
        await session.add_items(items)
        assert await session.get_items() == items
        assert await session.get_items(limit=2) == items[-2:]
        assert await session.get_items(limit=4) == items[-4:]
        assert await session.get_items(limit=10) == items
        assert await session.get_items(limit=0) == []

    asyncio.run(scenario())


def test_session_unicode_and_special_characters(make: Make) -> None:
    async def scenario() -> None:
        session = make("unicode_test")
        items: list[TResponseInputItem] = [
            {"role": "user", "content": "こんにちは"},
            {"role": "assistant", "content": "😊👍"},
            {"role": "user", "content": "Привет"},
            {"role": "user", "content": "O'Reilly"},
            {"role": "assistant", "content": "DROP TABLE sessions;"},
            {"role": "user", "content": '"SELECT * FROM users WHERE name = "admin";"'},
        ]
        await session.add_items(items)
        assert await session.get_items() == items

    asyncio.run(scenario())


def test_session_add_items_exception_propagates_in_streamed(make: Make) -> None:
    async def scenario() -> None:
        session = make("test_exception_session")

        async def failing_add_items(_items: Any, **_: Any) -> None:
            raise RuntimeError("Simulated session.add_items failure")

        session.add_items = failing_add_items  # type: ignore[method-assign]
        model = ScriptedModel()
        model.enqueue([text("This should not be reached")])
        result = Runner.run_streamed(Agent(name="test", model=model), "Hello", session=session)

        async def consume() -> None:
            async for _ in result.stream_events():
                pass

        with pytest.raises(RuntimeError, match=r"Simulated session\.add_items failure"):
            await asyncio.wait_for(consume(), timeout=5.0)

    asyncio.run(scenario())


def test_session_settings_default(make: Make) -> None:
    session = make("default_settings_test")
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit is None


def test_session_settings_constructor(make: Make) -> None:
    session = make("constructor_settings_test", session_settings=SessionSettings(limit=5))
    assert session.session_settings.limit == 5


def test_session_settings_constructor_normalizes_dictionary(make: Make) -> None:
    session = make("dictionary_settings_test", session_settings={"limit": 0})
    assert isinstance(session.session_settings, SessionSettings)
    assert session.session_settings.limit == 0
    assert session.session_settings.resolve({"limit": 4}).limit == 4
    assert asyncio.run(session.get_items()) == []  # defect 3: this crashed


def test_session_settings_rejects_unknown_dictionary_fields(make: Make) -> None:
    with pytest.raises(TypeError, match="Unknown session settings: limitt"):
        make("invalid_settings_test", session_settings={"limitt": 1})


def test_get_items_uses_session_settings_limit_and_explicit_limit_overrides(make: Make) -> None:
    async def scenario() -> None:
        session = make("uses_settings_limit_test", session_settings=SessionSettings(limit=3))
        items: list[TResponseInputItem] = [
            {"role": "user", "content": f"Message {i}"} for i in range(5)
        ]
        await session.add_items(items)
        assert await session.get_items() == items[-3:]
        assert await session.get_items(limit=2) == items[-2:]

    asyncio.run(scenario())


def test_runner_with_session_settings_override(make: Make) -> None:
    async def scenario() -> None:
        session = make("runner_override_test", session_settings=SessionSettings(limit=100))
        await session.add_items([{"role": "user", "content": f"Turn {i}"} for i in range(10)])
        model = ScriptedModel()
        model.enqueue([text("Got it")])
        config = RunConfig(session_settings=SessionSettings(limit=2))
        await Runner.run(
            Agent(name="test", model=model), "New question", session=session, run_config=config
        )
        history = [i for i in model.calls[-1].input if i.get("content") != "New question"]
        assert len(history) == 2

    asyncio.run(scenario())


# -- adapted from tests/memory/test_session_limit.py ---------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
def test_session_limit_drops_unmatched_history_function_call_output(
    make: Make, streamed: bool
) -> None:
    async def scenario() -> None:
        session = make("limit_tool_pair")
        history = cast(
            list[TResponseInputItem],
            [
                {"role": "user", "content": "What is the weather?"},
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "get_weather",
                    "arguments": "{}",
                },
                {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}],
                },
            ],
        )
        await session.add_items(history)
        assert await session.get_items(limit=2) == history[-2:]
        model = ScriptedModel()
        model.enqueue([text("Tomorrow is sunny too.")])
        config = RunConfig(session_settings=SessionSettings(limit=2))
        await run(
            Agent(name="test", model=model),
            "What about tomorrow?",
            streamed,
            session=session,
            run_config=config,
        )
        assert model.calls[-1].input == [
            history[-1],
            {"role": "user", "content": "What about tomorrow?"},
        ]

    asyncio.run(scenario())


@pytest.mark.parametrize("limit", [0, 3, None, 100])
def test_session_limit_parameter(make: Make, limit: int | None) -> None:
    async def scenario() -> None:
        session = make("limit_test")
        model = ScriptedModel()
        agent = Agent(name="test", model=model)
        for turn in range(4):
            model.enqueue([text(f"Reply {turn}")])
            await Runner.run(agent, f"Message {turn}", session=session)
        model.enqueue([text("done")])
        config = RunConfig(session_settings=SessionSettings(limit=limit))
        await Runner.run(agent, "last", session=session, run_config=config)
        sent = model.calls[-1].input
        expected = 8 if limit is None or limit > 8 else limit
        assert len(sent) == expected + 1  # the history, then the new input

    asyncio.run(scenario())


# -- adapted from tests/memory/test_session_context_wrapper.py -----------------------------


class ContextAwareStore(SQLiteSession):
    """An SDK session that opts into ``wrapper=`` and records what it received."""

    def __init__(self) -> None:
        super().__init__("context-aware")
        self.calls: list[tuple[str, Any]] = []

    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> Any:
        self.calls.append(("get_items", wrapper))
        return await super().get_items(limit)

    async def add_items(self, items: Any, *, wrapper: Any = None) -> None:
        self.calls.append(("add_items", wrapper))
        await super().add_items(items)

    async def pop_item(self, *, wrapper: Any = None) -> Any:
        self.calls.append(("pop_item", wrapper))
        return await super().pop_item()

    async def clear_session(self, *, wrapper: Any = None) -> None:
        self.calls.append(("clear_session", wrapper))
        await super().clear_session()


@pytest.mark.parametrize("streamed", [False, True])
def test_runner_passes_same_wrapper_to_context_aware_session(streamed: bool) -> None:
    async def scenario() -> None:
        store = ContextAwareStore()
        session = CompactkitSession(store, model=MODEL)
        model = ScriptedModel(steps=[[text("ok")]])
        result = await run(
            Agent(name="test", model=model), "hello", streamed, context={"t": 1}, session=session
        )
        assert result.final_output == "ok"
        assert [name for name, _ in store.calls] == ["get_items", "add_items", "add_items"]
        assert all(wrapper is result.context_wrapper for _, wrapper in store.calls)
        session.close()

    asyncio.run(scenario())


# -- adapted from tests/memory/test_openai_responses_compaction_session.py -----------------


def responses_client(requests: list[dict[str, Any]], compacted: dict[str, Any]) -> AsyncOpenAI:
    async def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        requests.append(body)
        if request.url.path.endswith("/compact"):
            return httpx2.Response(
                200,
                json={
                    "id": "cmp_response",
                    "object": "response.compaction",
                    "created_at": 1,
                    "output": [compacted],
                },
            )
        answer = {
            "id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5",
            "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "42", "annotations": []}]}],
        }  # fmt: skip
        return httpx2.Response(200, json=answer)

    return AsyncOpenAI(
        api_key="synthetic-key",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )


@pytest.mark.parametrize("history_source", ["automatic", "manual", "stored"])
def test_compaction_session_stacked_on_compactkit_keeps_compacting(
    make: Make, history_source: str
) -> None:
    """Defect 4: over a compactkit memory, the stored history could not be matched and
    ``OpenAIResponsesCompactionSession`` stopped compacting."""
    compacted = {"id": "cmp_synthetic", "type": "compaction", "encrypted_content": "opaque"}

    async def scenario() -> None:
        underlying = make("created-by-replay")
        requests: list[dict[str, Any]] = []
        async with responses_client(requests, compacted) as client:
            session = OpenAIResponsesCompactionSession(
                session_id="created-by-replay",
                underlying_session=underlying,
                client=client,
                model="gpt-5",
                compaction_mode="input",
                should_trigger_compaction=lambda ctx: bool(ctx["compaction_candidate_items"]),
            )
            agent = Agent(name="test", model=OpenAIResponsesModel("gpt-5", openai_client=client))
            if history_source == "stored":
                await underlying.add_items([cast(TResponseInputItem, compacted)])
            elif history_source == "manual":
                await session.add_items([{"role": "user", "content": "How many?"}])
                await session.run_compaction({"force": True})
            else:
                await Runner.run(agent, "How many?", session=session)
            assert await underlying.get_items() == [compacted]
            result = await Runner.run(agent, "And urgent?", session=session)
            assert result.final_output == "42"
            assert [i for i in requests[-1]["input"] if i.get("type") == "compaction"] == [
                compacted
            ]

    asyncio.run(scenario())


# -- the other defects of issue #34 ----------------------------------------------------------


def test_a_non_json_item_is_refused_and_the_session_stays_readable(make: Make) -> None:
    """Defect 2: a non-JSON item made the session unreadable for every other process."""

    async def scenario() -> None:
        session = make("non-json")
        await session.add_items([{"role": "user", "content": "kept"}])
        with pytest.raises(TypeError):
            await session.add_items([{"role": "user", "content": object()}])  # type: ignore[typeddict-item]
        again = make("non-json")  # another reader of the same store
        assert await session.get_items() == [{"role": "user", "content": "kept"}]
        if not isinstance(again.store, InMemoryMemory):  # a fresh in-memory store is empty
            assert await again.get_items() == [{"role": "user", "content": "kept"}]

    asyncio.run(scenario())


def test_close_closes_the_store_and_is_idempotent(make: Make) -> None:
    """Defect 6: the SDK's sessions have ``close()``; callers call it."""
    session = make("close")
    session.close()
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(session.add_items([{"role": "user", "content": "late"}]))


def test_limit_keeping_groups_is_an_option(make: Make) -> None:
    """Decision 9: the SDK's exact N by default; whole call/output pairs on request."""

    async def scenario() -> None:
        session = make("groups", limit_keeps_groups=True)
        history = cast(
            list[TResponseInputItem],
            [
                {"role": "user", "content": "What is the weather?"},
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "get_weather",
                    "arguments": "{}",
                },
                {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            ],
        )
        await session.add_items(history)
        assert await session.get_items(limit=1) == history[1:]  # the call comes with its output

    asyncio.run(scenario())
