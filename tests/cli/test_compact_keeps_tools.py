"""``compactkit compact`` compacts the history and nothing else: the transcript's tool schemas
come back in ``--json`` (the written conversation stays the contract's array of messages)."""

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
    assert isinstance(written, list) and written == report["messages"]
    # messages + tools as the next request would send them: the count is the compacted request
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"messages": written, "tools": report["tools"]}))
    assert main(["count", str(request), "--model", "gpt-4o", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == report["tokens_after"]
