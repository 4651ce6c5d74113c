"""Sessions saved by an earlier compactkit load unchanged, and keep saving incrementally.

``data/journal-v3`` was written by compactkit at ebbdc9a (``stored_format_support``): a
``FileSessionStore`` directory (a base, a journal of patches written inside and outside a run,
the lease info) and an ``SQLSessionStore`` SQLite database, with the states they loaded as then
(``expected.json``: every field, the stored revision and times included). Later changes to how
a save writes its patch must keep reading these files exactly, and a save on top of them must
load back as the session's state.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from stored_format_support import SESSION_IDS

from compactkit.items import FunctionCall, Message
from compactkit.sessions import FileSessionStore, SessionState, resume_session
from compactkit.sql import SQLSessionStore

DATA = Path(__file__).parent / "data" / "journal-v3"
EXPECTED: dict[str, Any] = json.loads((DATA / "expected.json").read_text())


def comparable(state: SessionState) -> dict[str, Any]:
    return state.model_dump(mode="json", exclude={"updated_at", "revision"})


def open_store(kind: str, folder: Path) -> Any:
    if kind == "file":
        return FileSessionStore(folder / "files")
    return SQLSessionStore(f"sqlite:///{folder}/sessions.db")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the stored files (stores write beside them: leases, new patches)."""
    copy = tmp_path / "stored"
    shutil.copytree(DATA, copy)
    return copy


@pytest.mark.parametrize("session_id", SESSION_IDS)
@pytest.mark.parametrize("kind", ["file", "sql"])
def test_a_session_saved_by_an_earlier_compactkit_loads_field_for_field(
    kind: str, session_id: str, folder: Path
) -> None:
    store = open_store(kind, folder)
    loaded = store.load(session_id).model_dump(mode="json")
    assert loaded == EXPECTED[f"{kind}:{session_id}"]
    assert sorted(store.list()) == sorted(SESSION_IDS)


@pytest.mark.parametrize("session_id", SESSION_IDS)
@pytest.mark.parametrize("kind", ["file", "sql"])
def test_saves_on_top_of_an_earlier_journal_load_back_in_a_fresh_store(
    kind: str, session_id: str, folder: Path
) -> None:
    store = open_store(kind, folder)
    session = resume_session(store, session_id)
    lease = store.acquire(session_id)
    session.lease = lease
    for n in range(3):
        session.memory.add_user_input(f"resumed {n} ü")
        session.turn += 1
        store.save(session)  # the first writes a whole state, the next ones patches
        call_id = f"resumed_{n}"
        session.memory.add_output_items([FunctionCall(call_id=call_id, name="read")])
        session.memory.add_tool_output(call_id, "done")
        session.memory.add_output_items([Message(role="assistant", content=f"ok {n}")])
        session.step += 1
        store.save(session)
        assert comparable(open_store(kind, folder).load(session_id)) == comparable(session.state())
    store.release(lease)
    session.lease = None
    fresh = open_store(kind, folder).load(session_id)
    assert comparable(fresh) == comparable(session.state())
    assert fresh.revision == EXPECTED[f"{kind}:{session_id}"]["revision"] + 6
