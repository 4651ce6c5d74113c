"""``compactkit eval``: run with gates (exit 3 on a shortfall), JSON output, reports, generate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_support import FakeServer, offline  # noqa: F401  (offline: autouse, no network)

from compactkit.cli.eval import EXIT_GATE
from compactkit.cli.main import main
from compactkit.evals import SynthSpec, dump_cases, generate, load_suite


@pytest.fixture
def suite_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    cases = [
        generate(SynthSpec(domain="coding", style="editor", size_tokens=8000, seed=1)),
        generate(SynthSpec(domain="data", style="react", size_tokens=8000, seed=2)),
    ]
    dump_cases(cases, tmp_path / "suite.jsonl")
    return tmp_path / "suite.jsonl"


def test_a_failed_gate_exits_3_and_says_by_how_much(
    suite_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["eval", "run", str(suite_file), "--compressor", "window", "--fail-under", "constraint=95%"]
    )
    out, err = capsys.readouterr()
    assert code == EXIT_GATE == 3
    assert "| constraint |" in out
    assert "gate failed: window: constraint = 0.000, below the required 0.950 by 0.950" in err


def test_passing_gates_exit_0_with_json_and_reports(
    suite_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["eval", "run", str(suite_file), "--compressor", "none", "--compressor", "digest"]
    argv += ["--repeat", "2", "--report", str(tmp_path / "out"), "--cache", str(tmp_path / "c")]
    argv += ["--fail-under", "tool_state=1", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gates"] == {"passed": True, "failures": []}
    assert set(data["compressors"]) == {"none", "digest"} and "runs" not in data
    assert data["repeat"] == 2 and data["cases"] == 2
    for key in ("retention", "ratio", "stale_as_current", "hallucinated", "summarizer_calls"):
        assert key in data["compressors"]["digest"]
    report = json.loads(Path(data["reports"]["json"]).read_text(encoding="utf-8"))
    assert len(report["runs"]) == 2 * 2 * 2
    assert Path(data["reports"]["html"]).read_text(encoding="utf-8").startswith("<!doctype html>")
    assert "| digest |" in Path(data["reports"]["markdown"]).read_text(encoding="utf-8")
    assert main([*argv[:-1], "--fail-over", "hallucinated=0"]) == 0  # from the cache


def test_bad_input_exits_2(suite_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "run", str(suite_file), "--fail-under", "vibes=1"]) == 2
    assert "expected NAME=VALUE" in capsys.readouterr().err
    assert main(["eval", "run", str(suite_file), "--compressor", "summary"]) == 2
    assert "--summarizer-model" in capsys.readouterr().err
    bad = suite_file.with_name("bad.jsonl")
    bad.write_text('{"id": "x", "transcript": [], "probes": [{"type": "recall"}]}\n')
    assert main(["eval", "run", str(bad), "--json"]) == 2
    out, err = capsys.readouterr()
    assert "bad.jsonl:1: probes[0].fact: Field required" in err
    assert "probes[0].fact: Field required" in json.loads(out)["error"]


def test_summary_and_judge_through_a_fake_server(
    suite_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer() as server:
        argv = ["eval", "run", str(suite_file), "--compressor", "summary", "--json"]
        argv += ["--summarizer-model", "fake-sum", "--judge-model", "fake-judge"]
        argv += ["--base-url", server.base_url, "--fail-under", "judge=0.5"]
        assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)["compressors"]["summary"]
    assert data["summarizer_calls"]["mean"] > 0 and data["judge"]["overall"]["mean"] > 0
    models = {r["model"] for r in server.requests}
    assert models == {"fake-sum", "fake-judge"}


def test_generate_writes_a_suite_or_a_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gen.jsonl"
    argv = ["eval", "generate", "--domain", "coding", "--domain", "support", "--style", "bash"]
    assert main([*argv, "--size", "3000", "--seed", "5", "--out", str(out)]) == 0
    assert [c.id for c in load_suite(out).cases] == ["coding-bash-3k-s5", "support-bash-3k-s5"]
    assert main(["eval", "generate", "--size", "3000", "--format", "anthropic"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert json.loads(line)["format"] == "anthropic"
    transcript = tmp_path / "t.json"
    assert main(["eval", "generate", "--size", "3000", "--transcript", str(transcript)]) == 0
    assert main(["count", str(transcript), "--model", "gpt-4o"]) == 0
    assert main(["eval", "generate", "--size", "999"]) == 2
    assert "--size" in capsys.readouterr().err


def test_help_documents_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "run", "--help"])
    text = capsys.readouterr().out
    for flag in ("--compressor", "--repeat", "--report", "--fail-under", "--fail-over", "--json"):
        assert flag in text
    assert "3 a gate failed" in text


def test_two_summarizer_models_side_by_side(
    suite_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer() as server:
        argv = ["eval", "run", str(suite_file), "--compressor", "summary", "--compressor", "digest"]
        argv += ["--summarizer-model", "small", "--summarizer-model", "large", "--json"]
        assert main([*argv, "--base-url", server.base_url]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data["compressors"]) == ["summary:small", "summary:large", "digest"]
    assert {r["model"] for r in server.requests} == {"small", "large"}
