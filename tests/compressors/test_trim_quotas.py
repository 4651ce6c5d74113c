"""Trimming under heavy pressure shares the room inside classes, not between them: every class
keeps its most important entries (an open error before a resolved one, the measurement taken
over the most runs), and what went is counted in the summary."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.budget import TiktokenCounter
from compactkit.compressors import SummaryDocument
from compactkit.compressors._facts import measurements_in

COUNTER = TiktokenCounter("o200k_base")


def _doc(errors: int, commands: int, decisions: int, reads: int) -> SummaryDocument:
    return SummaryDocument.of(
        goal=["Add retries to the HTTP client."],
        constraints=["Do not add new dependencies."],
        decisions=[
            f"I chose option {i} because option {i - 1} broke the build." for i in range(decisions)
        ],
        files_read=[f"`src/read_{i}.py` — read" for i in range(reads)],
        commands=[f"`make step{i} --with-a-long-flag-{i}` → exit 1" for i in range(commands)],
        measurements=[
            "`bench.py` → `p95 latency 410 ms` — earlier: `p95 latency 520 ms` | `p95 latency 610 ms`"
            " (\N{MULTIPLICATION SIGN}3)",
            *(f"`check{i}.py` → `{i} passed in 0.{i}s`" for i in range(3)),
        ],
        errors=[
            f"`ValueError: bad value {i} in the request body of the retry loop`"
            + (" — resolved" if i % 2 else "")
            for i in range(errors)
        ],
    )


PROPERTY = settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(st.integers(20, 60), st.integers(20, 60), st.integers(3, 6), st.integers(3, 8))
def test_every_class_keeps_its_most_important_entries(
    errors: int, commands: int, decisions: int, reads: int
) -> None:
    doc = _doc(errors, commands, decisions, reads)
    full = COUNTER.count_text(doc.render())
    cap = full // 2  # far from everything fits
    trimmed = doc.trim_to(cap, COUNTER, keep=frozenset({"goal", "constraints"}))
    assert COUNTER.count_text(trimmed.render()) <= cap
    for key in ("errors", "commands", "decisions", "files_read", "measurements"):
        assert trimmed.entries(key), f"the whole class {key} was dropped"
    # the measurement tracked over the most runs is the one kept first, with its history
    assert "p95 latency 610 ms" in trimmed.render()
    # open errors are kept before resolved ones
    kept = trimmed.entries("errors")
    if any("resolved" in e for e in kept):
        assert all(e in kept for e in doc.entries("errors") if "resolved" not in e)
    # the trimming note says what went
    assert trimmed.omitted.get("errors", 0) == errors - len(kept)
    assert trimmed.omitted.get("commands", 0) == commands - len(trimmed.entries("commands"))


def test_measurements_keep_their_value_without_the_banner() -> None:
    out = "collected 5 items\n.....\n=================== 5 passed in 0.31s ===================\n"
    assert measurements_in(out) == ["5 passed in 0.31s"]


def test_a_long_list_of_settings_does_not_crowd_out_every_error() -> None:
    doc = SummaryDocument.of(
        goal=["Tune the service."],
        values=[f"`setting_{i}` = {i} (current)" for i in range(60)],
        errors=[f"`TimeoutError: call {i} to the upstream took too long`" for i in range(30)],
    )
    cap = COUNTER.count_text(doc.render()) // 3
    trimmed = doc.trim_to(cap, COUNTER, keep=frozenset({"goal", "constraints"}))
    assert COUNTER.count_text(trimmed.render()) <= cap
    assert trimmed.entries("errors") and trimmed.entries("values")
    # the newest settings are the ones kept
    assert trimmed.entries("values")[-1] == doc.entries("values")[-1]


def test_a_decision_that_says_why_outlasts_one_that_does_not() -> None:
    reasoned = "I'll use a monotonic clock because wall-clock time can jump."
    plain = [f"Removing the old helper number {i} now that it is unused." for i in range(6)]
    doc = SummaryDocument.of(
        goal=["Fix the retry loop."],
        decisions=[reasoned, *plain],
        errors=[f"`ValueError: bad input {i} in the retry loop body`" for i in range(40)],
    )
    cap = COUNTER.count_text(doc.render()) // 4
    trimmed = doc.trim_to(cap, COUNTER, keep=frozenset({"goal", "constraints"}))
    kept = trimmed.entries("decisions")
    assert kept and len(kept) < len(doc.entries("decisions"))
    assert any(e.startswith("I'll use a monotonic clock") for e in kept)


def test_a_measured_quantity_outlasts_a_test_runs_counts() -> None:
    """A value the work tunes (a latency over 3 runs) is kept before how many tests passed, even
    over more runs: the test runs' outcomes are the commands' and the errors' to tell."""
    counts = " | ".join(f"`{100 + i} passed in 2.{i}s`" for i in range(20))
    tests = f"`python -m pytest -q` → `249 passed in 29.63s` — earlier: {counts} (\N{MULTIPLICATION SIGN}21)"
    latency = (
        "`python bench.py --requests 5000` → `p95 latency 198 ms` — earlier: "
        "`p95 latency 359 ms` | `p95 latency 580 ms` (\N{MULTIPLICATION SIGN}3)"
    )
    doc = SummaryDocument.of(
        goal=["Make the client faster."],
        measurements=[latency, tests],
        errors=[f"`ValueError: bad input {i} in the retry loop body`" for i in range(40)],
        files_modified=[f"`src/module_{i}.py` — edited" for i in range(30)],
    )
    kept: tuple[str, ...] = ()
    for share in range(20, 1, -1):  # the tightest cap that still keeps a measurement
        cap = COUNTER.count_text(doc.render()) * share // 20
        trimmed = doc.trim_to(cap, COUNTER, keep=frozenset({"goal", "constraints"}))
        if len(trimmed.entries("measurements")) == 1:
            kept = trimmed.entries("measurements")
            break
    assert kept and kept[0].startswith("`python bench.py"), kept
