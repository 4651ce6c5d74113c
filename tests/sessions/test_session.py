"""Sessions: isolation, the saved form, explicit resume."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.errors import ConfigError, StorageError
from compactkit.items.snapshot import CompactResult, CompactStats
from compactkit.memory import InMemoryMemory
from compactkit.sessions import InMemorySessionStore, SessionNotFoundError
from compactkit.sessions.session import (
    SESSION_SCHEMA_VERSION,
    AgentSession,
    SessionState,
    new_session,
    resume_session,
)


def busy_session() -> AgentSession:
    """A session whose memory has a summary, a pin, a masked output and archived items."""
    session = AgentSession(session_id="s1", turn=2, step=5, metadata={"user": "ada", "n": [1]})
    memory = session.memory
    memory.add_user_input("find the bug")
    memory.add_output_items(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "grep", "arguments": "{}"},
                    }
                ],
            }
        ]
    )
    memory.add_tool_output("c1", "match at line 3 " * 50)
    memory.add_user_input("fix it")
    memory.pin(4)
    snapshot = memory.snapshot()
    masked = snapshot.items[2].model_copy(update={"output": "[masked]"})
    new = snapshot.model_copy(
        update={"summary": "user asked", "items": (*snapshot.items[1:2], masked, snapshot.items[3])}
    )
    memory.apply(
        CompactResult(snapshot=new, outcome="compacted", stats=CompactStats(compressor="t"))
    )
    return session


def test_a_session_gets_a_fresh_unique_id_and_its_own_memory() -> None:
    one, two = AgentSession(), AgentSession()
    assert one.session_id != two.session_id and len(one.session_id) == 32
    assert isinstance(one.memory, InMemoryMemory) and one.memory is not two.memory


@pytest.mark.parametrize("bad", ["", 7])
def test_a_session_id_must_be_non_empty_text(bad: object) -> None:
    with pytest.raises(ConfigError, match="non-empty string"):
        AgentSession(session_id=bad)  # type: ignore[arg-type]


def test_a_memory_serves_one_session() -> None:
    memory = InMemoryMemory()
    AgentSession(memory, session_id="a")
    AgentSession(memory, session_id="a")  # the same session again is fine
    with pytest.raises(ConfigError, match="already belongs to session 'a'"):
        AgentSession(memory, session_id="b")


def test_new_session_refuses_a_factory_that_returns_a_memory_twice() -> None:
    shared = InMemoryMemory()
    first = new_session(lambda session_id: shared)
    with pytest.raises(ConfigError, match=f"already returned for session '{first.session_id}'"):
        new_session(lambda session_id: shared)


def test_new_session_refuses_a_memory_that_already_holds_state() -> None:
    database: dict[str, InMemoryMemory] = {}

    def fixed_id_factory(session_id: str) -> InMemoryMemory:
        # a "persistent" memory that ignores the id it is given
        memory = InMemoryMemory()
        if "fixed" in database:
            memory.restore(database["fixed"].snapshot())
        database["fixed"] = memory
        return memory

    session = new_session(fixed_id_factory)
    session.memory.add_user_input("private")
    with pytest.raises(ConfigError, match=r"already holds state .* resume_session"):
        new_session(fixed_id_factory)


def test_a_factory_that_returns_no_memory_is_a_config_error() -> None:
    # Used to fail with AttributeError ('NoneType' object has no attribute 'snapshot'); a
    # factory that forgets its return statement is a common slip.
    def forgetful(session_id: str) -> None:
        InMemoryMemory()

    with pytest.raises(ConfigError, match="memory_factory returned NoneType, not an AgentMemory"):
        new_session(forgetful)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="not an AgentMemory"):
        AgentSession({"items": []})  # type: ignore[arg-type]
    store = InMemorySessionStore()
    store.save(AgentSession(session_id="s"))
    with pytest.raises(ConfigError, match="not an AgentMemory"):
        resume_session(store, "s", forgetful)  # type: ignore[arg-type]


def test_new_session_passes_the_new_id_to_the_factory() -> None:
    seen: list[str] = []
    session = new_session(lambda session_id: seen.append(session_id) or InMemoryMemory())
    assert seen == [session.session_id]
    assert new_session(session_id="chosen").session_id == "chosen"


def test_memories_that_are_gone_free_their_binding() -> None:
    ids = set()
    for n in range(50):  # a collected memory's id gets reused: no false refusals
        memory = InMemoryMemory()
        ids.add(id(memory))
        AgentSession(memory, session_id=f"s{n}")
        del memory
    assert len(ids) < 50


def test_the_saved_form_round_trips() -> None:
    session = busy_session()
    state = session.state()
    assert state.schema_version == SESSION_SCHEMA_VERSION
    assert [i.seq for i in state.history] == [1, 3]  # archived + the masked output's original
    loaded = SessionState.from_json(state.to_json())
    assert loaded == state
    resumed = AgentSession.from_state(loaded)
    assert resumed.session_id == "s1" and (resumed.turn, resumed.step) == (2, 5)
    assert resumed.metadata == {"user": "ada", "n": [1]}
    assert resumed.created_at == session.created_at
    assert resumed.memory.items == session.memory.items
    assert resumed.memory.history() == session.memory.history()
    assert resumed.memory.version > session.memory.version


def test_metadata_must_be_json() -> None:
    session = AgentSession(metadata={"when": datetime.now(timezone.utc)})
    with pytest.raises(ConfigError, match="cannot be saved"):
        session.state()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "corrupt: not JSON"),
        (b"[]", "no integer 'schema_version'"),
        (b'{"schema_version": true}', "no integer 'schema_version'"),
        (b'{"schema_version": 1, "session_id": "x"}', "corrupt: .* invalid fields"),
        (b'{"schema_version": 99, "whatever": 1}', "newer compactkit .* version 99"),
    ],
)
def test_unreadable_states_raise_storage_errors(data: bytes, message: str) -> None:
    with pytest.raises(StorageError, match=message):
        SessionState.from_json(data, source="test data")


def test_resume_is_explicit_and_uses_the_memory_factory() -> None:
    store = InMemorySessionStore()
    session = busy_session()
    store.save(session)
    made: list[InMemoryMemory] = []

    def factory(session_id: str) -> InMemoryMemory:
        made.append(InMemoryMemory(summary_role="user"))
        return made[-1]

    resumed = resume_session(store, "s1", factory)
    assert resumed.memory is made[0] and resumed.memory.items[0].role == "user"
    again = AgentSession.resume(store, "s1")
    assert again.memory.snapshot().items == session.memory.snapshot().items
    with pytest.raises(SessionNotFoundError, match="no saved session with id 'nope'"):
        resume_session(store, "nope")


@settings(deadline=None, max_examples=50)
@given(
    session_id=st.text(min_size=1),
    metadata=st.dictionaries(
        st.text(),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(),
            lambda inner: (
                st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3)
            ),
            max_leaves=8,
        ),
        max_size=4,
    ),
    inputs=st.lists(st.text(), max_size=5),
)
def test_any_session_round_trips_through_json(
    session_id: str, metadata: dict[str, object], inputs: list[str]
) -> None:
    session = AgentSession(session_id=session_id, metadata=metadata)
    for text in inputs:
        session.memory.add_user_input(text)
    data = session.state().to_json()
    json.loads(data)
    resumed = AgentSession.from_state(SessionState.from_json(data))
    assert resumed.metadata == metadata
    assert resumed.memory.items == session.memory.items
