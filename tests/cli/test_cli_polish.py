"""CLI polish: ``--version``, and errors in command-line terms (flags and environment
variables, never the library's keyword arguments)."""

from __future__ import annotations

import json
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


def test_keep_last_groups_decides_how_much_masking_may_touch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages: list[dict[str, object]] = [{"role": "system", "content": "You are an agent."}]
    for n in range(12):
        messages += [
            {"role": "user", "content": f"read part {n}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "read", "arguments": f'{{"part": {n}}}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"line {n}\n" * 300},
        ]
    transcript = tmp_path / "t.json"
    transcript.write_text(json.dumps(messages))

    def masked(*extra: str) -> int:
        argv = [
            "compact",
            str(transcript),
            "--model",
            "gpt-4o",
            "--compressor",
            "mask",
            "--target",
            "500",
            "--json",
            *extra,
        ]
        main(argv)
        out = json.loads(capsys.readouterr().out)
        return sum(1 for m in out["messages"] if m["role"] == "tool" and len(m["content"]) < 500)

    default, three, none = (
        masked(),
        masked("--keep-last-groups", "3"),
        masked("--keep-last-groups", "0"),
    )
    assert none > three > default > 0  # fewer protected turns: more old outputs masked
