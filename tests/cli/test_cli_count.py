"""`compactkit count` and `compactkit models`, run in-process as a user would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compactkit.cli import main

COOKBOOK: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "openai-token-counts.json").read_text()
)


@pytest.fixture
def chat_file(tmp_path: Path) -> Path:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(COOKBOOK["chat_example"]["messages"]))
    return path


def test_count_prints_the_integer_alone(
    chat_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["count", str(chat_file), "--model", "gpt-4"]) == 0
    assert capsys.readouterr().out == "129\n"


def test_count_json_with_tools_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(COOKBOOK["tools_example"]))
    assert main(["count", str(path), "--model", "gpt-4o", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tokens"] == 101
    assert out["exact"] is True
    assert out["encoding"] == "o200k_base"
    assert out["model"] == "gpt-4o"


def test_count_reads_jsonl_and_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = "\n".join(json.dumps(m) for m in COOKBOOK["chat_example"]["messages"])
    path = tmp_path / "chat.jsonl"
    path.write_text(lines)
    assert main(["count", str(path), "--model", "gpt-4o"]) == 0
    assert capsys.readouterr().out == "124\n"
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    assert main(["count", "-", "--model", "gpt-4o-mini"]) == 0
    assert capsys.readouterr().out == "124\n"


def test_estimated_models_say_so(chat_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["count", str(chat_file), "--model", "claude-sonnet-4-5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exact"] is False
    assert out["encoding"] is None
    assert out["tokens"] > 0


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--model", "no-such-model"], "unknown model 'no-such-model'"),
        (["--model", "gpt-4o", "--format", "chat"], ""),
    ],
)
def test_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[{"role": "user", "content": "hi"}]' if fragment else "{not json")
    assert main(["count", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("compactkit: error:")
    assert fragment in err
    assert err.count("\n") == 1


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["count", "/nonexistent/t.json", "--model", "gpt-4o"]) == 2
    assert "/nonexistent/t.json" in capsys.readouterr().err


def test_models_lists_profiles(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    text = capsys.readouterr().out
    assert "gpt-4o" in text
    assert main(["models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["models"]
    gpt4o = next(r for r in rows if r["name"] == "gpt-4o")
    assert gpt4o["encoding"] == "o200k_base"
    assert gpt4o["exact"] is True
    assert all(r["max_output"] <= r["context_window"] for r in rows)
    assert all(r["source"] for r in rows)


def test_other_formats_are_counted_and_labelled_approximate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages = COOKBOOK["chat_example"]["messages"]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages))
    assert main(["count", str(path), "--model", "gpt-4o", "--json"]) == 0
    chat = json.loads(capsys.readouterr().out)
    for target in ("responses", "anthropic"):
        assert main(["convert", str(path), "--to", target, "--lossy"]) == 0
        converted = tmp_path / f"{target}.json"
        converted.write_text(capsys.readouterr().out)
        assert main(["count", str(converted), "--model", "gpt-4o", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["exact"] is False
        assert any(target in note for note in out["notes"])
        assert out["tokens"] > 0
    assert chat["exact"] is True
