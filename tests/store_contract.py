"""The session-store contract every store passes (run on the local stores in
sessions/test_stores.py and on SQL in sql/test_sql_store.py)."""

from __future__ import annotations

from typing import Any

import pytest

from compactkit.errors import StorageError
from compactkit.sessions import SessionNotFoundError, SessionStore
from compactkit.sessions.session import AgentSession

HOSTILE_IDS = [
    "a/b",
    "a:b",
    "a_b",
    "../../etc/passwd",
    "..",
    ".",
    ".hidden",
    "über",
    "會話",
    "🙂",
    "CON",
    "con",
    "Abc",
    "abc",
    "%41",
    "A",
    "a\x00b",
    " spaced id ",
    "back\\slash",
    "x" * 80,
]


def session(session_id: str = "s1", *inputs: str, **metadata: Any) -> AgentSession:
    made = AgentSession(session_id=session_id, metadata=metadata)
    for text in inputs:
        made.memory.add_user_input(text)
    return made


# -- every store: the contract, run here on the local stores and in test_sql_store.py on SQL --


class StoreContract:
    """What every ``SessionStore`` does. A subclass provides the ``store`` fixture and may
    override ``hostile_ids`` with the ids its backend must round-trip."""

    hostile_ids: list[str] = HOSTILE_IDS

    def test_save_load_list_delete(self, store: SessionStore) -> None:
        assert isinstance(store, SessionStore)
        assert store.list() == []
        store.save(session("b", "hello", owner="ada"))
        store.save(session("a"))
        assert store.list() == ["a", "b"]
        state = store.load("b")
        assert state.metadata == {"owner": "ada"}
        assert [i.text for i in state.memory.items] == ["hello"]  # type: ignore[union-attr]
        assert store.delete("b") is True
        assert store.delete("b") is False
        assert store.list() == ["a"]

    def test_loading_an_unknown_session_raises_a_clear_error(self, store: SessionStore) -> None:
        with pytest.raises(SessionNotFoundError, match="no saved session with id 'ghost'") as info:
            store.load("ghost")
        assert isinstance(info.value, KeyError) and isinstance(info.value, StorageError)
        assert info.value.session_id == "ghost"

    def test_a_save_replaces_the_earlier_state(self, store: SessionStore) -> None:
        live = session("s1", "one")
        store.save(live)
        live.memory.add_user_input("two")
        live.turn = 1
        assert len(store.load("s1").memory.items) == 1  # a saved state is a copy
        store.save(live)
        state = store.load("s1")
        assert (len(state.memory.items), state.turn) == (2, 1)

    def test_hostile_ids_round_trip(self, store: SessionStore) -> None:
        for session_id in self.hostile_ids:
            store.save(session(session_id, session_id))
        assert store.list() == sorted(self.hostile_ids)
        for session_id in self.hostile_ids:
            state = store.load(session_id)
            assert state.session_id == session_id
            assert state.memory.items[0].text == session_id  # type: ignore[union-attr]
