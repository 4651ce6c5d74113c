"""``compactkit convert`` and the transcript reading/writing behind it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from compactkit.cli import main
from compactkit.errors import FormatError
from compactkit.formats.transcript import Dropped, Transcript, dump_transcript, parse_transcript
from compactkit.items import Message, Reasoning

CHAT: dict[str, Any] = {
    "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test"},
        {
            "role": "assistant",
            "content": "Running it first.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "run", "arguments": '{"cmd":"pytest -x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "1 failed"},
        {"role": "assistant", "content": "Found it."},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "run",
                "description": "Run a shell command",
                "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
            },
        }
    ],
}
RESPONSES: dict[str, Any] = {
    "model": "gpt-5",
    "instructions": "You are a coding agent.",
    "input": [
        {"type": "message", "role": "user", "content": "Fix the failing test"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Run the tests"}],
            "encrypted_content": "gAAAAABo...",
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "run",
            "arguments": '{"cmd":"pytest -x"}',
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "1 failed"},
    ],
}


def write(tmp_path: Path, value: Any, name: str = "t.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else None, err


def test_chat_to_each_format_and_back_gives_the_original(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write(tmp_path, CHAT)
    for target in ("responses", "anthropic"):
        code, converted, err = run(capsys, "convert", source, "--to", target)
        assert (code, err) == (0, "")
        again = write(tmp_path, converted, f"{target}.json")
        code, back, err = run(capsys, "convert", again, "--to", "chat")
        assert (code, err) == (0, "")
        assert back == CHAT


def test_anthropic_output_is_a_messages_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, converted, _ = run(capsys, "convert", write(tmp_path, CHAT), "--to", "anthropic")
    assert code == 0
    assert converted["system"] == "You are a coding agent."
    assert [m["role"] for m in converted["messages"]] == ["user", "assistant", "user", "assistant"]
    assert converted["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "run",
        "input": {"cmd": "pytest -x"},
    }
    assert converted["tools"][0]["input_schema"]["properties"] == {"cmd": {"type": "string"}}


def test_what_the_target_cannot_express_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "convert", write(tmp_path, RESPONSES), "--to", "anthropic")
    assert code == 2
    assert out is None
    assert err.count("\n") == 1
    assert "reasoning item (from 'responses', id='rs_1')" in err
    assert "--lossy" in err


def test_lossy_drops_and_reports_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, converted, err = run(
        capsys, "convert", write(tmp_path, RESPONSES), "--to", "chat", "--lossy"
    )
    assert code == 0
    assert err == (
        "compactkit: dropped reasoning item (from 'responses', id='rs_1'): "
        "chat cannot express a reasoning item from 'responses'\n"
    )
    assert converted[0] == {"role": "system", "content": "You are a coding agent."}
    assert converted[2]["tool_calls"][0]["id"] == "call_1"


def test_same_format_keeps_request_fields_and_instructions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, converted, _ = run(capsys, "convert", write(tmp_path, RESPONSES), "--to", "responses")
    assert code == 0
    assert converted == RESPONSES


def test_format_is_detected_or_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = "\n".join(json.dumps(item) for item in RESPONSES["input"])
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text(lines, encoding="utf-8")
    code, converted, _ = run(capsys, "convert", str(jsonl), "--to", "responses")
    assert (code, converted) == (0, RESPONSES["input"])
    # Plain user/assistant strings read the same in chat and Anthropic: --format settles it.
    plain = write(tmp_path, {"messages": [{"role": "user", "content": "hi"}]})
    code, converted, _ = run(capsys, "convert", plain, "--format", "anthropic", "--to", "anthropic")
    assert converted == {"messages": [{"role": "user", "content": "hi"}]}


def test_stdin_is_read_with_a_dash(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(CHAT["messages"])))
    code, converted, _ = run(capsys, "convert", "-", "--to", "responses")
    assert code == 0
    assert converted[0] == {
        "type": "message",
        "role": "system",
        "content": CHAT["messages"][0]["content"],
    }


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["convert", "{path}"], "--to"),
        (["convert", "{path}", "--to", "gemini"], "invalid choice"),
        (["convert", "{missing}", "--to", "chat"], "No such file"),
        (["convert", "{broken}", "--to", "chat"], "not JSON or JSONL"),
    ],
)
def test_bad_input_is_exit_2_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{nope", encoding="utf-8")
    paths = {"path": write(tmp_path, CHAT), "missing": str(tmp_path / "no.json"), "broken": broken}
    try:
        code = main([a.format(**paths) for a in argv])
    except SystemExit as exit:  # argparse's own usage errors
        code = int(exit.code or 0)
    err = capsys.readouterr().err
    assert code == 2
    assert fragment in err


def test_malformed_conversation_names_the_file_and_message(tmp_path: Path) -> None:
    text = json.dumps(
        {"system": "x", "messages": [{"role": "user", "content": [{"type": "tool_use"}]}]}
    )
    with pytest.raises(FormatError, match=r"^t\.json: message 0: a 'tool_use' block"):
        parse_transcript(text, source="t.json")


def test_dump_reports_drops_as_typed_records() -> None:
    reasoning = Reasoning(format="anthropic", payload={"type": "redacted_thinking", "data": "x"})
    transcript = Transcript([Message(role="user", content="hi"), reasoning], format="anthropic")
    dropped: list[Dropped] = []
    value = dump_transcript(transcript, to="responses", lossy=True, on_drop=dropped.append)
    assert value == [{"type": "message", "role": "user", "content": "hi"}]
    assert [d.what for d in dropped] == ["reasoning item (from 'anthropic')"]
    with pytest.raises(FormatError, match="unknown format 'gemini'"):
        dump_transcript(transcript, to="gemini")  # type: ignore[arg-type]
