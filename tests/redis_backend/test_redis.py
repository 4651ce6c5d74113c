"""RedisMemory and RedisSessionStore against a real redis-server: the public conformance kit
unchanged, then what only Redis promises — O(1) appends, incremental reads, TTL, prefixes."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any, ClassVar

import pytest
import redis
from redis_support import key_prefix, redis_client, redis_url  # noqa: F401

from compactkit import Agent
from compactkit.errors import ConfigError, StorageError
from compactkit.items import item_text
from compactkit.items.snapshot import CompactResult, CompactStats
from compactkit.redis import RedisMemory, RedisSessionStore
from compactkit.sessions.session import AgentSession, resume_session
from compactkit.testing import FakeOpenAI, text, tool_call
from compactkit.testing.conformance import MemoryConformance, SessionStoreConformance

# -- the public kit, unchanged ------------------------------------------------------------------


class TestRedisMemory(MemoryConformance):
    persistent = True  # RedisMemory(client, id) twice: two handles on one stored session

    @pytest.fixture
    def memory_factory(self, redis_client: redis.Redis, key_prefix: str) -> Any:  # noqa: F811
        return lambda session_id, **options: RedisMemory(
            redis_client, session_id, key_prefix=key_prefix, **options
        )


class TestRedisSessionStore(SessionStoreConformance):
    leases = True

    @pytest.fixture
    def store_factory(self, redis_client: redis.Redis, key_prefix: str) -> Any:  # noqa: F811
        return lambda: RedisSessionStore(
            redis_client, key_prefix=f"{key_prefix}:{uuid.uuid4().hex[:6]}"
        )


# -- what only Redis promises ---------------------------------------------------------------------


class CountingConnection(redis.Connection):
    """A connection that counts the commands it sends, by name: what this client puts on the
    wire. (The server's ``INFO commandstats`` counts every client's, and the other test
    worker's Redis tests move it at any moment.)"""

    sent: ClassVar[Counter[str]] = Counter()  # since the last ``appended``

    def send_command(self, *args: Any, **kwargs: Any) -> None:
        self._count(args)
        super().send_command(*args, **kwargs)

    def pack_commands(self, commands: Any) -> Any:
        commands = list(commands)  # a pipeline's, MULTI and EXEC among them
        for command in commands:
            self._count(command)
        return super().pack_commands(commands)

    def _count(self, args: Any) -> None:
        name = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
        self.sent[name.split()[0].lower()] += 1


def appended(memory: RedisMemory, text: str) -> dict[str, int]:
    """The commands ``memory`` sends (over a ``CountingConnection``) to append one user input."""
    CountingConnection.sent = Counter()
    memory.add_user_input(text)
    return dict(CountingConnection.sent)


def test_an_append_costs_the_same_commands_at_any_session_size(
    redis_url: str,  # noqa: F811
    key_prefix: str,  # noqa: F811
) -> None:
    client = redis.Redis.from_url(redis_url, connection_class=CountingConnection)
    small = RedisMemory(client, "small", key_prefix=key_prefix)
    large = RedisMemory(client, "large", key_prefix=key_prefix)
    small.add_user_input("first")
    for n in range(400):
        large.add_user_input(f"item {n}")
    costs = [appended(m, "next") for m in (small, large)]
    client.close()
    assert costs[0] == costs[1]
    assert not {"lrange", "hgetall", "hvals", "smembers"} & set(costs[0])  # no whole reads
    assert costs[0]["rpush"] == 1 and costs[0]["exec"] == 1


def test_a_read_fetches_only_what_was_appended_and_sees_other_writers(
    redis_client: redis.Redis,  # noqa: F811
    key_prefix: str,  # noqa: F811
) -> None:
    reader = RedisMemory(redis_client, "s", key_prefix=key_prefix)
    writer = RedisMemory(redis_client, "s", key_prefix=key_prefix)
    for n in range(50):
        writer.add_user_input(f"m{n}")
    assert len(reader.snapshot().items) == 50
    writer.add_user_input("new")
    assert [item_text(i) for i in reader.snapshot().items][-1] == "new"
    snapshot = writer.snapshot()
    writer.apply(_result(snapshot, 2))
    assert [item_text(i) for i in reader.snapshot().items] == ["m49", "new"]
    writer.pin(51)
    assert reader.snapshot().items[-1].pinned
    writer.clear()
    assert reader.snapshot().items == () and reader.summary == ""


def _result(snapshot: Any, keep: int) -> CompactResult:
    kept = snapshot.model_copy(update={"items": snapshot.items[-keep:], "summary": "folded"})
    return CompactResult(snapshot=kept, outcome="compacted", stats=CompactStats(compressor="t"))


def test_ttl_expires_a_session_and_it_starts_again(
    redis_client: redis.Redis,  # noqa: F811
    key_prefix: str,  # noqa: F811
) -> None:
    memory = RedisMemory(redis_client, "brief", key_prefix=key_prefix, ttl=timedelta(seconds=0.3))
    memory.add_output_items([{"role": "assistant", "content": "x"}])
    keys = list(redis_client.scan_iter(match=f"{key_prefix}:*"))
    assert keys and all(0 < redis_client.pttl(k) <= 300 for k in keys)
    assert len(memory.snapshot().items) == 1
    deadline = time.monotonic() + 5
    while redis_client.exists(*keys) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert memory.snapshot().items == () and memory.version == 0
    memory.add_user_input("again")
    assert [item_text(i) for i in memory.items] == ["again"]


def test_without_ttl_nothing_expires(
    redis_client: redis.Redis,  # noqa: F811
    key_prefix: str,  # noqa: F811
) -> None:
    RedisMemory(redis_client, "kept", key_prefix=key_prefix).add_user_input("x")
    store = RedisSessionStore(redis_client, key_prefix=key_prefix)
    store.save(AgentSession(session_id="kept"))
    keys = list(redis_client.scan_iter(match=f"{key_prefix}:*"))
    # meta, active, history, the saved state, its journal, its revision, the saved sessions
    assert len(keys) == 7 and all(redis_client.pttl(k) == -1 for k in keys)


def test_incremental_saves_renew_the_ttl_of_the_state_its_journal_and_revision(
    redis_client: redis.Redis,  # noqa: F811
    key_prefix: str,  # noqa: F811
) -> None:
    store = RedisSessionStore(redis_client, key_prefix=key_prefix, ttl=2.0)
    session = AgentSession(session_id="s")
    store.save(session)  # the whole state
    tag = f"{key_prefix}:{{s}}"
    redis_client.pexpire(f"{tag}:state", 100)  # as if saved long ago
    redis_client.pexpire(f"{tag}:journal", 100)
    session.memory.add_user_input("a patch")
    store.save(session)
    assert redis_client.llen(f"{tag}:journal") == 2  # the base's id, then the patch
    for key in ("state", "journal", "revision"):
        assert 1000 < redis_client.pttl(f"{tag}:{key}") <= 2000
    time.sleep(0.2)
    assert [item_text(i) for i in store.load("s").memory.items] == ["a patch"]


def test_a_store_ttl_drops_expired_sessions_from_the_list(
    redis_client: redis.Redis,  # noqa: F811
    key_prefix: str,  # noqa: F811
) -> None:
    store = RedisSessionStore(redis_client, key_prefix=key_prefix, ttl=0.2)
    store.save(AgentSession(session_id="brief"))
    assert store.list() == ["brief"]
    deadline = time.monotonic() + 5
    while store.list() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.list() == []


@pytest.mark.parametrize("prefix", ["", "a b", "x{y}", "trail:", ":lead", "x" * 65, 42, "a::b"])
def test_bad_key_prefixes_are_refused(redis_client: redis.Redis, prefix: Any) -> None:  # noqa: F811
    with pytest.raises(ConfigError, match=f"key_prefix .* got {prefix!r}"):
        RedisMemory(redis_client, "s", key_prefix=prefix)
    with pytest.raises(ConfigError, match="key_prefix"):
        RedisSessionStore(redis_client, key_prefix=prefix)


@pytest.mark.parametrize("ttl", [0, -1, "10", True, timedelta(0)])
def test_bad_ttls_are_refused(redis_client: redis.Redis, ttl: Any) -> None:  # noqa: F811
    with pytest.raises(ConfigError, match="ttl must be a positive number"):
        RedisMemory(redis_client, "s", ttl=ttl)


def test_bad_clients_and_ids_are_refused(redis_url: str) -> None:  # noqa: F811
    with pytest.raises(ConfigError, match="decode_responses=False"):
        RedisMemory(redis.Redis.from_url(redis_url, decode_responses=True), "s")
    with pytest.raises(ConfigError, match=r"redis URL .* or a redis.Redis client"):
        RedisSessionStore(object())
    with pytest.raises(ConfigError, match="not a Redis URL"):
        RedisMemory("http://localhost", "s")
    with pytest.raises(ConfigError, match="non-empty string"):
        RedisMemory(redis_url, "")
    with pytest.raises(ConfigError, match="takes an AgentSession"):
        RedisSessionStore(redis_url).save(RedisMemory(redis_url, "s"))  # type: ignore[arg-type]


def test_an_unreachable_server_is_a_storage_error() -> None:
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    memory = RedisMemory(dead, "s")
    with pytest.raises(StorageError, match="cannot append to session 's' in Redis"):
        memory.add_user_input("x")
    with pytest.raises(StorageError, match="cannot save session 's' in Redis"):
        RedisSessionStore(dead).save(AgentSession(session_id="s"))


def test_memory_and_checkpoints_side_by_side_across_clients(
    redis_url: str,  # noqa: F811
    key_prefix: str,  # noqa: F811
) -> None:
    opened: list[RedisMemory] = []

    def factory(session_id: str) -> RedisMemory:  # a client of its own, as another process has
        opened.append(RedisMemory(redis_url, session_id, key_prefix=key_prefix))
        return opened[-1]

    store = RedisSessionStore(redis_url, key_prefix=key_prefix)
    session = AgentSession(factory("chat-1"), session_id="chat-1")
    session.memory.add_user_input("remember the blue door")
    store.save(session)
    session.memory.add_user_input("a later message")
    resumed = resume_session(store, "chat-1", factory)  # Redis moved past the checkpoint: kept
    both = ["remember the blue door", "a later message"]
    assert [item_text(i) for i in resumed.memory.items] == both
    fresh = AgentSession.from_state(store.load("chat-1"), factory("chat-2"))  # the checkpoint
    assert [item_text(i) for i in fresh.memory.items] == ["remember the blue door"]
    for memory in opened:
        memory.close()
    asyncio.run(store.aclose())


# -- asyncio, the agent loop, two processes -------------------------------------------------------


def test_the_asyncio_methods_share_the_stored_form(
    redis_url: str,  # noqa: F811
    key_prefix: str,  # noqa: F811
) -> None:
    import redis.asyncio

    store = RedisSessionStore(redis_url, key_prefix=key_prefix)
    async_client = redis.asyncio.Redis.from_url(redis_url)
    only_async = RedisSessionStore(async_client=async_client, key_prefix=key_prefix)

    async def main() -> list[Any]:
        try:
            return await steps()
        finally:
            await async_client.aclose()
            await store.aclose()

    async def steps() -> list[Any]:
        session = AgentSession(session_id="async-1", metadata={"via": "asyncio"})
        session.memory.add_user_input("from the loop")
        await only_async.asave(session)
        seen = [store.load("async-1").metadata, await store.alist()]
        store.save(AgentSession(session_id="sync-1"))
        loaded = await only_async.aload("sync-1")
        seen += [loaded.session_id, await only_async.adelete("sync-1"), await store.adelete("x")]
        return seen

    assert asyncio.run(main()) == [{"via": "asyncio"}, ["async-1"], "sync-1", True, False]
    store = RedisSessionStore(redis_url, key_prefix=key_prefix)
    assert store.list() == ["async-1"]
    store.close()
    with pytest.raises(ConfigError, match=r"await aload\(...\)"):
        only_async.load("async-1")
    sync_only = RedisSessionStore(redis.Redis.from_url(redis_url))
    with pytest.raises(ConfigError, match="needs an asyncio client"):
        asyncio.run(sync_only.aload("async-1"))


def test_an_agent_runs_on_redis_sync_and_async(
    redis_client: redis.Redis,  # noqa: F811
    key_prefix: str,  # noqa: F811
) -> None:
    def memory_factory(session_id: str) -> RedisMemory:
        return RedisMemory(redis_client, session_id, key_prefix=key_prefix)

    fake = FakeOpenAI([tool_call("add", {"a": 2, "b": 3}), text("5"), text("async hello")])
    store = RedisSessionStore(redis_client, key_prefix=key_prefix)
    agent = Agent("gpt-4o", fake.client(), tools=[add], memory_factory=memory_factory, store=store)
    session = agent.new_session()
    assert session.run("what is 2 + 3?").output == "5"
    again = memory_factory(session.session_id)  # what another process reads
    assert [i.type for i in again.items] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert store.load(session.session_id).memory.items == again.snapshot().items
    async_agent = Agent("gpt-4o", fake.async_client(), memory_factory=memory_factory, store=store)
    result = asyncio.run(async_agent.new_session().arun("hi"))
    assert result.output == "async hello"
    assert len(store.list()) == 2
    assert fake.requests[1]["messages"][-1]["content"] == "5"  # the tool output reached the model


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def _append_many(url: str, prefix: str, session_id: str, tag: str, count: int) -> None:
    memory = RedisMemory(url, session_id, key_prefix=prefix)
    for n in range(count):  # the process exits: its client goes with it
        memory.add_output_items(
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"{tag}{n}",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                }
            ]
        )
        memory.add_tool_output(f"{tag}{n}", f"{tag}-out-{n}")


def test_two_processes_append_to_one_session_and_lose_nothing(
    redis_url: str,  # noqa: F811
    key_prefix: str,  # noqa: F811
) -> None:
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_append_many, args=(redis_url, key_prefix, "shared", tag, 40))
        for tag in ("p", "q")
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [w.exitcode for w in workers] == [0, 0]
    history = RedisMemory(redis_url, "shared", key_prefix=key_prefix).history()
    assert [i.seq for i in history] == list(range(1, 161))
    for tag in ("p", "q"):
        outputs = [item_text(i) for i in history if item_text(i).startswith(f"{tag}-out-")]
        assert outputs == [f"{tag}-out-{n}" for n in range(40)]
