"""``compactkit inspect``: a stored session, the session list, and the exit codes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from sql_support import sqlite_database

from compactkit.cli import main
from compactkit.items import FunctionCall, Message
from compactkit.items.snapshot import CompactResult, CompactStats
from compactkit.sessions.session import AgentSession
from compactkit.sql.memory import SQLMemory
from compactkit.sql.store import SQLSessionStore


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A database with session 'agent-1' (compacted once) and 'agent-2' (saved by a store)."""
    url = sqlite_database(tmp_path).url
    memory = SQLMemory(url, "agent-1")
    memory.add_user_input("read the config")
    memory.add_output_items([FunctionCall(call_id="c1", name="cat", arguments='{"p": "a.toml"}')])
    memory.add_tool_output("c1", "x = 1")
    memory.add_output_items([Message(role="assistant", content="x is 1")])
    snapshot = memory.snapshot()
    kept = snapshot.model_copy(update={"items": snapshot.items[3:], "summary": "read a.toml"})
    stats = CompactStats(
        compressor="summary", tokens_before=90, tokens_after=20, details={"model": "gpt-x"}
    )
    memory.apply(CompactResult(snapshot=kept, outcome="compacted", stats=stats))
    memory.pin(4)
    SQLSessionStore(url).save(AgentSession(session_id="agent-2"))
    return url


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_session_as_json(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "inspect", url, "agent-1", "--json")
    assert code == 0
    report: dict[str, Any] = json.loads(out)
    assert set(report) == {
        "session_id", "version", "created_at", "updated_at", "saved_state",
        "summary", "active", "archived", "compactions",
    }  # fmt: skip
    assert (report["session_id"], report["version"], report["summary"]) == (
        "agent-1",
        6,
        "read a.toml",
    )
    assert report["active"] == [
        {"seq": 4, "pinned": True, "type": "message", "role": "assistant", "content": "x is 1"}
    ]
    assert [i["seq"] for i in report["archived"]] == [1, 2, 3]
    (compaction,) = report["compactions"]
    assert compaction["strategy"] == "summary" and compaction["model"] == "gpt-x"
    assert (compaction["first_seq"], compaction["last_seq"], compaction["archived"]) == (1, 3, 3)
    assert (compaction["tokens_before"], compaction["tokens_after"]) == (90, 20)
    assert compaction["outcome"] == "compacted" and compaction["undone_at"] is None


def test_a_session_as_text_is_a_timeline(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "inspect", url, "agent-1")
    assert code == 0
    lines = out.splitlines()
    assert "1 active, 3 archived, 1 compactions" in out
    timeline = [line for line in lines if line.startswith((" ~#", "  #", "   -- "))]
    assert timeline == [
        " ~#1 user      read the config",
        ' ~#2 call      cat({"p": "a.toml"})',
        " ~#3 tool      x = 1",
        timeline[3],
        "  #4 assistant (pinned) x is 1",
    ]  # oldest first; the compaction right after the span it folded
    assert timeline[3].startswith("   -- compaction #1 ")
    assert "summary compacted: folded #1-#3 (3 archived), items 4 -> 1, tokens 90 -> 20" in out
    assert out.endswith("summary the model sees now (11 chars):\n  read a.toml\n")


def test_compactions_are_listed_newest_first(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    memory = SQLMemory(url, "agent-1")
    memory.undo_last_compaction()
    failed = CompactResult(
        snapshot=memory.snapshot(),
        outcome="failed",
        error="summarizer unreachable",
        stats=CompactStats(compressor="summary"),
    )
    memory.apply(failed)
    _, out, _ = run(capsys, "inspect", url, "agent-1", "--json")
    compactions = json.loads(out)["compactions"]
    assert [c["outcome"] for c in compactions] == ["failed", "compacted"]
    assert compactions[0]["error"] == "summarizer unreachable"
    assert compactions[1]["undone_at"] is not None


def test_the_session_list(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "inspect", url, "--list", "--json")
    assert code == 0
    sessions = json.loads(out)["sessions"]
    assert [s["session_id"] for s in sessions] == ["agent-1", "agent-2"]
    assert set(sessions[0]) == {
        "session_id", "version", "active_items", "archived_items", "compactions",
        "saved_state", "created_at", "updated_at",
    }  # fmt: skip
    assert (sessions[0]["active_items"], sessions[0]["archived_items"]) == (1, 3)
    assert (sessions[0]["saved_state"], sessions[1]["saved_state"]) == (False, True)
    code, out, _ = run(capsys, "inspect", url, "--list")
    assert code == 0 and out.splitlines()[1].split()[:5] == ["agent-1", "6", "1", "3", "1"]


def test_a_custom_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = sqlite_database(tmp_path).url
    SQLMemory(url, "s", table_prefix="bot_").add_user_input("hi")
    code, out, _ = run(capsys, "inspect", url, "--list", "--prefix", "bot_", "--json")
    assert code == 0 and [s["session_id"] for s in json.loads(out)["sessions"]] == ["s"]
    code, _, err = run(capsys, "inspect", url, "--list")
    assert code == 2 and "no compactkit tables with prefix 'compactkit_'" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["ghost"], "no session 'ghost'"),
        ([], "give either a SESSION_ID or --list"),
        (["agent-1", "--list"], "give either a SESSION_ID or --list"),
        (["agent-1", "--prefix", "bad-prefix"], "table_prefix 'bad-prefix'"),
    ],
)
def test_bad_input_exits_2(
    url: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, "inspect", url, *argv)
    assert (code, out) == (2, "")
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_missing_database_file_is_bad_input_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "inspect", f"sqlite:///{tmp_path}/absent.db", "--list")
    assert code == 2 and "no SQLite database file" in err
    assert not (tmp_path / "absent.db").exists()
    code, _, err = run(capsys, "inspect", "not a url", "--list")
    assert code == 2 and "not a database URL" in err


def test_an_unreachable_database_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"postgresql://nobody:secret@127.0.0.1:1/{uuid.uuid4().hex}"
    code, _, err = run(capsys, "inspect", url, "--list")
    assert code == 1 and "Connection refused" in err
    assert "secret" not in err
