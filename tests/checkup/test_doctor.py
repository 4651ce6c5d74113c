"""``doctor``: each check reports a stored session that has its problem, and passes a healthy
one — on a SQLite file, PostgreSQL and the file store, through the CLI a user runs (what it
prints and its exit code) and the Python call."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from png_support import pixels
from sqlalchemy import create_engine, text

from compactkit import DigestCompressor, InMemoryMemory, WindowedCompressor
from compactkit.checkup import doctor
from compactkit.cli.main import main
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot, summary_message
from compactkit.sessions import AgentSession, FileSessionStore
from compactkit.sql import SQLMemory

POSTGRES_URL = os.environ.get("COMPACTKIT_TEST_POSTGRES_URL")
RULE = "Never push to main without review."


def _call(memory: Any, n: int, path: str, size: int = 40) -> None:
    call_id = f"call_{uuid.uuid4().hex[:20]}"
    memory.add_output_items(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": "write_file",
                            "arguments": json.dumps({"path": path, "content": "x = 1\n"}),
                        },
                    }
                ],
            }
        ]
    )
    memory.add_tool_output(call_id, f"wrote {path} (step {n}) " + "ok " * size)


def conversation(memory: Any, steps: int = 6, size: int = 40) -> None:
    """A coding task with a rule, file writes, and a newer request at the end."""
    # (the rule in a paragraph of its own: one the goal quotes is said once, in the goal)
    memory.add_user_input(f"Fix the failing import in app.py.\n\n{RULE}")
    for n in range(steps):
        _call(memory, n, f"src/module_{n}.py", size)
    memory.add_user_input("Now run the tests.")


def digest_compaction(memory: Any) -> None:
    result = memory.compact(DigestCompressor(keep_last_groups=1))
    assert result.outcome == "compacted"


def custom_compaction(memory: Any, summary: str, *, tokens: tuple[int, int] | None = None) -> None:
    """What a user's own compressor might do: fold all but the newest input into ``summary``."""
    snapshot = memory.snapshot()
    items = tuple(snapshot.items)
    before, after = tokens or (None, None)
    result = CompactResult(
        snapshot=MemorySnapshot(summary=summary, items=items[-1:], version=snapshot.version),
        folded=items[:-1],
        outcome="compacted",
        stats=CompactStats(
            compressor="custom",
            tokens_before=before,
            tokens_after=after,
            items_before=len(items),
            items_after=1,
        ),
    )
    assert memory.apply(result)


@dataclass
class Backend:
    """Where sessions are stored, and how a test writes and corrupts them."""

    name: str
    location: str  # what the user passes to `compactkit doctor`
    prefix: str
    open_memory: Callable[[str], Any]
    finish: Callable[[str, Any], None]
    drop_seq: Callable[[str, int], None]


def _file_backend(directory: Path) -> Backend:
    store = FileSessionStore(directory)

    def finish(session_id: str, memory: Any) -> None:
        store.save(AgentSession(memory, session_id=session_id))

    def drop_seq(session_id: str, seq: int) -> None:
        # A write that never reached the file (a crash, a hand edit): rewrite the saved state
        # without the item, as an older or foreign writer would have left it.
        state = store.load(session_id)
        memory = state.memory
        kept = MemorySnapshot(
            summary=memory.summary,
            items=tuple(i for i in memory.items if i.seq != seq),
            version=memory.version,
        )
        changed = state.model_copy(
            update={"memory": kept, "history": tuple(i for i in state.history if i.seq != seq)}
        )
        store.path(session_id).write_bytes(changed.to_json())

    return Backend(
        "file", str(directory), "compactkit_", lambda _sid: InMemoryMemory(), finish, drop_seq
    )


def _sql_backend(name: str, url: str, prefix: str) -> Backend:
    def drop_seq(session_id: str, seq: int) -> None:
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(
                text(f"DELETE FROM {prefix}items WHERE session_id = :s AND seq = :q"),
                {"s": session_id, "q": seq},
            )
        engine.dispose()

    return Backend(
        name,
        url,
        prefix,
        lambda sid: SQLMemory(url, sid, table_prefix=prefix),
        lambda _sid, _memory: None,
        drop_seq,
    )


@pytest.fixture(params=["file", "sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "file":
        yield _file_backend(tmp_path / "sessions")
    elif request.param == "sqlite":
        yield _sql_backend("sqlite", f"sqlite:///{tmp_path}/agent.db", "compactkit_")
    else:
        if not POSTGRES_URL:
            pytest.skip("set COMPACTKIT_TEST_POSTGRES_URL to run the PostgreSQL tests")
        prefix = f"d{uuid.uuid4().hex[:10]}_"
        yield _sql_backend("postgresql", POSTGRES_URL, prefix)
        engine = create_engine(POSTGRES_URL)
        with engine.begin() as conn:
            for table in ("items", "compactions", "sessions", "schema_version"):
                conn.execute(text(f"DROP TABLE IF EXISTS {prefix}{table} CASCADE"))
        engine.dispose()


def run_doctor(
    backend: Backend, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, Any]]:
    """``compactkit doctor LOCATION ... --json``: its exit code and the JSON it printed."""
    code = main(["doctor", backend.location, *args, "--prefix", backend.prefix, "--json"])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return code, json.loads(out)


def store(backend: Backend, session_id: str, build: Callable[[Any], None]) -> None:
    memory = backend.open_memory(session_id)
    build(memory)
    backend.finish(session_id, memory)


def verdicts(report: dict[str, Any], session_id: str) -> dict[str, dict[str, Any]]:
    (session,) = [s for s in report["sessions"] if s["session"] == session_id]
    return {check["name"]: check for check in session["checks"]}


def failing(report: dict[str, Any], session_id: str) -> set[str]:
    return {name for name, c in verdicts(report, session_id).items() if not c["ok"]}


def healthy_session(memory: Any) -> None:
    conversation(memory)
    digest_compaction(memory)


# --- every backend: a healthy session passes, each problem is reported ---------------------


def test_a_healthy_compacted_session_passes_every_check(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    store(backend, "ok", healthy_session)
    code, report = run_doctor(backend, capsys)
    assert code == 0
    assert failing(report, "ok") == set()
    assert set(verdicts(report, "ok")) == {
        "tool_pairs",
        "summary",
        "folding",
        "facts",
        "drift",
        "isolation",
    }


def test_a_tool_output_that_was_never_stored(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    store(backend, "lost-output", conversation)
    backend.drop_seq("lost-output", 3)  # #2 is the first call, #3 its output
    store(backend, "ok", healthy_session)
    code, report = run_doctor(backend, capsys)
    assert code == 1
    pairs = verdicts(report, "lost-output")["tool_pairs"]
    assert not pairs["ok"] and "#2" in pairs["evidence"]
    assert "add_tool_output" in pairs["fix"]
    assert failing(report, "ok") == set()


def test_history_forgotten_without_a_summary(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    def forget(memory: Any) -> None:
        conversation(memory)
        assert memory.compact(WindowedCompressor(max_items=3)).outcome == "compacted"

    store(backend, "window", forget)
    code, report = run_doctor(backend, capsys, "window")
    assert code == 1
    summary = verdicts(report, "window")["summary"]
    assert not summary["ok"] and "no summary holds them" in summary["message"]
    assert summary["evidence"][0].startswith("#1")


def test_an_item_dropped_instead_of_folded(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    store(backend, "hole", healthy_session)
    backend.drop_seq("hole", 5)  # an archived tool output of the folded span
    code, report = run_doctor(backend, capsys, "hole")
    assert code == 1
    folding = verdicts(report, "hole")["folding"]
    assert not folding["ok"] and folding["evidence"] == ["#5"]


def test_a_rule_the_summary_lost(backend: Backend, capsys: pytest.CaptureFixture[str]) -> None:
    def lossy(memory: Any) -> None:
        conversation(memory)
        custom_compaction(memory, "## Goal\n- Fix app.py.\n", tokens=(1_000, 400))

    store(backend, "lossy", lossy)
    code, report = run_doctor(backend, capsys, "lossy")
    assert code == 1
    facts = verdicts(report, "lossy")["facts"]
    assert not facts["ok"]
    assert "push to main" in facts["message"] and "src/module_0.py" in facts["message"]


def test_a_compaction_that_made_the_context_bigger(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    def bloated(memory: Any) -> None:
        conversation(memory, steps=2)
        custom_compaction(memory, f"{RULE}\n" + "padding words " * 800, tokens=(900, 2_600))

    store(backend, "bloat", bloated)
    code, report = run_doctor(backend, capsys, "bloat")
    assert code == 1
    drift = verdicts(report, "bloat")["drift"]
    assert not drift["ok"] and "larger than everything it folded" in drift["message"]
    if backend.name != "file":  # SQL keeps compaction records: the futile one is named
        assert "compaction" in " ".join(drift["evidence"])


def test_two_sessions_served_by_one_memory(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    store(backend, "alice", healthy_session)
    source = backend.open_memory("alice")
    if backend.name == "file":
        state = FileSessionStore(Path(backend.location)).load("alice")
        snapshot, history = state.memory, state.history
    else:
        snapshot, history = source.snapshot(), source.history()

    def cloned(memory: Any) -> None:  # a cached memory object handed to a second session
        memory.restore(
            MemorySnapshot(summary=snapshot.summary, items=snapshot.items), history=history
        )

    store(backend, "bob", cloned)
    store(backend, "carol", healthy_session)
    code, report = run_doctor(backend, capsys)
    assert code == 1
    for who, other in (("alice", "bob"), ("bob", "alice")):
        isolation = verdicts(report, who)["isolation"]
        assert not isolation["ok"] and other in isolation["message"]
        assert any(e.startswith("call_id call_") for e in isolation["evidence"])
    assert failing(report, "carol") == set()


def test_a_session_id_reused_for_another_task(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    def reused(memory: Any) -> None:
        conversation(memory, steps=2)
        memory.clear()
        memory.add_user_input("Write a haiku about the sea.")

    store(backend, "user-42", reused)
    code, report = run_doctor(backend, capsys, "user-42")
    assert code == 1
    isolation = verdicts(report, "user-42")["isolation"]
    assert not isolation["ok"] and "reused" in isolation["message"]


# --- the Python call on a live memory, the plain output, bad input --------------------------


def test_doctor_on_a_live_memory_checks_what_it_hands_out() -> None:
    memory = InMemoryMemory()
    healthy_session(memory)
    assert doctor(memory).healthy
    role = doctor(memory, summary_role="system")
    assert not role.healthy
    assert "speaks as 'user'" in role.sessions[0].findings[0].message


def test_a_memory_whose_items_hide_the_summary() -> None:
    class ItemsOnly(InMemoryMemory):  # a custom memory that forgot the seed's items contract
        @property
        def items(self) -> list[Any]:
            return list(self.snapshot().items)

    memory = ItemsOnly()
    healthy_session(memory)
    (finding,) = doctor(memory).sessions[0].findings
    assert finding.name == "summary" and "first as its own message" in finding.message


def test_a_rendered_summary_written_back_as_an_item() -> None:
    memory = InMemoryMemory()
    healthy_session(memory)
    sent = summary_message(memory.summary)  # the prompt's first message, stored as output
    memory.add_output_items([{"role": "assistant", "content": sent.text}])
    (finding,) = doctor(memory).sessions[0].findings
    assert finding.name == "summary" and "reads the summary twice" in finding.message


def test_plain_output_names_each_finding_and_its_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = _sql_backend("sqlite", f"sqlite:///{tmp_path}/agent.db", "compactkit_")
    store(backend, "s1", conversation)
    backend.drop_seq("s1", 3)
    assert main(["doctor", str(tmp_path / "agent.db")]) == 1
    out = capsys.readouterr().out
    assert "session s1: 2 finding(s)" in out
    assert "BAD tool_pairs" in out and "fix: write each tool result" in out


def test_the_installed_command_in_a_fresh_process(tmp_path: Path) -> None:
    backend = _file_backend(tmp_path / "sessions")
    store(backend, "s1", healthy_session)
    done = subprocess.run(
        [sys.executable, "-m", "compactkit", "doctor", backend.location, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert [s["session"] for s in json.loads(done.stdout)["sessions"]] == ["s1"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["/nonexistent/agent.db"], "neither a database URL"),
        (["SESSIONS", "nobody"], "no session 'nobody'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    backend = _file_backend(tmp_path / "sessions")
    store(backend, "s1", healthy_session)
    args = [backend.location if a == "SESSIONS" else a for a in args]
    assert main(["doctor", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


# --- the timeline page ------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _timeline_session(url: str) -> None:
    memory = SQLMemory(url, "t1")
    for round_ in range(3):
        conversation(memory, steps=4, size=700)  # rounds of ~3k tokens: gpt-4's range
        digest_compaction(memory)
        memory.add_user_input(f"Round {round_} done; keep going.")
    custom_compaction(memory, "## Goal\n- Fix app.py.\n", tokens=(2_000, 300))


def test_the_timeline_page_marks_each_compaction_and_pins_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/agent.db"
    _timeline_session(url)
    page = tmp_path / "t1.html"
    assert main(["inspect", url, "t1", "--html", str(page), "--model", "gpt-4"]) == 0
    text = page.read_text(encoding="utf-8")
    records = SQLMemory(url, "t1").compactions()
    assert len(records) == 4
    for record in records:  # every compaction is on the page, with its span and strategy
        assert f"Compaction #{record.id}: {record.strategy}" in text
        assert f"#{record.first_seq}-{record.last_seq}" in text
    assert ">budget " in text and ">trigger " in text  # the model's lines are drawn
    assert "doctor found" in text and "facts" in text  # the lossy last summary is pinned
    assert "<li>verifier:</li><li><b>verified</b>" in text  # the digest's post-condition
    assert "<script" not in text and "http://" not in text.replace('xmlns="http://', "")


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_the_timeline_page_renders_in_a_browser(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/agent.db"
    _timeline_session(url)
    page = tmp_path / "t1.html"
    assert main(["inspect", url, "t1", "--html", str(page), "--model", "gpt-4"]) == 0
    shot = tmp_path / "t1.png"
    subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            "--window-size=1000,900",
            page.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    width, height, rows = pixels(shot.read_bytes())
    assert (width, height) == (1000, 900)
    channels = len(rows[0]) // width
    seen = dict.fromkeys((b"\x1f\x77\xb4", b"\x2c\xa0\x2c", b"\xd6\x27\x28"), 0)
    for row in rows:
        for x in range(0, len(row), channels):
            pixel = row[x : x + 3]
            if pixel in seen:
                seen[pixel] += 1
    # The context curve (blue), the compaction markers (green) and the budget line (red).
    assert all(n > 100 for n in seen.values()), seen


def test_the_timeline_shows_how_each_compaction_changed_the_summary(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/agent.db"
    _timeline_session(url)
    page = tmp_path / "t1.html"
    assert main(["inspect", url, "t1", "--html", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    records = sorted(SQLMemory(url, "t1").compactions(), key=lambda r: r.id)
    assert all(r.summary_after is not None for r in records)  # each one's summary is kept
    assert records[-1].summary_after == SQLMemory(url, "t1").summary
    # the first digest adds the rule; the lossy last compaction is shown dropping it
    assert f"<li class=added>+ {RULE} [#" in text  # with the references of its items
    assert f"<li class=removed>- {RULE} [#" in text


def test_drift_a_summary_that_lost_most_of_itself_and_a_budget_left_exceeded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/agent.db"
    memory = SQLMemory(url, "s1")
    conversation(memory, steps=6, size=700)
    digest_compaction(memory)  # a full digest summary
    memory.add_user_input("Next round.")
    conversation(memory, steps=2)
    custom_compaction(memory, "## Goal\n- Fix app.py.\n", tokens=(12_000, 9_000))
    code, report = run_doctor(_sql_backend("sqlite", url, "compactkit_"), capsys, "-m", "gpt-4")
    assert code == 1
    drift = verdicts(report, "s1")["drift"]
    assert not drift["ok"]
    assert "shrank the summary" in drift["message"]
    assert "over the model's budget" in drift["message"]  # 9,000 after, gpt-4 allows ~6k
    # without the model, the budget is not judged
    _, plain = run_doctor(_sql_backend("sqlite", url, "compactkit_"), capsys)
    assert "over the model's budget" not in verdicts(plain, "s1")["drift"]["message"]
