"""CLI polish: ``--version``, and errors in command-line terms (flags and environment
variables, never the library's keyword arguments)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import compactkit
from compactkit.cli import main


def test_version_flag_prints_the_version() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "compactkit", "--version"], capture_output=True, text=True
    )
    assert run.returncode == 0
    assert run.stdout.strip() == f"compactkit {compactkit.__version__}"


def test_a_missing_api_key_is_named_as_the_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    transcript = tmp_path / "t.json"
    transcript.write_text('[{"role": "user", "content": "hi"}]')
    code = main(
        [
            "compact",
            str(transcript),
            "--model",
            "gpt-4o",
            "--compressor",
            "summary",
            "--summarizer-model",
            "gpt-4o-mini",
            "--target",
            "100",
        ]
    )
    assert code == 2
    error = capsys.readouterr().err
    assert "OPENAI_API_KEY" in error and "api_key=" not in error
