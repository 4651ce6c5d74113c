"""Session stores: round trips, hostile ids, crash safety, concurrent savers."""

from __future__ import annotations

import multiprocessing
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.errors import ConfigError, StorageError
from compactkit.sessions import (
    FileSessionStore,
    InMemorySessionStore,
)
from compactkit.sessions.file import decode_session_id, encode_session_id
from compactkit.sessions.session import AgentSession, SessionState
from compactkit.testing.conformance import HOSTILE_IDS, SessionStoreConformance


def session(session_id: str = "s1", *inputs: str, **metadata: object) -> AgentSession:
    made = AgentSession(session_id=session_id, metadata=metadata)
    for text in inputs:
        made.memory.add_user_input(text)
    return made


class TestInMemoryStore(SessionStoreConformance):
    @pytest.fixture
    def store_factory(self) -> Any:
        return InMemorySessionStore


class TestFileStore(SessionStoreConformance):
    leases = True

    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> Any:
        folders = iter(range(1000))
        return lambda: FileSessionStore(tmp_path / f"sessions-{next(folders)}")


# -- the file store --------------------------------------------------------------------------


def test_hostile_ids_stay_in_the_directory_as_distinct_files(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    for session_id in HOSTILE_IDS:
        store.save(session(session_id))
    files = [p for p in tmp_path.iterdir() if p.name != ".leases"]  # the lease files' folder
    names = sorted(p.name for p in files)
    assert len(names) == len(HOSTILE_IDS) == len({n.casefold() for n in names})
    assert all(p.is_file() for p in files)
    assert "abc.json" in names and "%41bc.json" in names and "%63on.json" in names


@settings(deadline=None, max_examples=300)
@given(st.text(min_size=1, max_size=20))  # 20 characters always fit a file name
def test_file_names_are_reversible_and_safe(session_id: str) -> None:
    stem = encode_session_id(session_id)
    assert decode_session_id(stem) == session_id
    assert set(stem) <= set("abcdefghijklmnopqrstuvwxyz0123456789-_%ABCDEF")
    assert not stem.startswith(".")


def test_unencodable_ids_are_refused(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    with pytest.raises(ConfigError, match="too long"):
        store.save(session("ü" * 50))
    with pytest.raises(ConfigError, match="not valid Unicode"):
        store.path("\ud800")
    assert decode_session_id("%ZZ") is None and decode_session_id("ABC") is None


def test_files_are_private_and_no_temp_files_remain(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    store.save(session("s1", "secret"))
    store.save(session("s1", "secret", "more"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".leases", "s1.json"]
    assert sorted(p.name for p in (tmp_path / ".leases").iterdir()) == ["s1.info", "s1.lock"]
    if os.name == "posix":
        assert stat.S_IMODE((tmp_path / "s1.json").stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / ".leases").stat().st_mode) == 0o700


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"schema_version": 1, "session_id": "s1", "memo', "corrupt"),
        (b'{"schema_version": 4, "session_id": "s1", "new": {}}', "newer compactkit"),
    ],
)
def test_an_unreadable_file_raises_and_is_never_overwritten(
    tmp_path: Path, content: bytes, message: str
) -> None:
    store = FileSessionStore(tmp_path)
    path = store.path("s1")
    path.write_bytes(content)
    with pytest.raises(StorageError, match=message) as info:
        store.load("s1")
    assert str(path) in str(info.value)
    with pytest.raises(StorageError, match=f"{message}.*not overwriting it"):
        store.save(session("s1", "new"))
    assert path.read_bytes() == content
    assert store.list() == ["s1"]
    assert store.delete("s1") is True
    store.save(session("s1", "new"))
    assert store.load("s1").session_id == "s1"


def test_a_file_holding_another_session_is_refused(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    store.save(session("a"))
    os.replace(store.path("a"), store.path("b"))
    with pytest.raises(StorageError, match="holds session 'a', not 'b'"):
        store.load("b")


def test_list_ignores_files_that_are_not_sessions(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    store.save(session("s1"))
    for name in (".tmpabc.tmp", "notes.txt", "UPPER.json", "%ZZ.json"):
        (tmp_path / name).write_text("x")
    (tmp_path / "dir.json").mkdir()
    assert store.list() == ["s1"]


def test_a_failed_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileSessionStore(tmp_path)
    store.save(session("s1", "old"))
    before = store.path("s1").read_bytes()

    def crash(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(StorageError, match="No space left"):
        store.save(session("s1", "new"))
    assert store.path("s1").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".leases", "s1.json"]


def test_an_unusable_directory_raises_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StorageError, match="cannot create session directory"):
        FileSessionStore(blocker / "sessions")


def test_concurrent_savers_in_threads_never_tear_the_file(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    store.save(session("shared", "start"))
    stop = threading.Event()
    errors: list[BaseException] = []

    def save(worker: int) -> None:
        try:
            for n in range(15):
                store.save(session("shared", *[f"w{worker}-{n}"] * 20, worker=worker))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def read() -> None:
        try:
            while not stop.is_set():
                store.load("shared")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    savers = [threading.Thread(target=save, args=(w,)) for w in range(6)]
    for thread in savers:
        thread.start()
    for thread in savers:
        thread.join()
    stop.set()
    reader.join()
    assert errors == []
    assert store.load("shared").metadata["worker"] in range(6)
    assert store.list() == ["shared"]


def _save_in_process(directory: str, worker: int, rounds: int) -> None:
    store = FileSessionStore(directory)
    for n in range(rounds):
        store.save(session("shared", *[f"p{worker}-{n}"] * 50, worker=worker))


def test_concurrent_savers_in_processes_never_tear_the_file(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    store.save(session("shared", "start"))
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_save_in_process, args=(str(tmp_path), w, 25)) for w in range(4)
    ]
    for process in workers:
        process.start()
    loads = 0
    while any(p.is_alive() for p in workers):
        state = store.load("shared")  # never a torn or half-written file
        assert isinstance(state, SessionState)
        loads += 1
    for process in workers:
        process.join()
        assert process.exitcode == 0
    assert loads > 0
    assert store.load("shared").metadata["worker"] in range(4)
    assert store.list() == ["shared"]
