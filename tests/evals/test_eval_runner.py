"""The runner: baselines and adapters side by side, repeats, caching and resuming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_support import offline  # noqa: F401  (autouse: no network)

from compactkit import CompactResult, ConfigError, MemorySnapshot, WindowedCompressor
from compactkit.evals import (
    Sizing,
    Suite,
    SynthSpec,
    as_compressor,
    baseline,
    generate,
    run_suite,
    summarize,
)
from compactkit.testing import FunctionLLM


@pytest.fixture(scope="module")
def suite() -> Suite:
    cases = tuple(
        generate(SynthSpec(domain=d, style=s, size_tokens=6000, seed=i))  # type: ignore[arg-type]
        for i, (d, s) in enumerate([("coding", "bash"), ("support", "typed")])
    )
    return Suite(name="tiny", cases=cases)


class Counting:
    """Wraps a compressor and counts how often it really ran."""

    def __init__(self) -> None:
        self.calls = 0

    def factory(self, sizing: Sizing) -> WindowedCompressor:
        self.calls += 1
        return WindowedCompressor(max_tokens=sizing.target_tokens, counter=sizing.counter)


def test_baselines_side_by_side(suite: Suite) -> None:
    names = ("none", "window", "mask", "digest", "ladder")
    results = run_suite(suite, {n: baseline(n) for n in names}, concurrency=2)
    assert [r.compressor for r in results] == [n for n in names for _ in suite.cases]
    report = summarize(results, suite="tiny")
    none, window = report["compressors"]["none"], report["compressors"]["window"]
    assert none["overall_retention"]["mean"] == 1.0 and none["ratio"]["mean"] == 1.0
    assert window["ratio"]["mean"] > 2  # it really compressed …
    assert window["retention"]["constraint"]["mean"] < 1  # … and forgot the opening rules
    for r in results:
        assert bool(r.details) == (r.compressor != "none")  # the compressor's own stats
        assert r.tokens_after <= r.tokens_before
        assert r.outcome in ("compacted", "unchanged")
        assert sum(t for _, t in r.retention.values()) == len(r.probes)


def test_cached_runs_are_not_run_again(suite: Suite, tmp_path: Path) -> None:
    counting = Counting()
    first = run_suite(suite, {"w": counting.factory}, repeat=2, cache_dir=tmp_path)
    assert counting.calls == 4 and not any(r.cached for r in first)
    again = run_suite(suite, {"w": counting.factory}, repeat=2, cache_dir=tmp_path)
    assert counting.calls == 4 and all(r.cached for r in again)
    assert [r.model_dump(exclude={"cached"}) for r in again] == [
        r.model_dump(exclude={"cached"}) for r in first
    ]
    # A third repeat, a torn cache file and a new fingerprint: only those runs happen.
    broken = sorted(tmp_path.glob("*.json"))[0]
    broken.write_text("{not json", encoding="utf-8")
    run_suite(suite, {"w": counting.factory}, repeat=3, cache_dir=tmp_path)
    assert counting.calls == 4 + 2 + 1
    run_suite(suite, {"w": counting.factory}, cache_dir=tmp_path, fingerprints={"w": "v2"})
    assert counting.calls == 7 + 2


def test_repeats_give_a_mean_and_a_spread(suite: Suite) -> None:
    answers = iter(["a", "b"] * 10)

    def flaky(sizing: Sizing) -> WindowedCompressor:  # keeps more on every other run
        size = sizing.target_tokens if next(answers) == "a" else sizing.target_tokens * 3
        return WindowedCompressor(max_tokens=size, counter=sizing.counter)

    report = summarize(run_suite(suite, {"flaky": flaky}, repeat=2, concurrency=1), suite="t")
    data = report["compressors"]["flaky"]
    assert report["repeat"] == 2
    assert data["tokens_after"]["std"] > 0
    assert data["overall_retention"]["std"] >= 0


def test_user_compressors_and_plain_functions(suite: Suite) -> None:
    from langchain_core.messages import trim_messages

    def keep_system_and_last_two(messages: list[dict[str, object]]) -> list[dict[str, object]]:
        return [messages[0], *messages[-2:]]

    def trim(messages: list[dict[str, object]]) -> object:
        return trim_messages(
            messages,
            max_tokens=40,
            token_counter=len,  # one "token" per message
            strategy="last",
            include_system=True,
            start_on="human",
        )

    factories = {
        "mine": as_compressor(WindowedCompressor(max_items=4)),
        "last_two": as_compressor(keep_system_and_last_two),
        "trim_messages": as_compressor(trim),
    }
    results = run_suite(suite, factories)
    by = {(r.compressor, r.case_id): r for r in results}
    for case in suite.cases:
        assert by[("last_two", case.id)].tokens_after < by[("last_two", case.id)].tokens_before
        assert by[("trim_messages", case.id)].outcome == "compacted"
        assert by[("mine", case.id)].outcome == "compacted"


def test_a_broken_compressor_is_a_failed_run_not_a_crash(suite: Suite) -> None:
    class Broken:
        def compress(self, snapshot: MemorySnapshot) -> CompactResult:
            raise RuntimeError("boom")

    def bad_function(messages: list[dict[str, object]]) -> object:
        return "not messages"

    results = run_suite(
        suite, {"broken": as_compressor(Broken()), "bad": as_compressor(bad_function)}
    )
    assert {r.outcome for r in results} == {"failed"}
    assert any("boom" in (r.error or "") for r in results)
    assert any("list of messages" in (r.error or "") for r in results)
    for r in results:  # nothing was lost: every fact is still there
        assert all(v.kept for v in r.probes)


def test_summary_needs_a_summarizer_and_counts_its_calls(suite: Suite) -> None:
    with pytest.raises(ConfigError, match="--summarizer-model"):
        baseline("summary")
    with pytest.raises(ConfigError, match="unknown compressor 'zip'"):
        baseline("zip")
    with pytest.raises(ConfigError):
        as_compressor(42)
    from eval_support import fake_reply

    llm = FunctionLLM(fake_reply)
    results = run_suite(suite, {"summary": baseline("summary", llm=llm)}, concurrency=1)
    assert sum(r.summarizer_calls for r in results) == len(llm.calls) > 0
    assert all(r.summarizer_input_tokens > 0 for r in results if r.summarizer_calls)
    json.dumps(summarize(results, suite="t"))  # the report is JSON-ready


def test_the_progress_bar_goes_to_stderr_only(
    suite: Suite, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[str] = []
    results = run_suite(
        suite,
        {"window": baseline("window")},
        progress=True,
        on_result=lambda r: seen.append(r.case_id),
    )
    out, _ = capsys.readouterr()
    assert out == ""  # stdout stays clean for --json
    assert sorted(seen) == sorted(r.case_id for r in results)
    with pytest.raises(ConfigError, match="at least 1"):
        run_suite(suite, {"window": baseline("window")}, repeat=0)
    with pytest.raises(ConfigError, match="at least one compressor"):
        run_suite(suite, {})


def test_editing_a_transcript_file_invalidates_its_cached_results(tmp_path: Path) -> None:
    from compactkit.evals import load_suite

    chat = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "Never touch prod."},
        {"role": "assistant", "content": "ok"},
    ]
    (tmp_path / "t.json").write_text(json.dumps(chat), encoding="utf-8")
    (tmp_path / "s.yaml").write_text(
        "cases:\n  - id: a\n    transcript_file: t.json\n"
        "    probes: [{type: constraint, text: Never touch prod.}]\n",
        encoding="utf-8",
    )
    counting = Counting()
    cache = tmp_path / "cache"
    run_suite(load_suite(tmp_path / "s.yaml"), {"w": counting.factory}, cache_dir=cache)
    run_suite(load_suite(tmp_path / "s.yaml"), {"w": counting.factory}, cache_dir=cache)
    assert counting.calls == 1
    chat[2]["content"] = "done, and nothing in prod was touched"
    (tmp_path / "t.json").write_text(json.dumps(chat), encoding="utf-8")
    run_suite(load_suite(tmp_path / "s.yaml"), {"w": counting.factory}, cache_dir=cache)
    assert counting.calls == 2
