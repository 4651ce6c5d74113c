"""Under heavy pressure (a 40x compaction) entries get barer before classes lose them: a
measurement keeps its newest runs instead of vanishing, the state does not repeat the next
step; and every class but the commands keeps its most important entry while other classes still
have extras to give. What is trimmed reads back as it was written."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.budget import TiktokenCounter
from compactkit.compressors import FactReport, SummaryDocument

COUNTER = TiktokenCounter("o200k_base")
KEEP = frozenset({"goal", "constraints"})
TIMES = "\N{MULTIPLICATION SIGN}"


def _latency(runs: int) -> str:
    newest = "`python bench.py --requests 5000` → `p95 latency 500 ms`"
    if runs == 1:
        return newest
    earlier = " | ".join(f"`p95 latency {500 + 10 * i} ms`" for i in range(1, runs))
    return f"{newest} — earlier: {earlier} ({TIMES}{runs})"


def _crowd(errors: int = 60, files: int = 40, ids: int = 40) -> dict[str, list[str]]:
    """Classes of many entries that put a summary under heavy pressure."""
    return {
        "errors": [
            f"`ValueError: bad value {i} in the request body of the retry loop`"
            for i in range(errors)
        ],
        "files_modified": [f"`src/pkg/module_{i}.py` — edited" for i in range(files)],
        "identifiers": [f"`https://ci.example.dev/runs/{8000 + i}`" for i in range(ids)],
    }


def test_a_tracked_measurement_keeps_its_newest_runs_under_heavy_pressure() -> None:
    """Fails before: the history was kept whole (and where the room is tighter, the property
    below, the entry went whole)."""
    doc = SummaryDocument.of(
        goal=["Make the client faster."],
        constraints=["Do not add new dependencies."],
        measurements=[_latency(9)],
        **_crowd(),
    )
    cap = COUNTER.count_text(doc.render()) // 4
    trimmed = doc.trim_to(cap, COUNTER, keep=KEEP)
    assert COUNTER.count_text(trimmed.render()) <= cap
    (kept,) = trimmed.entries("measurements")
    # the newest run and the three before it; "…" says earlier runs were taken
    for ms in (500, 510, 520, 530):
        assert f"`p95 latency {ms} ms`" in kept
    assert "540 ms" not in kept and kept.endswith("| …")
    # the fact report counts it as clipped, not as kept whole
    report = FactReport.compare(doc, trimmed)
    assert report.classes["measurements"].clipped == 1
    # a light trim keeps the whole history
    light = doc.trim_to(COUNTER.count_text(doc.render()) * 9 // 10, COUNTER, keep=KEEP)
    assert "`p95 latency 580 ms`" in light.render()


def test_the_state_does_not_repeat_the_next_step_under_heavy_pressure() -> None:
    step = "Next step: write the changelog entry and open the pull request."
    doc = SummaryDocument.of(
        goal=["Add retries."],
        state=[
            "As of the last folded turn, the assistant said: Current state: retries with "
            f"capped backoff are in place and the unit tests pass. {step}"
        ],
        next_steps=[step],
        **_crowd(),
    )
    trimmed = doc.trim_to(COUNTER.count_text(doc.render()) // 4, COUNTER, keep=KEEP)
    text = trimmed.render()
    assert text.count("write the changelog") == 1
    (state,) = trimmed.entries("state")
    assert state == (
        "The assistant said: Current state: retries with capped backoff are in place and the "
        "unit tests pass."
    )


PROPERTY = settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(
    errors=st.integers(20, 80),
    files=st.integers(5, 40),
    ids=st.integers(5, 40),
    runs=st.integers(1, 9),
    tenths=st.integers(2, 6),
)
def test_every_class_keeps_its_first_entry_while_others_have_extras(
    errors: int, files: int, ids: int, runs: int, tenths: int
) -> None:
    crowd = _crowd(errors, files, ids)
    doc = SummaryDocument.of(
        goal=["Make the client faster."],
        constraints=["Do not add new dependencies."],
        decisions=["I'll use a monotonic clock because wall-clock time can jump."],
        files_read=["`docs/design.md`"],
        commands=[f"`make step{i} --flag` → exit 1" for i in range(30)],
        measurements=["`pytest -q` → `12 passed in 0.3s`", _latency(runs)],
        values=["`max_retries` = 3 (current)", "`max_retries` = 5 (current)"],
        **crowd,
    )
    cap = COUNTER.count_text(doc.render()) * tenths // 10
    trimmed = doc.trim_to(cap, COUNTER, keep=KEEP)
    assert COUNTER.count_text(trimmed.render()) <= cap
    # the first entry of every class (newest; the measured quantity before the test counts)
    firsts = SummaryDocument.of(
        goal=doc.entries("goal"),
        constraints=doc.entries("constraints"),
        decisions=doc.entries("decisions"),
        files_read=doc.entries("files_read"),
        measurements=[_latency(runs)],
        values=["`max_retries` = 5 (current)"],
        **{key: [entries[-1]] for key, entries in crowd.items()},
    )
    if cap >= 2 * COUNTER.count_text(firsts.render()):
        for key in ("decisions", "files_read", "measurements", "values", *crowd):
            assert trimmed.entries(key), f"{key} lost its most important entry"
        assert any(m.startswith("`python bench.py") for m in trimmed.entries("measurements"))
        for key, entries in crowd.items():  # the newest
            assert trimmed.entries(key)[-1].split("`")[1] == entries[-1].split("`")[1]
    # never an old value as current; the note counts what went; it reads back as written
    assert not any("= 3" in v and not v.endswith("(superseded)") for v in trimmed.entries("values"))
    assert SummaryDocument.parse(trimmed.render()) == trimmed
    for key, entries in crowd.items():
        assert trimmed.omitted.get(key, 0) == len(entries) - len(trimmed.entries(key))


def test_a_state_with_no_next_step_keeps_its_words_under_heavy_pressure() -> None:
    doc = SummaryDocument.of(
        goal=["Add retries."],
        state=["As of the last folded turn, the assistant said: Ran `make check`; it passed."],
        **_crowd(),
    )
    trimmed = doc.trim_to(COUNTER.count_text(doc.render()) // 4, COUNTER, keep=KEEP)
    assert trimmed.entries("state") == ("The assistant said: Ran `make check`; it passed.",)


def test_at_40x_the_digest_reports_its_measurement_clipped_and_reads_back_as_written() -> None:
    """What a user reads: the measurement whose earlier runs went is reported clipped, and the
    summary a second process parses is the one the compaction wrote."""
    import json

    from compactkit import DigestCompressor, MemorySnapshot
    from compactkit.evals.synth import SynthSpec, generate
    from compactkit.formats.transcript import parse_transcript

    case = generate(SynthSpec(domain="data", style="react", size_tokens=40_000, seed=1))
    transcript = parse_transcript(json.dumps(case.transcript), format=case.format, source=case.id)
    snapshot = MemorySnapshot.from_items(transcript.items)
    tools = tuple(transcript.tools)
    target = COUNTER.count(snapshot.render_items(), tools=tools).tokens // 40
    result = DigestCompressor(target_tokens=target, counter=COUNTER, tools=tools).compress(snapshot)
    summary = SummaryDocument.parse(result.snapshot.summary or "")
    assert summary.render() == result.snapshot.summary
    assert summary.entries("values")  # (marked current: reading marks an unmarked one so)
    (measured,) = summary.entries("measurements")
    assert measured.endswith("| …")
    report = FactReport.of(result)
    assert report is not None and report.classes["measurements"].clipped == 1
