"""Hostile and edge inputs on the command line: every failure is an exit code and one line on
stderr (``compactkit: error: …``), never a traceback; ``--json`` keeps stdout a JSON object."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from compactkit.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "compactkit/data/examples/coding_session.json"

RESPONSES = {
    "instructions": "Be terse.",
    "input": [
        {"type": "message", "role": "user", "content": "Never push to main. Fix the bug."},
        {"type": "function_call", "call_id": "c1", "name": "run", "arguments": '{"cmd":"ls"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py\n" * 400},
        {"type": "message", "role": "assistant", "content": "Found it."},
        {"type": "message", "role": "user", "content": "Go on."},
    ],
}
ANTHROPIC = {
    "system": "Be terse.",
    "messages": [
        {"role": "user", "content": "Never push to main. Fix the bug."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "run", "input": {"cmd": "ls"}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py\n" * 400}],
        },
        {"role": "assistant", "content": "Found it."},
        {"role": "user", "content": "Go on."},
    ],
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit:  # argparse's own usage errors
        code = int(exit.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: Path, value: Any, name: str = "t.json") -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return str(path)


def assert_one_line_error(err: str, *fragments: str) -> None:
    assert err.startswith("compactkit: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


@pytest.mark.parametrize(
    ("tools", "fragment"),
    [
        ([5], "tool 0"),
        ([{"type": "function", "function": {"name": "f", "parameters": 5}}], "'parameters'"),
        ([{"type": "function", "function": {"name": "f", "description": 5}}], "'description'"),
        ({"f": {}}, "'tools' must be an array"),
    ],
)
def test_malformed_chat_tools_are_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tools: Any, fragment: str
) -> None:
    path = write(tmp_path, {"messages": [{"role": "user", "content": "hi"}], "tools": tools})
    code, _, err = run(capsys, "count", path, "--model", "gpt-4o")
    assert code == 2
    assert_one_line_error(err, "tool", fragment)


@pytest.mark.parametrize(
    "transcript",
    [
        {"input": [], "tools": [{"type": "function", "name": "f", "parameters": [1]}]},
        {"system": "s", "messages": [], "tools": [{"name": "f", "input_schema": 5}]},
        {"system": "s", "messages": [], "tools": [{"name": "f", "description": {"a": 1}}]},
    ],
)
def test_malformed_tools_of_other_formats_are_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], transcript: dict[str, Any]
) -> None:
    code, _, err = run(capsys, "count", write(tmp_path, transcript), "--model", "gpt-4o")
    assert code == 2
    assert_one_line_error(err, "tool 0")


def test_a_tool_schema_with_malformed_properties_is_still_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"properties": [1, 2]}}}
    path = write(tmp_path, {"messages": [{"role": "user", "content": "hi"}], "tools": [tool]})
    code, out, err = run(capsys, "count", path, "--model", "gpt-4o")
    assert (code, err) == (0, "")
    assert int(out) > 0


def test_a_reasoning_item_with_a_malformed_summary_is_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_1", "summary": 5, "encrypted_content": "gAAA"},
        {"type": "message", "role": "assistant", "content": "hello"},
    ]
    code, out, err = run(capsys, "count", write(tmp_path, items), "--model", "gpt-4o")
    assert (code, err) == (0, "")
    assert int(out) > 0


def test_a_file_that_is_not_utf8_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'[{"role": "user", "content": "caf\xe9"}]')
    code, _, err = run(capsys, "count", str(path), "--model", "gpt-4o")
    assert code == 2
    assert_one_line_error(err, "latin1.json", "UTF-8")


def test_a_utf8_byte_order_mark_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes('\ufeff[{"role": "user", "content": "hi"}]'.encode())
    code, out, err = run(capsys, "count", str(path), "--model", "gpt-4o")
    assert (code, err) == (0, "")
    monkeypatched = io.StringIO('\ufeff[{"role": "user", "content": "hi"}]')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sys.stdin", monkeypatched)
        assert run(capsys, "count", "-", "--model", "gpt-4o")[1] == out


def test_a_lone_surrogate_is_written_as_valid_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A truncated emoji from a JavaScript string: valid JSON, not encodable as UTF-8 text.
    text = '[{"role": "user", "content": "cut \\ud83d here"}]'
    path = write(tmp_path, text)
    code, out, err = run(capsys, "convert", path, "--to", "chat")
    assert (code, err) == (0, "")
    out.encode("utf-8")  # what reaches the terminal or file is valid UTF-8
    assert json.loads(out) == json.loads(text)
    out_file = tmp_path / "out.json"
    code, out, err = run(
        capsys, "compact", path, "--model", "gpt-4o", "--compressor", "mask", "--out", str(out_file)
    )
    assert (code, err) == (0, "")
    assert json.loads(out_file.read_bytes().decode("utf-8")) == json.loads(text)


def test_output_survives_a_terminal_that_cannot_encode_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Windows console or redirect (cp1252) cannot encode Arabic or emoji: the JSON is escaped.
    messages = [{"role": "user", "content": "مرحبا 🌍"}]
    buffer = io.BytesIO()
    stdout = io.TextIOWrapper(buffer, encoding="cp1252")
    monkeypatch.setattr("sys.stdout", stdout)
    assert main(["convert", write(tmp_path, messages), "--to", "chat"]) == 0
    stdout.flush()
    assert json.loads(buffer.getvalue().decode("cp1252")) == messages


def test_a_closed_pipe_is_not_reported_as_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # ``compactkit models | head -1``: the reader went away; that is not the user's input error.
    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("sys.stdout", ClosedPipe())
    monkeypatch.setattr("os.dup2", lambda *args: None)  # keep pytest's real stdout intact
    code = main(["models"])
    assert code == 1
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("transcript", "outside"), [(RESPONSES, "instructions"), (ANTHROPIC, "system")]
)
def test_compact_json_messages_is_a_list_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], transcript: dict[str, Any], outside: str
) -> None:
    path = write(tmp_path, transcript)
    argv = ["compact", path, "--model", "gpt-4o", "--compressor", "digest", "--target", "200"]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert isinstance(result["messages"], list)
    assert result[outside].startswith("Be terse.")  # kept beside the messages, as `project` does
    assert result["outcome"] == "compacted"
    # Without --json the output is still the transcript in its format, readable back.
    code, written, _ = run(capsys, *argv)
    conversation = json.loads(written)
    assert conversation[outside] == result[outside]
    assert conversation["input" if outside == "instructions" else "messages"] == result["messages"]


@pytest.mark.parametrize("compressor", ["window", "mask", "digest", "ladder"])
def test_a_target_above_the_transcript_leaves_it_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], compressor: str
) -> None:
    messages = json.loads(EXAMPLE.read_text(encoding="utf-8"))["messages"][:40]
    path = write(tmp_path, messages)
    tokens = int(run(capsys, "count", path, "--model", "gpt-4o")[1])
    for target in (tokens, tokens + 1, tokens + 400):
        argv = ["compact", path, "--model", "gpt-4o", "--compressor", compressor]
        code, out, err = run(capsys, *argv, "--target", str(target), "--json")
        result = json.loads(out)
        assert (code, err) == (0, "")
        assert (result["outcome"], result["folded"]) == ("unchanged", 0), target
        assert result["messages"] == messages and result["tokens_after"] == tokens


@pytest.mark.parametrize(
    "argv",
    [
        ["count", "{path}", "--model", "no-such-model", "--json"],
        ["count", "{missing}", "--model", "gpt-4o", "--json"],
        ["project", "{broken}", "--model", "gpt-4o", "--json"],
        ["compact", "{path}", "--model", "gpt-4o", "--compressor", "summary", "--json"],
        [
            "compact",
            "{path}",
            "--model",
            "gpt-4o",
            "--compressor",
            "mask",
            "--out",
            "{unwritable}",
            "--json",
        ],
        ["project", "{path}", "--model", "gpt-4o", "--budget", "0", "--json"],
        ["compact", "{path}", "--model", "gpt-4o", "--compressor", "zip", "--json"],
    ],
)
def test_json_failures_keep_stdout_a_json_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    paths = {
        "path": write(tmp_path, [{"role": "user", "content": "hi"}]),
        "missing": str(tmp_path / "missing.json"),
        "broken": write(tmp_path, "{nope", "broken.json"),
        "unwritable": str(tmp_path / "no-such-dir" / "out.json"),
    }
    code, out, err = run(capsys, *(a.format(**paths) for a in argv))
    assert code == 2
    assert_one_line_error(err)
    assert json.loads(out) == {"error": err.removeprefix("compactkit: error: ").rstrip("\n")}


def test_an_unknown_model_says_how_to_fix_it_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, [{"role": "user", "content": "hi"}])
    for argv in (
        ["count", path, "--model", "gpt-9"],
        ["project", path, "--model", "gpt-9"],
        ["compact", path, "--model", "gpt-9", "--compressor", "mask"],
    ):
        code, _, err = run(capsys, *argv)
        assert code == 2
        assert_one_line_error(
            err, "unknown model 'gpt-9'", "compactkit models", "COMPACTKIT_PROFILES"
        )
        assert "registry.register" not in err  # Python advice is no help in a shell


def test_unreadable_transcript_and_unwritable_out_say_which_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "count", str(tmp_path / "missing.json"), "--model", "gpt-4o")
    assert code == 2
    assert_one_line_error(err, "cannot read the transcript", "missing.json", "No such file")
    path = write(tmp_path, [{"role": "user", "content": "hi"}])
    out = tmp_path / "no-such-dir" / "out.json"
    argv = ["compact", path, "--model", "gpt-4o", "--compressor", "mask", "--out", str(out)]
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert_one_line_error(err, "cannot write --out", "out.json", "No such file")


@pytest.mark.parametrize(
    "argv",
    [
        ["project", "{path}", "--model", "gpt-4o", "--budget", "0"],
        ["project", "{path}", "--model", "gpt-4o", "--budget", "-5"],
        ["compact", "{path}", "--model", "gpt-4o", "--compressor", "mask", "--target", "x"],
        ["compact", "{path}", "--model", "gpt-4o", "--compressor", "zip"],
        ["count", "{path}"],
        ["bogus"],
        [],
    ],
)
def test_usage_errors_are_one_line_naming_the_help(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    path = write(tmp_path, [{"role": "user", "content": "hi"}])
    code, out, err = run(capsys, *(a.format(path=path) for a in argv))
    assert (code, out) == (2, "")
    assert_one_line_error(err, "--help")


def test_json_error_messages_read_as_english(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, '[{"role": "user", "content": "a\x00b"}]')
    code, _, err = run(capsys, "count", path, "--model", "gpt-4o")
    assert code == 2
    assert_one_line_error(err, "Invalid control character at line 1 column")
    path = write(tmp_path, {"input": [], "tools": []})
    code, _, err = run(capsys, "count", path, "--model", "gpt-4o", "--format", "anthropic")
    assert_one_line_error(err, "an anthropic transcript object needs 'messages'")


def test_python_m_compactkit_is_the_cli() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "compactkit", "count", "-", "--model", "gpt-4o"],
        input='[{"role": "user", "content": "hi"}]',
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert int(done.stdout) > 0
