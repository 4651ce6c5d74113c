"""A bound on the archive of the in-process memory and of the sessions a file store saves: the
oldest archived items are dropped past it, the count is reported and saved, and expanding a
dropped item raises ``ArchiveDroppedError`` — in this process and in a fresh one (the CLI)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import ConfigError, InMemoryMemory, Message
from compactkit.compressors import WindowedCompressor
from compactkit.errors import ArchiveDroppedError
from compactkit.sessions import AgentSession, FileSessionStore


def turns(memory: InMemoryMemory, start: int, stop: int) -> None:
    for k in range(start, stop):
        memory.add_user_input(f"step {k}: the build id is build-{k:04d}")
        memory.add_output_items([Message(role="assistant", content=f"noted build-{k:04d}")])


def archived(memory: InMemoryMemory) -> list[int]:
    active = {item.seq for item in memory.snapshot().items}
    return [item.seq or 0 for item in memory.history() if item.seq not in active]


def test_the_oldest_archived_items_go_first_and_expand_says_so() -> None:
    memory = InMemoryMemory(max_archived_items=5)
    turns(memory, 0, 10)  # seqs 1..20
    memory.compact(WindowedCompressor(max_items=4))  # folds 1..16
    assert archived(memory) == [12, 13, 14, 15, 16]
    assert memory.archive_dropped.count == 11
    assert [i.seq for i in memory.expand("#12-13")] == [12, 13]
    with pytest.raises(ArchiveDroppedError) as caught:
        memory.expand("#10-12")
    message = str(caught.value)
    assert (
        "#10\u201311" in message and "max_archived_items=5" in message and "11 dropped" in message
    )
    # a dropped item is not found either (the any-word fallback finds kept ones)
    assert all("0003" not in hit.text for hit in memory.recall("build-0003", limit=50))
    assert {hit.seq for hit in memory.recall("build-0006")} == {13, 14}
    turns(memory, 10, 14)
    memory.compact(WindowedCompressor(max_items=4))
    assert len(archived(memory)) == 5 and memory.archive_dropped.count == 19


def test_a_bytes_bound_keeps_the_newest_that_fit() -> None:
    memory = InMemoryMemory(max_archived_bytes=400)
    turns(memory, 0, 20)
    memory.compact(WindowedCompressor(max_items=4))
    kept = [memory.expand(f"#{seq}")[0] for seq in archived(memory)]
    sizes = [len(item.model_dump_json().encode()) for item in kept]
    assert 0 < sum(sizes) <= 400
    assert archived(memory) == list(range(37 - len(kept), 37))  # the newest, contiguous
    assert memory.archive_dropped.count == 36 - len(kept)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_a_bound_that_is_not_a_count_is_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_archived_items must be a whole number"):
        InMemoryMemory(max_archived_items=bad)  # type: ignore[arg-type]


def test_the_file_store_saves_the_bounded_archive_and_a_fresh_process_reads_it(
    tmp_path: Path,
) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession(InMemoryMemory(max_archived_items=3), session_id="s1")
    turns(session.memory, 0, 6)
    store.save(session)  # a whole save, then patches (the journal)
    session.memory.compact(WindowedCompressor(max_items=4))
    store.save(session)
    turns(session.memory, 6, 9)
    session.memory.compact(WindowedCompressor(max_items=4))
    store.save(session)
    state = store.load("s1")
    assert state.dropped_archive.count == 11 and len(state.history) == 3
    restored = AgentSession.from_state(state, InMemoryMemory(max_archived_items=3))
    assert isinstance(restored.memory, InMemoryMemory)
    assert restored.memory.archive_dropped == state.dropped_archive
    with pytest.raises(ArchiveDroppedError):
        restored.memory.expand("#2")
    shown = subprocess.run(
        [sys.executable, "-m", "compactkit", "expand", str(tmp_path), "s1", "#2"],
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 2 and "archive bound" in shown.stderr and "#2" in shown.stderr
    kept = subprocess.run(
        [sys.executable, "-m", "compactkit", "expand", str(tmp_path), "s1", "#14"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "noted build-0006" in kept


def test_an_unbounded_session_file_is_written_as_before(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = AgentSession(InMemoryMemory(), session_id="s1")
    turns(session.memory, 0, 6)
    session.memory.compact(WindowedCompressor(max_items=4))
    store.save(session)
    assert b"dropped_archive" not in store.path("s1").read_bytes()
    assert store.load("s1").dropped_archive.count == 0


@settings(deadline=None, max_examples=40)
@given(
    bound=st.integers(0, 8),
    rounds=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=1, max_size=6),
)
def test_the_archive_never_exceeds_the_bound_and_keeps_the_newest(
    bound: int, rounds: list[tuple[int, int]]
) -> None:
    memory = InMemoryMemory(max_archived_items=bound)
    unbounded = InMemoryMemory()
    step = 0
    for added, window in rounds:
        for mem in (memory, unbounded):
            turns(mem, step, step + added)
            mem.compact(WindowedCompressor(max_items=2 * window))
        step += added
        every = archived(unbounded)
        assert archived(memory) == every[len(every) - min(bound, len(every)) :]
        assert memory.archive_dropped.count == len(every) - len(archived(memory))
