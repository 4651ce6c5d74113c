"""``compactkit compact``: the contract of docs/cli.md, on the bundled coding session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compactkit.cli import main
from compactkit.compressors import SummaryDocument
from compactkit.formats.chat import validate_chat
from compactkit.items.snapshot import summary_message, unseal_summary

EXAMPLE = Path(__file__).resolve().parents[2] / "compactkit/data/examples/coding_session.json"
KEYS = {"messages", "summary", "tokens_before", "tokens_after", "folded", "outcome", "error"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(["compact", *argv])
    captured = capsys.readouterr()
    try:
        out = json.loads(captured.out) if captured.out.strip() else None
    except json.JSONDecodeError:
        out = captured.out
    return code, out, captured.err


def count(capsys: pytest.CaptureFixture[str], path: Path) -> int:
    assert main(["count", str(path), "--model", "gpt-4o"]) == 0
    return int(capsys.readouterr().out)


@pytest.mark.parametrize("compressor", ["window", "mask", "digest", "ladder"])
def test_each_compressor_reports_the_contracts_keys(
    capsys: pytest.CaptureFixture[str], compressor: str
) -> None:
    code, out, _ = run(
        capsys,
        str(EXAMPLE),
        "--model",
        "gpt-4o",
        "--compressor",
        compressor,
        "--target",
        "12000",
        "--json",
    )
    assert code == 0
    assert set(out) >= KEYS
    assert out["outcome"] == "compacted" and out["error"] is None
    assert out["tokens_before"] > 30_000
    assert out["tokens_after"] < out["tokens_before"]
    _, problems = validate_chat(out["messages"], mode="repair")
    assert problems == []
    assert out["messages"][0]["role"] == "system"  # the system prompt is never altered
    assert out["messages"][0]["content"].startswith("You are Forge")
    if compressor == "mask":
        assert out["folded"] == 0  # outputs are replaced, no message leaves
    else:
        assert out["folded"] > 0
        assert len(out["messages"]) < 180
    if compressor in ("digest", "ladder"):
        assert out["tokens_after"] <= 12_000
        assert out["messages"][1]["role"] == "user"  # the default summary role: not system
        assert unseal_summary(out["messages"][1]["content"]) == out["summary"]
    if compressor == "window":
        assert out["summary"] == ""  # the window forgets: no summary


def test_tokens_are_the_whole_request(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "out.json"
    code, out, _ = run(
        capsys,
        str(EXAMPLE),
        "--model",
        "gpt-4o",
        "--compressor",
        "digest",
        "--target",
        "9000",
        "--out",
        str(out_file),
        "--json",
    )
    assert code == 0
    assert out["tokens_before"] == count(capsys, EXAMPLE)
    # Written as a transcript with the input's tools: the count of the file is the request.
    written = json.loads(out_file.read_text())
    assert written["messages"] == out["messages"]
    assert written["tools"] == json.loads(EXAMPLE.read_text())["tools"]
    assert count(capsys, out_file) == out["tokens_after"]


def test_without_json_the_messages_go_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, str(EXAMPLE), "--model", "gpt-4o", "--compressor", "window", "--target", "5000"
    )
    assert code == 0
    assert out["messages"][0]["role"] == "system" and out["tools"]  # the example has tools


def test_with_out_and_without_json_stdout_is_empty(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "c.json"
    code, out, _ = run(
        capsys,
        str(EXAMPLE),
        "--model",
        "gpt-4o",
        "--compressor",
        "mask",
        "--target",
        "20000",
        "--out",
        str(out_file),
    )
    assert code == 0 and out is None
    assert json.loads(out_file.read_text())["messages"][0]["role"] == "system"


def test_default_target_comes_from_the_model_profile(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, str(EXAMPLE), "--model", "gpt-4o", "--compressor", "ladder", "--json"
    )
    assert code == 0
    assert out["target"] > out["tokens_before"]  # gpt-4o's target is far above 31k
    assert out["outcome"] == "unchanged" and out["folded"] == 0
    assert out["tokens_after"] == out["tokens_before"]


def test_reading_back_merges_into_the_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = tmp_path / "first.json"
    code, out1, _ = run(
        capsys,
        str(EXAMPLE),
        "--model",
        "gpt-4o",
        "--compressor",
        "ladder",
        "--target",
        "14000",
        "--out",
        str(first),
        "--json",
    )
    assert code == 0 and out1["summary"]
    code, out2, _ = run(
        capsys,
        str(first),
        "--model",
        "gpt-4o",
        "--compressor",
        "digest",
        "--target",
        "7000",
        "--json",
    )
    assert code == 0 and out2["outcome"] == "compacted"
    messages = out2["messages"]
    marked = [m for m in messages if unseal_summary(m.get("content") or "") is not None]
    assert len(marked) == 1 and messages.index(marked[0]) == 1  # one summary, after the system
    # Merged, not frozen and not folded as a message: the first summary's goal and constraints
    # are still there once, and the new summary has more facts than the first.
    before, after = SummaryDocument.parse(out1["summary"]), SummaryDocument.parse(out2["summary"])
    # (later user requests that state no rule are added under the goal as "Later: …")
    assert after.entries("goal")[: len(before.entries("goal"))] == before.entries("goal")
    for constraint in before.entries("constraints"):
        assert constraint in after.entries("constraints")
    assert out2["summary"].count("# Conversation summary (compactkit)") == 1
    assert "compactkit_summary" not in out2["summary"]
    assert out2["tokens_after"] <= 7000


def test_a_system_summary_written_earlier_keeps_its_role(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    messages = json.loads(EXAMPLE.read_text())["messages"]
    summary = SummaryDocument.of(goal=["Earlier goal."], constraints=["Never use tabs."]).render()
    messages.insert(1, {"role": "system", "content": summary_message(summary, "system").text})
    path = tmp_path / "t.json"
    path.write_text(json.dumps(messages))
    code, out, _ = run(
        capsys,
        str(path),
        "--model",
        "gpt-4o",
        "--compressor",
        "digest",
        "--target",
        "8000",
        "--json",
    )
    assert code == 0
    assert out["messages"][1] == {
        "role": "system",  # system was chosen explicitly when it was written: kept
        "content": summary_message(out["summary"], "system").text,
    }
    doc = SummaryDocument.parse(out["summary"])
    assert doc.entries("goal")[0] == "Earlier goal."  # the existing goal is the anchor
    assert all(g.startswith("Later: ") for g in doc.entries("goal")[1:])  # later requests
    assert "Never use tabs." in doc.entries("constraints")


def test_an_unreachable_target_fails_with_exit_1_and_loses_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    messages = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "word " * 2000},
    ]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(messages))
    code, out, err = run(
        capsys,
        str(path),
        "--model",
        "gpt-4o",
        "--compressor",
        "ladder",
        "--target",
        "500",
        "--json",
    )
    assert code == 1
    assert out["outcome"] == "failed"
    assert out["error"].startswith("cannot reach target 500 tokens")
    assert "latest user input (2,00" in out["error"]
    assert out["messages"] == messages and out["folded"] == 0
    assert "cannot reach target 500 tokens" in err


def test_a_best_effort_compressor_over_the_target_warns(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        str(EXAMPLE),
        "--model",
        "gpt-4o",
        "--compressor",
        "mask",
        "--target",
        "3000",
        "--json",
    )
    assert code == 0 and out["outcome"] == "compacted"
    assert out["target_met"] is False
    assert "over the target 3,000" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--compressor", "zip"], "invalid choice: 'zip'"),
        (["--compressor", "ladder", "--target", "0"], "must be positive"),
    ],
)
def test_bad_flags_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compact", str(EXAMPLE), "--model", "gpt-4o", *argv])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_summary_without_a_summarizer_model_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compact", str(EXAMPLE), "--model", "gpt-4o", "--compressor", "summary"])
    assert code == 2
    assert "--summarizer-model" in capsys.readouterr().err


def test_a_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(
        ["compact", str(tmp_path / "nope.json"), "--model", "gpt-4o", "--compressor", "window"]
    )
    assert code == 2
    assert "nope.json" in capsys.readouterr().err
