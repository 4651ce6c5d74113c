"""A save killed with SIGKILL leaves its temporary file; opening the store removes it (issue 17),
while the temporary files of savers that are still running are left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from compactkit.sessions import AgentSession
from compactkit.sessions.file import FileSessionStore

pytestmark = pytest.mark.skipif(os.name == "nt", reason="SIGKILL and pid probes are POSIX")

SAVER = textwrap.dedent(
    """
    import os, sys, time
    from compactkit.sessions import AgentSession
    from compactkit.sessions.file import FileSessionStore

    store = FileSessionStore(sys.argv[1])
    session = AgentSession(session_id="s1")
    session.memory.add_user_input("first checkpoint")
    store.save(session)
    session.memory.add_user_input("second checkpoint, never finished")
    real_fsync = os.fsync

    def stuck(fd):  # the temp file is written: hang before the rename, like a killed save
        print("writing", flush=True)
        time.sleep(600)

    os.fsync = stuck
    FileSessionStore(sys.argv[1]).save(session)  # a new store object writes a whole state
    """
)


def temp_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_killed_saves_temp_file_is_removed_on_open(tmp_path: Path) -> None:
    saver = subprocess.Popen(
        [sys.executable, "-c", SAVER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert saver.stdout is not None and saver.stdout.readline() == "writing\n"
        assert len(temp_files(tmp_path)) == 1  # the save is mid-write: its temp file is there
        store = FileSessionStore(tmp_path)
        assert store.removed_temp_files == 0  # a live saver's file is never touched
        assert len(temp_files(tmp_path)) == 1
    finally:
        saver.send_signal(signal.SIGKILL)
        saver.wait(timeout=30)
        if saver.stdout is not None:
            saver.stdout.close()
    assert len(temp_files(tmp_path)) == 1  # kill -9: the litter stays behind
    store = FileSessionStore(tmp_path)  # open after the crash
    assert store.removed_temp_files == 1 and temp_files(tmp_path) == []
    restored = AgentSession.from_state(store.load("s1"))  # the previous checkpoint is intact
    assert [i.text for i in restored.memory.items] == ["first checkpoint"]
    assert store.list() == ["s1"]


def test_old_temp_files_of_unknown_writers_are_removed_and_recent_ones_kept(
    tmp_path: Path,
) -> None:
    old = tmp_path / ".tmp-otherhost-123-abc.tmp"
    recent = tmp_path / ".tmp-otherhost-124-def.tmp"
    legacy = tmp_path / ".x1y2z3.tmp"  # an older compactkit's name: only age tells
    mine = tmp_path / "notes.tmp"  # not a hidden temp file: not ours
    for path in (old, recent, legacy, mine):
        path.write_text("{")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    os.utime(legacy, (two_hours_ago, two_hours_ago))
    store = FileSessionStore(tmp_path)
    assert store.removed_temp_files == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([recent.name, mine.name])
