"""Rough edges a new user hit (issue 32): each answered with one line and the right exit code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compactkit.budget.profiles import budget_for
from compactkit.cli import main
from compactkit.cli.main import build_parser

EXAMPLE = Path(__file__).resolve().parents[2] / "compactkit/data/examples/coding_session.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_inspect_on_a_file_that_is_not_a_database_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are notes, not a database\n")
    for argv in ([str(path), "--list"], [f"sqlite:///{path}", "session-1"]):
        code, _, err = run(capsys, "inspect", *argv)
        assert code == 2
        assert err.count("\n") == 1 and "Traceback" not in err
        assert repr(str(path)) in err and "not a SQLite database" in err


@pytest.mark.parametrize("url", ["not-a-url", "ftp://x", "http://", "http://host:port/v1"])
def test_a_malformed_base_url_is_bad_input_naming_it(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    argv = ["--compressor", "summary", "--summarizer-model", "gpt-4o-mini", "--base-url", url]
    code, _, err = run(capsys, "compact", str(EXAMPLE), "-m", "gpt-4o", *argv)
    assert code == 2
    assert err.count("\n") == 1 and repr(url) in err
    code, _, err = run(capsys, "eval", "run", "unused.jsonl", "--base-url", url)
    assert code == 2 and repr(url) in err


def test_a_budget_above_the_usable_input_is_clamped_and_said(
    capsys: pytest.CaptureFixture[str],
) -> None:
    usable = budget_for("gpt-4o").usable_input
    argv = ["project", str(EXAMPLE), "-m", "gpt-4o", "--json"]
    code, out, err = run(capsys, *argv, "--budget", "99999999999999999999")
    assert code == 0
    result = json.loads(out)
    assert result["budget"] == usable and result["clamped"] is True
    assert "warning" in err and f"{usable:,}" in err
    code, out, err = run(capsys, *argv, "--budget", "5000")
    assert json.loads(out)["clamped"] is False and err == ""


def test_a_compaction_target_above_the_usable_input_is_clamped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    usable = budget_for("gpt-4o").usable_input
    argv = ["compact", str(EXAMPLE), "-m", "gpt-4o", "--compressor", "window", "--json"]
    code, out, err = run(capsys, *argv, "--target", "10000000")
    assert code == 0
    result = json.loads(out)
    assert result["target"] == usable and result["clamped"] is True
    assert "clamped" in err


def _leaves(parser: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    import argparse

    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        return [(prefix, parser)]
    return [
        leaf
        for group in groups
        for name, child in group.choices.items()
        for leaf in _leaves(child, (*prefix, name))
    ]


def test_every_command_takes_profiles_and_every_model_flag_has_m() -> None:
    leaves = _leaves(build_parser())
    assert len(leaves) >= 8
    for name, parser in leaves:
        flags = {flag for action in parser._actions for flag in action.option_strings}
        assert "--profiles" in flags, name
        if "--model" in flags:
            assert "-m" in flags, name


PROFILE = """
[[profile]]
name = "acme-coder"
context_window = 9000
max_output = 1000
encoding = "o200k_base"
"""


def test_profiles_file_adds_a_model_for_one_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(PROFILE)
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps([{"role": "user", "content": "hello"}]))
    code, out, _ = run(
        capsys, "count", str(transcript), "-m", "acme-coder", "--profiles", str(profiles)
    )
    assert code == 0 and int(out) > 0
    code, out, _ = run(capsys, "models", "--json", "--profiles", str(profiles))
    assert "acme-coder" in out
    code, _, err = run(capsys, "count", str(transcript), "-m", "acme-coder")
    assert code == 2 and "--profiles" in err  # the file applied to that command only
    code, _, err = run(capsys, "count", str(transcript), "-m", "gpt-4o", "--profiles", "nope.toml")
    assert code == 2 and "'nope.toml'" in err


def test_eval_run_help_prints_a_single_percent(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "run", "--help"])
    out = capsys.readouterr().out
    assert "95%" in out and "%%" not in out


def test_a_ladder_that_never_summarizes_shows_no_empty_bar(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # stderr counts as a terminal: bars would show
    argv = ["compact", str(EXAMPLE), "-m", "gpt-4o", "--compressor", "ladder", "--target", "9000"]
    code, out, err = run(capsys, *argv)
    assert code == 0 and json.loads(out)["messages"]
    assert "summarizing" not in err and "0/?" not in err
