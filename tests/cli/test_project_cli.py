"""`compactkit project`: the prompt the projector would send, as the CLI contract says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compactkit.budget.tokens import counter_for
from compactkit.cli import main
from compactkit.formats.chat import chat_to_items, tools_from_chat
from compactkit.items.snapshot import summary_message, unseal_summary

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


def conversation(steps: int, size: int = 300) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "system", "content": summary_message("Earlier: we found the parser bug.").text},
        {"role": "user", "content": "Fix the parser and run the tests."},
    ]
    for i in range(steps):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "p.py"}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "line\n" * size})
    return messages


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: Path, value: Any) -> str:
    path = tmp_path / "transcript.json"
    path.write_text(json.dumps(value))
    return str(path)


def test_json_output_has_the_contract_keys_and_fits_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, {"messages": conversation(120), "tools": TOOLS})
    code, out, _ = run(capsys, "project", path, "--model", "gpt-4o", "--budget", "3000", "--json")
    assert code == 0
    result = json.loads(out)
    assert set(result) == {"messages", "tokens", "budget", "clamped", "report"}
    assert result["clamped"] is False
    assert set(result["report"]) == {"kept", "masked", "omitted", "notes"}
    assert result["budget"] == 3000 and result["tokens"] <= 3000
    assert result["report"]["masked"] > 0 and result["report"]["omitted"] > 0
    messages = result["messages"]
    # the system prompt, the summary read back as the summary (once, marked), the request
    assert messages[0] == {"role": "system", "content": "You are a careful coding agent."}
    assert unseal_summary(messages[1]["content"]) == "Earlier: we found the parser bug."
    assert sum(1 for m in messages if unseal_summary(m["content"] or "") is not None) == 1
    assert messages[2]["content"] == "Fix the parser and run the tests."
    # the tokens are what the model's API bills for exactly these messages and tools
    counter = counter_for("gpt-4o")
    billed = counter.count(chat_to_items(messages), tools=tools_from_chat(TOOLS)).tokens
    assert billed == result["tokens"]


def test_plain_output_is_the_messages_and_the_default_budget_is_the_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, conversation(3))
    code, out, _ = run(capsys, "project", path, "--model", "gpt-4o")
    assert code == 0
    assert json.loads(out) == conversation(3)  # everything fits 128k: sent unchanged


def test_an_irreducible_part_over_budget_exits_1_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    messages = conversation(2)
    messages.append({"role": "user", "content": "please " * 2000})
    path = write(tmp_path, messages)
    code, out, err = run(capsys, "project", path, "--model", "gpt-4o", "--budget", "500")
    assert code == 1 and out == ""
    assert "latest user input: 2,00" in err and "budget 500" in err
    code, out, err = run(capsys, "project", path, "--model", "gpt-4o", "--budget", "500", "--json")
    assert code == 1
    error = json.loads(out)
    assert error["part"] == "latest user input" and error["budget"] == 500
    assert error["tokens"] > 500 and "latest user input" in error["error"]


def test_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, conversation(1))
    assert run(capsys, "project", path, "--model", "no-such-model")[0] == 2
    with pytest.raises(SystemExit) as caught:
        main(["project", path, "--model", "gpt-4o", "--budget", "-5"])
    assert caught.value.code == 2
    assert run(capsys, "project", str(tmp_path / "missing.json"), "--model", "gpt-4o")[0] == 2


@pytest.mark.parametrize(
    ("transcript", "extra"),
    [
        (
            {
                "system": "You are a careful coding agent.",
                "messages": [{"role": "user", "content": "Fix the parser."}],
            },
            "system",
        ),
        (
            {
                "instructions": "You are a careful coding agent.",
                "input": [{"type": "message", "role": "user", "content": "Fix the parser."}],
            },
            "instructions",
        ),
    ],
    ids=["anthropic", "responses"],
)
def test_other_formats_come_back_in_their_own_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], transcript: dict[str, Any], extra: str
) -> None:
    path = write(tmp_path, transcript)
    code, out, _ = run(capsys, "project", path, "--model", "gpt-4o", "--json")
    assert code == 0
    result = json.loads(out)
    assert result[extra] == "You are a careful coding agent."
    assert result["messages"][-1]["content"] == "Fix the parser."
    code, out, _ = run(capsys, "project", path, "--model", "gpt-4o")
    assert code == 0 and json.loads(out) == transcript
