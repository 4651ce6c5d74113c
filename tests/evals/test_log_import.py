"""Agent logs -> eval suites (issue 32): each importer on its fixtures (tests/evals/fixtures/logs,
sources and licences in the README there), the mechanical probes' precision, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactkit.cli import main
from compactkit.evals import load_suite, probe_class
from compactkit.evals.importers import IMPORTERS, import_log
from compactkit.evals.log_probes import derive_probes, item_text, probe_located
from compactkit.evals.log_suite import cases_from_logs
from compactkit.formats import parse_transcript
from compactkit.items import FunctionCall, FunctionCallOutput, Message, Reasoning

LOGS = Path(__file__).parent / "fixtures" / "logs"

FORMATS = {
    "anthropic-messages-swe-agent.json": "anthropic_messages",
    "claude-code-representative.jsonl": "claude_code",
    "codex-rollout-homelab.jsonl": "codex",
    "codex-rollout-tools.jsonl": "codex",
    "gemini-chat-checkpoint.json": "gemini_history",
    "gemini-session.json": "gemini_history",
    "gemini-stream-json.jsonl": "gemini_stream",
    "langchain-messages-to-dict.json": "langchain",
    "langgraph-state-dumpd.json": "langchain",
    "mini-swe-agent-django-11039.traj.json": "mini_swe_agent",
    "mini-swe-agent-v1-text.traj.json": "mini_swe_agent",
    "openai-agents-session.db": "openai_agents",
    "openai-chat-swe-agent.json": "openai_chat",
    "openai-responses-swe-agent.json": "openai_responses",
    "openhands-basic.json": "openhands",
    "swe-agent-test-repo-1c2844.traj": "swe_agent",
}


def test_every_format_has_a_fixture() -> None:
    assert set(FORMATS.values()) == set(IMPORTERS)
    assert {p.name for p in LOGS.iterdir() if p.name != "README.md"} == set(FORMATS)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_each_fixture_is_detected_and_keeps_calls_paired(name: str) -> None:
    (log,) = import_log(LOGS / name)
    assert log.format == FORMATS[name]
    assert log.items
    called: set[str] = set()
    for item in log.items:
        if isinstance(item, FunctionCall):
            called.add(item.call_id)
        elif isinstance(item, FunctionCallOutput):
            assert item.call_id in called  # never an output without its call
    assert all(s.reason for s in log.skipped)


def _kinds(name: str) -> list[tuple[str, str]]:
    (log,) = import_log(LOGS / name)
    out = []
    for item in log.items:
        if isinstance(item, Message):
            out.append((item.role, item.text))
        elif isinstance(item, FunctionCall):
            out.append(("call", item.name))
        elif isinstance(item, FunctionCallOutput):
            out.append(("output", item.text))
        elif isinstance(item, Reasoning):
            out.append(("reasoning", item.format))
    return out


def test_provider_formats_and_framework_dumps_give_the_same_conversation() -> None:
    reference = _kinds("openai-chat-swe-agent.json")
    assert len(reference) == 14
    for name in (
        "openai-responses-swe-agent.json",
        "anthropic-messages-swe-agent.json",
        "openai-agents-session.db",
        "langchain-messages-to-dict.json",
        "langgraph-state-dumpd.json",
        "swe-agent-test-repo-1c2844.traj",
    ):
        assert _kinds(name) == reference, name


def test_claude_code_blocks_map_and_bookkeeping_is_reported() -> None:
    (log,) = import_log(LOGS / "claude-code-representative.jsonl")
    names = [i.name for i in log.items if isinstance(i, FunctionCall)]
    assert names == ["Edit", "Bash"]
    assert log.model == "claude-3-sonnet-20240229"
    assert [s.reason for s in log.skipped] == [
        "Claude Code bookkeeping record 'summary' (not sent to the model)"
    ]


def test_codex_maps_custom_tools_and_reports_ui_events() -> None:
    (log,) = import_log(LOGS / "codex-rollout-tools.jsonl")
    calls = [i for i in log.items if isinstance(i, FunctionCall)]
    assert [c.name for c in calls] == ["exec_command", "apply_patch", "mcp__synthetic__lookup"]
    assert calls[1].arguments.startswith("*** Begin Patch")
    assert any(isinstance(i, Reasoning) for i in log.items)  # encrypted reasoning carried
    reasons = " ".join(s.reason for s in log.skipped)
    assert "UI event 'user_message'" in reasons and "'future_synthetic_record'" in reasons
    (homelab,) = import_log(LOGS / "codex-rollout-homelab.jsonl")
    first = homelab.items[0]
    assert isinstance(first, Message) and first.role == "system"  # session_meta instructions
    assert homelab.model == "gpt-5.2-codex"


def test_gemini_stream_joins_deltas_and_history_reports_thoughts() -> None:
    kinds = _kinds("gemini-stream-json.jsonl")
    assert kinds[1] == ("assistant", "I'll run the test first to see the failure.")
    assert [k for k, _ in kinds].count("call") == 4
    (history,) = import_log(LOGS / "gemini-session.json")
    reasons = [s.reason for s in history.skipped]
    assert "Gemini thought summaries (no compactkit item holds them)" in reasons
    assert "a 'info' notice shown in the CLI, not sent to the model" in reasons


def test_openhands_takes_the_arguments_the_model_wrote() -> None:
    (log,) = import_log(LOGS / "openhands-basic.json")
    edit = next(i for i in log.items if isinstance(i, FunctionCall))
    assert edit.name == "str_replace_editor"
    assert edit.parsed_arguments()["path"] == "/workspace/game_2048.py"
    assert log.model == "claude-3-5-sonnet-20241022"


def test_mini_swe_agent_reports_what_it_cannot_map() -> None:
    (log,) = import_log(LOGS / "mini-swe-agent-django-11039.traj.json")
    reasons = " ".join(str(s) for s in log.skipped)
    assert "role 'exit'" in reasons and "field 'extra'" in reasons and "info:" in reasons


def test_unknown_files_and_formats_are_bad_input(tmp_path: Path) -> None:
    from compactkit.errors import ConfigError, FormatError

    odd = tmp_path / "odd.json"
    odd.write_text('{"hello": 1}')
    with pytest.raises(FormatError, match="--format"):
        import_log(odd)
    with pytest.raises(ConfigError, match="unknown log format"):
        import_log(odd, format="nope")
    with pytest.raises(FormatError, match="does not look like a codex log"):
        import_log(LOGS / "gemini-session.json", format="codex")


# -- probes -----------------------------------------------------------------------------------


def test_every_probe_occurs_where_it_says_on_every_fixture() -> None:
    located = total = 0
    for report in cases_from_logs([LOGS]):
        assert report.error is None, report.path
        for case in report.cases:
            items = parse_transcript(json.dumps(case.transcript), format=case.format).items
            for probe in case.probes:
                total += 1
                located += probe_located(probe, items)
                assert probe_located(probe, items), (case.id, probe)
    assert total > 150 and located == total


def test_probe_rules_on_a_log_with_known_facts() -> None:
    (log,) = import_log(LOGS / "gemini-stream-json.jsonl")
    probes = {p.id: p for p in derive_probes(log.items)}
    assert probes["constraint:0"].text == "Do not change the public API of parser.py."  # type: ignore[union-attr]
    assert probes["artifact:src/parser.py"].action == "modified"  # type: ignore[union-attr]
    error = probes["error:0"]
    assert error.fact.startswith("FAILED tests/test_parser.py::test_empty_input")  # type: ignore[union-attr]
    assert error.resolved is True  # type: ignore[union-attr]  (the same command passed later)
    assert item_text(log.items[error.at or 0]).startswith("F\nFAILED")
    (session,) = import_log(LOGS / "gemini-session.json")
    update = next(p for p in derive_probes(session.items) if probe_class(p) == "update")
    assert (update.current, update.superseded) == ("5", ("3",))  # type: ignore[union-attr]


def test_a_probe_pointing_elsewhere_is_caught() -> None:
    (log,) = import_log(LOGS / "gemini-stream-json.jsonl")
    probe = next(p for p in derive_probes(log.items) if probe_class(p) == "artifact_modified")
    assert not probe_located(probe.model_copy(update={"at": 0}), log.items)


# -- the command ------------------------------------------------------------------------------


def test_import_a_folder_then_run_gives_every_mechanical_class(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "mine.jsonl"
    assert main(["eval", "import", str(LOGS), "--out", str(suite)]) == 0
    err = capsys.readouterr().err
    assert f"[1/{len(FORMATS)}]" in err and "not mapped:" in err and "wrote 16 cases" in err
    assert len(load_suite(suite).cases) == 16
    argv = ["eval", "run", str(suite), "--compressor", "window", "--json", "-q"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    classes = set(report["compressors"]["window"]["retention"])
    assert classes == {
        "constraint",
        "artifact_modified",
        "artifact_read",
        "error",
        "identifier",
        "recall",
        "update",
        "tool_state",
    }
    assert 0 <= report["compressors"]["window"]["target_met"]["mean"] <= 1


def test_eval_run_without_a_suite_runs_the_bundled_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["eval", "run", "--compressor", "mask", "-q"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Eval: imported-logs")
    assert "| *target met* | no: 1.0x of" in out and "Not comparable: mask" in out


def test_a_gate_on_a_class_without_probes_fails_clearly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "run", "--compressor", "mask", "-q", "--fail-under", "decision=0.9"]
    assert main(argv) == 3
    assert "decision: the suite has no probe of this class" in capsys.readouterr().err
    empty = tmp_path / "empty.yaml"
    empty.write_text("name: empty\ncases: []\n")
    assert main(["eval", "run", str(empty), "-q", "--fail-under", "constraint=1"]) == 3
    assert "the suite ran no case" in capsys.readouterr().err


def test_import_names_a_bad_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.jsonl"
    assert main(["eval", "import", str(LOGS), "--out", str(out), "--format", "nope"]) == 2
    assert "'nope' is not a log format" in capsys.readouterr().err


def _shell(*commands: str) -> list[FunctionCall | FunctionCallOutput | Message]:
    items: list[FunctionCall | FunctionCallOutput | Message] = [
        Message(role="user", content="# AGENTS.md\nAlways run the linter before committing."),
        Message(role="user", content="Please tidy up the release notes for version 2."),
    ]
    for n, command in enumerate(commands):
        items.append(
            FunctionCall(call_id=f"c{n}", name="bash", arguments=json.dumps({"command": command}))
        )
        items.append(FunctionCallOutput(call_id=f"c{n}", output="ok"))
    return items


def test_shell_rules_do_not_read_paths_inside_quotes_and_follow_copies() -> None:
    items = _shell(
        "sed -i 's/def f(a) -> float/def f(a) -> float:/' src/calc.py",
        "cp notes.md notes.md.bak && mv draft.md final.md",
    )
    probes = derive_probes(items)
    files = {p.path: p.action for p in probes if probe_class(p).startswith("artifact")}  # type: ignore[union-attr]
    assert files == {
        "src/calc.py": "modified",
        "notes.md.bak": "created",
        "final.md": "created",
        "draft.md": "deleted",
    }
    task = next(p for p in probes if p.id == "task")
    assert task.fact == "Please tidy up the release notes for version 2."  # type: ignore[union-attr]
    assert task.at == 1  # the AGENTS.md block is instructions, not the task


def test_a_finish_call_without_output_is_not_a_pending_tool() -> None:
    items = [
        Message(role="user", content="Write the report for the quarter please."),
        FunctionCall(call_id="f1", name="finish", arguments="{}"),
        FunctionCall(call_id="r1", name="read_file", arguments='{"path": "q3.md"}'),
    ]
    pending = [p for p in derive_probes(items) if probe_class(p) == "tool_state"]
    assert [p.call_id for p in pending] == ["r1"]  # type: ignore[union-attr]


def test_an_error_is_resolved_only_by_a_clean_run_of_the_same_program() -> None:
    failing = "cat > check.py << 'EOF'\nimport missing_module\nEOF\npython check.py"
    items: list[FunctionCall | FunctionCallOutput | Message] = [
        Message(role="user", content="Make check.py run cleanly on the build box."),
        FunctionCall(call_id="a", name="bash", arguments=json.dumps({"command": failing})),
        FunctionCallOutput(
            call_id="a", output="ModuleNotFoundError: No module named 'missing_module'"
        ),
        FunctionCall(
            call_id="b",
            name="bash",
            arguments=json.dumps({"command": "cat > other.py << 'EOF'\nx = 1\nEOF"}),
        ),
        FunctionCallOutput(call_id="b", output=""),
    ]
    (error,) = [p for p in derive_probes(items) if probe_class(p) == "error"]
    assert error.resolved is False  # type: ignore[union-attr]  (another `cat >` is not a fix)
    items += [
        FunctionCall(
            call_id="c", name="bash", arguments=json.dumps({"command": "cd /w && python check.py"})
        ),
        FunctionCallOutput(call_id="c", output="ok"),
    ]
    (error,) = [p for p in derive_probes(items) if probe_class(p) == "error"]
    assert error.resolved is True  # type: ignore[union-attr]
