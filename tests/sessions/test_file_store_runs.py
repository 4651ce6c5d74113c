"""The file store during a run: the run's saves keep the journal open (checked before every
append against the files on disk), and its lease info survives a write cut short. What a second
store object reads back is what the run saved."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from compactkit import Agent
from compactkit.errors import LeaseLostError, StorageError
from compactkit.sessions import AgentSession, FileSessionStore, SessionState
from compactkit.testing import FakeOpenAI


def comparable(state: SessionState) -> dict[str, Any]:
    return state.model_dump(mode="json", exclude={"updated_at", "revision"})


def leased_session(store: FileSessionStore, saves: int) -> AgentSession:
    """A session saved whole, then under a run's lease ``saves`` times (patches)."""
    session = AgentSession(session_id="s")
    store.save(session)
    session.lease = store.acquire("s")
    for n in range(saves):
        session.memory.add_user_input(f"leased {n}")
        store.save(session)
    return session


def test_every_save_of_a_run_reads_back_in_a_second_store(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = leased_session(store, 0)
    sizes = []
    for n in range(20):
        session.memory.add_user_input(f"turn {n}")
        store.save(session)
        sizes.append((tmp_path / "s.jnl").stat().st_size)
        assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(session.state())
    assert sizes == sorted(set(sizes))  # each save appended one line to the journal
    assert session.lease is not None
    store.release(session.lease)
    session.memory.add_user_input("after the run")
    with pytest.raises(LeaseLostError):  # a released lease's saves are refused
        store.save(session)
    session.lease = None
    store.save(session)
    assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(session.state())


def test_a_session_deleted_during_a_run_is_saved_whole_not_into_the_removed_journal(
    tmp_path: Path,
) -> None:
    store = FileSessionStore(tmp_path)
    session = leased_session(store, 3)
    assert FileSessionStore(tmp_path).delete("s")  # delete takes no lease
    session.memory.add_user_input("after the delete")
    store.save(session)
    assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(session.state())


def test_a_journal_removed_during_a_run_is_not_appended_to_unseen(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = leased_session(store, 3)
    (tmp_path / "s.jnl").unlink()  # by hand: the run's open journal is no file any more
    session.memory.add_user_input("after the removal")
    store.save(session)
    assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(session.state())


def test_a_base_renamed_in_during_a_run_is_never_patched(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession(session_id="s")
    session.memory.add_user_input("first")
    store.save(session)
    older = (tmp_path / "s.json").read_bytes()
    session.memory.add_user_input("second")
    FileSessionStore(tmp_path).save(session)  # another store object: a whole base again
    session.lease = store.acquire("s")
    for n in range(3):
        session.memory.add_user_input(f"leased {n}")
        store.save(session)
    # Someone renames an older base in (a backup put back) and leaves the journal: the
    # journal's patches do not follow that base, so the files no longer load, and the save
    # says so instead of appending a patch on top of a base it does not extend.
    journal = (tmp_path / "s.jnl").read_bytes()
    backup = tmp_path / "backup.tmp"
    backup.write_bytes(older)
    os.replace(backup, tmp_path / "s.json")
    session.memory.add_user_input("after the restore")
    with pytest.raises(StorageError, match="not overwriting it"):
        store.save(session)
    assert (tmp_path / "s.jnl").read_bytes() == journal
    assert session.lease is not None
    store.release(session.lease)


def test_two_session_objects_under_one_run_lease_never_patch_each_others_files(
    tmp_path: Path,
) -> None:
    store = FileSessionStore(tmp_path)
    first = leased_session(store, 2)
    second = AgentSession(session_id="s")  # not loaded: last writer wins, no revision check
    second.lease = first.lease
    for n in range(4):
        for session, who in ((first, "a"), (second, "b")):
            session.memory.add_user_input(f"{who}{n}")
            store.save(session)  # last writer wins, as outside a run
            assert comparable(FileSessionStore(tmp_path).load("s")) == comparable(session.state())
    assert first.lease is not None
    store.release(first.lease)


@pytest.mark.parametrize("half", [0, 1])
def test_a_lease_info_write_cut_short_still_gives_the_next_run_a_larger_token(
    tmp_path: Path, half: int
) -> None:
    # The info file holds its last two records; a crash mid-write spoils one of them.
    store = FileSessionStore(tmp_path)
    agent = Agent("gpt-4o", FakeOpenAI(default="ok").client(), store=store, compaction=False)
    session = agent.new_session("s")
    session.run("one")
    session.run("two")
    last = store.acquire("s")
    store.release(last)
    info = tmp_path / ".leases" / "s.info"
    data = bytearray(info.read_bytes())
    start = len(data) // 2 * half
    data[start + 20 : start + 60] = b"\x00" * 40  # torn: half old bytes, half new
    info.write_bytes(bytes(data))
    lease = FileSessionStore(tmp_path).acquire("s")
    assert lease.token == last.token + 1
    assert lease.revision == FileSessionStore(tmp_path).load("s").revision == session.revision


def test_a_lease_info_file_removed_during_a_run_is_written_again_at_its_end(
    tmp_path: Path,
) -> None:
    store = FileSessionStore(tmp_path)
    session = leased_session(store, 2)
    (tmp_path / ".leases" / "s.info").unlink()
    assert session.lease is not None
    store.release(session.lease)
    lease = FileSessionStore(tmp_path).acquire("s")
    assert lease.token == session.lease.token + 1
    assert lease.revision == session.revision


def test_a_lease_info_file_replaced_during_a_run_gets_the_run_s_end_written_into_it(
    tmp_path: Path,
) -> None:
    """A run writes its info on the file it opened at its start; a file put in its place by
    hand meanwhile (an older copy renamed over it) is the one its end goes into, so the next
    run's token is still larger than this run's."""
    store = FileSessionStore(tmp_path)
    session = leased_session(store, 1)
    assert session.lease is not None
    store.release(session.lease)
    info = tmp_path / ".leases" / "s.info"
    older = tmp_path / "older.info"
    older.write_bytes(info.read_bytes())
    session.lease = store.acquire("s")
    session.memory.add_user_input("during the run")
    store.save(session)
    os.replace(older, info)  # the token it says is the run's before
    store.release(session.lease)
    lease = FileSessionStore(tmp_path).acquire("s")
    assert lease.token == session.lease.token + 1
    assert lease.revision == session.revision


def test_a_run_whose_journal_outgrows_the_base_folds_it_and_every_save_reads_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fold over the files the run's own last save left takes the revision from that save.
    monkeypatch.setattr("compactkit.sessions.journal.JOURNAL_MIN_BYTES", 0)
    store = FileSessionStore(tmp_path)
    session = leased_session(store, 0)
    folds = 0
    for n in range(40):
        session.memory.add_user_input(f"turn {n} " + "x" * 200)
        store.save(session)
        folds += not (tmp_path / "s.jnl").exists()
        loaded = FileSessionStore(tmp_path).load("s")
        assert loaded.revision == session.revision
        assert comparable(loaded) == comparable(session.state())
    assert folds > 1
    assert session.lease is not None
    store.release(session.lease)
    assert FileSessionStore(tmp_path).acquire("s").revision == session.revision


def test_a_fold_over_a_base_corrupted_during_the_run_leaves_it_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("compactkit.sessions.journal.JOURNAL_MIN_BYTES", 0)
    store = FileSessionStore(tmp_path)
    session = leased_session(store, 0)
    session.memory.add_user_input("x" * 4000)  # the next save's patch outgrows the base
    store.save(session)
    assert (tmp_path / "s.jnl").exists()
    corrupt = b'{"schema_version": 3, "memory": '  # cut short by hand
    (tmp_path / "s.json").write_bytes(corrupt)
    session.memory.add_user_input("after the damage")
    with pytest.raises(StorageError, match="not overwriting it"):
        store.save(session)
    assert (tmp_path / "s.json").read_bytes() == corrupt
    assert session.lease is not None
    store.release(session.lease)
