"""Token counts on the command line as people write them (``--budget 8k``, ``--target 8_000``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactkit.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "compactkit/data/examples/coding_session.json"


def _budget(capsys: pytest.CaptureFixture[str], value: str) -> int:
    code = main(["project", str(EXAMPLE), "--model", "gpt-4o", "--budget", value, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    return int(out["budget"])


@pytest.mark.parametrize("value", ["8000", "8_000", "8,000", "8k", "8K", " 8k "])
def test_budget_spellings_mean_the_same(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _budget(capsys, value) == 8000


def test_fractional_thousands(capsys: pytest.CaptureFixture[str]) -> None:
    assert _budget(capsys, "7.5k") == 7500


@pytest.mark.parametrize("value", ["8.5", "lots", "k", "-8k", "0"])
def test_not_a_token_count_is_exit_2(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["project", str(EXAMPLE), "--model", "gpt-4o", "--budget", value])
    assert exited.value.code == 2
    assert "argument --budget" in capsys.readouterr().err


def test_inspect_takes_a_sqlite_file_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from compactkit.sql.memory import SQLMemory

    database = tmp_path / "agent.db"
    SQLMemory(f"sqlite:///{database}", "s1").add_user_input("hi")
    assert main(["inspect", str(database), "--list", "--json"]) == 0
    assert [s["session_id"] for s in json.loads(capsys.readouterr().out)["sessions"]] == ["s1"]


def test_inspect_of_a_missing_file_shows_the_url_form(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "missing.db", "--list"]) == 2
    assert "sqlite:///missing.db" in capsys.readouterr().err


@pytest.mark.parametrize("compressor", ["window", "digest"])
def test_keep_last_groups_where_it_does_nothing_is_exit_2(
    compressor: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compact", str(EXAMPLE), "--model", "gpt-4o", "--compressor", compressor]
    assert main([*argv, "--target", "5000", "--keep-last-groups", "3"]) == 2
    assert "--keep-last-groups applies to --compressor mask and ladder" in capsys.readouterr().err
