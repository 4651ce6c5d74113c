"""The session that ``tests/sessions/data/journal-v3`` holds: the saves that wrote it, replayed
by the same steps by ``write_journal_fixture`` (run once by hand, with compactkit at ebbdc9a).

Kept so that a reader can see what the stored files contain; the test of the stored format
(``test_stored_journal_format.py``) reads the files as they were written then, never rewrites
them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from compactkit.items import (
    FunctionCall,
    ImagePart,
    Message,
    RawPart,
    Reasoning,
    TextPart,
)
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot
from compactkit.memory import InMemoryMemory
from compactkit.sessions import FileSessionStore
from compactkit.sessions.session import AgentSession

SESSION_IDS = ("s1", "Über/x 2")


def _fold(session: AgentSession, keep: int, text: str) -> None:
    snapshot = session.memory.snapshot()
    items = tuple(snapshot.items)
    result = CompactResult(
        snapshot=MemorySnapshot(
            summary=(snapshot.summary + " " + text).strip(),
            items=items[len(items) - keep :],
            version=snapshot.version,
        ),
        folded=items[: len(items) - keep],
        outcome="compacted",
        stats=CompactStats(compressor="test", items_before=len(items), items_after=keep),
    )
    assert session.memory.apply(result)


def _replace_first_user(session: AgentSession, text: str) -> None:
    snapshot = session.memory.snapshot()
    items = list(snapshot.items)
    for index, item in enumerate(items):
        if isinstance(item, Message) and item.role == "user":
            items[index] = item.model_copy(update={"content": text})
            break
    result = CompactResult(
        snapshot=MemorySnapshot(summary=snapshot.summary, items=items, version=snapshot.version),
        outcome="compacted",
        stats=CompactStats(compressor="test"),
    )
    assert session.memory.apply(result)


def play_saves(session: AgentSession, stores: list[Any]) -> None:
    """The saves the fixture holds: appends of every kind of item, metadata, folds (with an
    archive bound that drops), a replacement, pins, a restore, a clear — some inside a run
    (a lease held, the file store's journal kept open), some outside one."""
    memory = session.memory

    def save() -> None:
        for store in stores:
            store.save(session)

    save()
    for turn in range(6):
        memory.add_user_input(f"question {turn}: naïve café ü — 日本")
        session.turn += 1
        save()
        call_id = f"call_{turn}"
        memory.add_output_items(
            [
                Reasoning(format="responses", payload={"id": f"rs_{turn}", "summary": []}),
                FunctionCall(call_id=call_id, name="read", arguments='{"path": "a\\"b.py"}'),
            ]
        )
        memory.add_tool_output(call_id, f"line 1\nline 2 {turn}\ttab")
        session.step += 1
        session.metadata["turn"] = turn
        session.metadata["ratio"] = turn / 3
        session.metadata["names"] = ["Ada", "Grace", "ü"]
        save()
        memory.add_output_items(
            [
                Message(
                    role="assistant",
                    content=(
                        TextPart(text=f"answer {turn}"),
                        ImagePart(url="https://example.test/a.png", detail="low", width=3),
                        RawPart(format="chat", data={"type": "audio", "n": 1.5}),
                    ),
                    extra={"status": "done"},
                )
            ]
        )
        session.step += 1
        save()
        if turn in (2, 4):
            _fold(session, 3, f"summary to turn {turn}")
            save()
    _replace_first_user(session, "replaced question")
    save()
    seqs = [item.seq for item in memory.snapshot().items]
    memory.pin(seqs[0] or 0)
    save()
    memory.unpin(seqs[0] or 0)
    memory.pin(seqs[-1] or 0)
    save()
    earlier = stores[0].load(session.session_id)
    memory.add_user_input("after the restore point")
    save()
    memory.restore(earlier.memory, history=earlier.history)
    save()
    memory.add_user_input("one more")
    save()


def write_journal_fixture(folder: Path) -> None:
    """Write ``folder``: a file store, an SQLite database and the states they load as."""
    from compactkit.sql import SQLSessionStore

    folder.mkdir(parents=True)
    files = FileSessionStore(folder / "files")
    sql = SQLSessionStore(f"sqlite:///{folder}/sessions.db")
    expected: dict[str, Any] = {}
    for number, session_id in enumerate(SESSION_IDS):
        memory = InMemoryMemory(max_archived_items=4) if number == 0 else InMemoryMemory()
        session = AgentSession(memory, session_id=session_id, metadata={"user": "ada"})
        if number == 0:  # the first session's saves run inside a run's lease
            files_lease = files.acquire(session_id)
            session.lease = files_lease
            play_saves(session, [files])
            files.release(files_lease)
            session.lease = None
            play_saves_sql = AgentSession(
                InMemoryMemory(max_archived_items=4), session_id=session_id, metadata={}
            )
            play_saves(play_saves_sql, [sql])
            expected[f"sql:{session_id}"] = play_saves_sql.state().model_dump(mode="json")
        else:
            play_saves(session, [files, sql])
            expected[f"sql:{session_id}"] = session.state().model_dump(mode="json")
        expected[f"file:{session_id}"] = session.state().model_dump(mode="json")
        for kind, store in (("file", files), ("sql", sql)):
            loaded = store.load(session_id).model_dump(mode="json")
            want = dict(expected[f"{kind}:{session_id}"])
            assert {k: v for k, v in loaded.items() if k not in ("updated_at", "revision")} == {
                k: v for k, v in want.items() if k not in ("updated_at", "revision")
            }
            expected[f"{kind}:{session_id}"] = loaded  # with the stored revision and time
    sql.engine.dispose()
    (folder / "expected.json").write_text(
        json.dumps(expected, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    )


if __name__ == "__main__":
    write_journal_fixture(Path(sys.argv[1]))
