"""The runner's recall mode: what one recall(probe's words) call recovers, beside what the
compacted context keeps — the digest on the synthetic suite, compressed past 12x."""

from __future__ import annotations

from eval_support import SUITES, offline  # noqa: F401  (offline: autouse, no network)

from compactkit.evals import baseline, load_suite, run_suite, summarize, to_markdown


def test_recall_recovers_the_folded_details_and_loses_nothing_kept() -> None:
    suite = load_suite(SUITES / "synthetic.yaml")
    results = run_suite(suite, {"digest": baseline("digest")}, recall=True)
    report = summarize(results, suite="synthetic")
    digest = report["compressors"]["digest"]
    assert digest["ratio"]["mean"] >= 12.0
    kept = digest["retention"]["recall"]
    recovered = digest["recoverable"]["recall"]
    # the digest alone drops a few details at 12x (earlier measurements); recall finds them
    assert recovered["mean"] >= 0.95
    assert recovered["kept"] > kept["kept"] or kept["kept"] == kept["total"]
    for cls, kept in digest["retention"].items():
        assert digest["recoverable"][cls]["kept"] >= kept["kept"], cls
    line = next(x for x in to_markdown(report).splitlines() if x.startswith("| recall |"))
    assert line.endswith("with recall |") and " / " in line
    plain = summarize(run_suite(suite, {"digest": baseline("digest")}), suite="synthetic")
    assert "recoverable" not in plain["compressors"]["digest"]
    assert plain["compressors"]["digest"]["retention"] == digest["retention"]
