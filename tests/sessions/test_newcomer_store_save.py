"""Saving the memory (or an id) instead of its session is a ``ConfigError`` saying what to
pass, not an ``AttributeError`` from inside the store; nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from compactkit import (
    AgentSession,
    ConfigError,
    FileSessionStore,
    InMemoryMemory,
    InMemorySessionStore,
    SessionStore,
)


@pytest.fixture(params=["file", "memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    if request.param == "sqlite":
        from compactkit import SQLSessionStore

        return SQLSessionStore(f"sqlite:///{tmp_path / 'agent.db'}")
    return FileSessionStore(tmp_path) if request.param == "file" else InMemorySessionStore()


def test_saving_a_memory_names_the_session_to_wrap_it_in(store: SessionStore) -> None:
    memory = InMemoryMemory()
    memory.add_user_input("hi")
    with pytest.raises(ConfigError, match=r"AgentSession\(memory=memory\)"):
        store.save(memory)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"store\.load\(session_id\)"):
        store.save("abc")  # type: ignore[arg-type]
    assert store.list() == []
    session = AgentSession(memory)
    store.save(session)
    assert store.list() == [session.session_id]
