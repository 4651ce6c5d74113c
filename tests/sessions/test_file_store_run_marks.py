"""The file store keeps what a run's saves leave for the next one (the saving session object,
its mark, the revision and files saved) in the run, and hands it to the store when the run
ends: a save after the run still appends a patch, another session object saving in the run is
never written as a patch on top of the first one's, and a failed save leaves nothing a later
patch could be written on. Each case is read back by a second store object and by a second
process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compactkit.errors import ConcurrencyError, ConfigError
from compactkit.sessions import AgentSession, FileSessionStore, SessionState, resume_session

READER = """
import json, sys
from compactkit.sessions import FileSessionStore
state = FileSessionStore(sys.argv[1]).load(sys.argv[2])
print(json.dumps(state.model_dump(mode="json", exclude={"updated_at", "revision"})))
"""


def comparable(state: SessionState) -> dict[str, Any]:
    return state.model_dump(mode="json", exclude={"updated_at", "revision"})


def read_in_another_process(folder: Path, session_id: str) -> Any:
    read = subprocess.run(
        [sys.executable, "-c", READER, str(folder), session_id],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    return json.loads(read.stdout)


def base_identity(folder: Path, session_id: str = "s") -> tuple[int, int]:
    found = (folder / f"{session_id}.json").stat()
    return found.st_ino, found.st_mtime_ns


def test_a_save_after_a_run_appends_to_the_journal_the_run_wrote(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession(session_id="s")
    store.save(session)
    base = base_identity(tmp_path)
    for run in range(3):
        lease = store.acquire("s")
        session.lease = lease
        for n in range(4):
            session.memory.add_user_input(f"run {run} turn {n}")
            session.step += 1
            store.save(session)
        session.lease = None
        store.release(lease)
        session.memory.add_user_input(f"between runs {run}")
        store.save(session)  # outside a run: a patch on top of the run's last save
        assert base_identity(tmp_path) == base  # no save wrote a new base
        assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(session.state())
    assert read_in_another_process(tmp_path, "s") == comparable(session.state())
    assert FileSessionStore(tmp_path).load("s").revision == 1 + 3 * 5


def test_another_session_object_saving_in_the_run_is_never_patched_onto_the_first(
    tmp_path: Path,
) -> None:
    store = FileSessionStore(tmp_path)
    first = AgentSession(session_id="s")
    store.save(first)
    lease = store.acquire("s")
    first.lease = lease
    first.memory.add_user_input("from the first object")
    store.save(first)
    second = resume_session(store, "s")  # a copy at the current revision
    second.lease = lease
    second.memory.add_user_input("from the second object")
    store.save(second)  # not the run's last saver: written whole, from its own state
    assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(second.state())
    first.memory.add_user_input("the first object again")
    first.fenced_by_revision = True  # a loaded copy would be: the store moved past it
    with pytest.raises(ConcurrencyError):
        store.save(first)
    first.fenced_by_revision = False  # a session built by hand saves last-writer-wins
    store.save(first)
    assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(first.state())
    second.memory.add_user_input("the second object again")
    with pytest.raises(ConcurrencyError):  # resumed: fenced, and the first object saved since
        store.save(second)
    second.fenced_by_revision = False
    store.save(second)
    assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(second.state())
    second.lease = first.lease = None
    store.release(lease)
    assert read_in_another_process(tmp_path, "s") == comparable(second.state())


def test_after_a_failed_save_in_a_run_the_next_save_holds_the_whole_state(
    tmp_path: Path,
) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession(session_id="s")
    store.save(session)
    lease = store.acquire("s")
    session.lease = lease
    session.memory.add_user_input("saved")
    store.save(session)
    session.metadata["bad"] = float("nan")
    session.memory.add_user_input("not saved: the metadata is refused")
    with pytest.raises(ConfigError):
        store.save(session)
    del session.metadata["bad"]
    store.save(session)
    assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(session.state())
    session.memory.add_user_input("and a patch after it")
    store.save(session)
    session.lease = None
    store.release(lease)
    assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(session.state())
    assert read_in_another_process(tmp_path, "s") == comparable(session.state())


def test_what_a_run_saved_is_read_by_another_process_while_the_run_holds_its_lease(
    tmp_path: Path,
) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession(session_id="s")
    lease = store.acquire("s")
    session.lease = lease
    for n in range(5):
        session.memory.add_user_input(f"turn {n}")
        store.save(session)
        assert read_in_another_process(tmp_path, "s") == comparable(session.state())
    session.lease = None
    store.release(lease)
