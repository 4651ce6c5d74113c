"""``compactkit compact`` compacts the history and nothing else: the transcript's tool schemas
come back in ``--json``, and in the conversation written to ``--out`` or stdout (then a
``{"messages", "tools"}`` transcript, so that reading it back counts the real request)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compactkit.cli import main

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def transcript(tmp_path: Path) -> Path:
    messages: list[dict[str, object]] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(30):
        messages += [
            {"role": "user", "content": f"Step {n}: read src/module_{n}.py and report."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": f"src/module_{n}.py"}),
                        },
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": f"c{n}",
                "content": f"def f{n}():\n    return {n}\n" * 60,
            },
            {"role": "assistant", "content": f"module_{n} defines f{n}."},
        ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"model": "gpt-4o", "messages": messages, "tools": TOOLS}))
    return path


@pytest.mark.parametrize("compressor", ["digest", "ladder", "window"])
def test_tools_survive_compaction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], compressor: str
) -> None:
    out = tmp_path / "out.json"
    code = main(
        [
            "compact",
            str(transcript(tmp_path)),
            "--model",
            "gpt-4o",
            "--compressor",
            compressor,
            "--target",
            "3000",
            "--out",
            str(out),
            "--json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tools"] == TOOLS
    assert report["tokens_after"] < report["tokens_before"]
    written = json.loads(out.read_text())
    assert written == {"messages": report["messages"], "tools": TOOLS}
    # the file is the next request as it would be sent: its count is the compacted request
    assert main(["count", str(out), "--model", "gpt-4o", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == report["tokens_after"]


def test_stdout_without_json_keeps_the_tools_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["compact", str(transcript(tmp_path)), "-m", "gpt-4o", "--compressor", "window"]
    assert main([*argv, "--target", "3000"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["tools"] == TOOLS and written["messages"][0]["role"] == "system"


def test_without_tools_the_written_conversation_is_an_array(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "plain.json"
    path.write_text(json.dumps([{"role": "user", "content": "hello " * 50}]))
    out = tmp_path / "out.json"
    argv = ["compact", str(path), "-m", "gpt-4o", "--compressor", "window", "--out", str(out)]
    assert main(argv) == 0
    assert json.loads(out.read_text())[0]["role"] == "user"
