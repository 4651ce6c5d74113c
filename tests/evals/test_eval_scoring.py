"""Deterministic scorers on small contexts whose answers are known."""

from __future__ import annotations

from eval_support import offline  # noqa: F401  (autouse: no network)
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import FunctionCall, FunctionCallOutput, Message
from compactkit.evals import (
    ArtifactProbe,
    ConstraintProbe,
    ContinuationProbe,
    DecisionProbe,
    RecallProbe,
    ToolStateProbe,
    UpdateProbe,
    score_probes,
)
from compactkit.evals.scoring import artifact_precision, hallucinated, identifiers, written_text
from compactkit.items import summary_message

TIMEOUT = UpdateProbe(name="timeout", aliases=("time limit",), current="45", superseded=("30",))


def user(text: str) -> Message:
    return Message(role="user", content=text)


def verdict(probe, *items):  # type: ignore[no-untyped-def]
    return score_probes([probe], list(items))[0]


def test_constraints_and_facts_must_be_verbatim() -> None:
    probe = ConstraintProbe(text="Never   push to main.")
    assert verdict(probe, user("Rules: Never push\nto main. Thanks")).kept  # whitespace folds
    assert not verdict(probe, user("never push to main.")).kept  # case matters
    error = RecallProbe(fact="KeyError: 'mrr_eur'", kind="error")
    assert verdict(
        error, FunctionCallOutput(call_id="c", output="Traceback\nKeyError: 'mrr_eur'")
    ).kept
    assert verdict(error, FunctionCallOutput(call_id="c", output="x")).cls == "error"


def test_artifacts_decisions_and_continuation() -> None:
    call = FunctionCall(call_id="c1", name="edit_file", arguments='{"path": "src/app.py"}')
    assert verdict(ArtifactProbe(path="src/app.py", action="modified"), call).kept
    assert verdict(ArtifactProbe(path="src/app.py", action="read"), call).cls == "artifact_read"
    decision = DecisionProbe(decision="use httpx", must_include=("httpx", "because"))
    missing = verdict(decision, Message(role="assistant", content="We use httpx."))
    assert not missing.kept and "because" in missing.detail
    step = ContinuationProbe(aspect="next_step", text="open the PR", must_include=("open the PR",))
    assert verdict(step, summary_message("## Next steps\n- open the PR")).kept


def test_a_pending_call_must_stay_pending() -> None:
    probe = ToolStateProbe(call_id="c9", name="bash")
    call = FunctionCall(call_id="c9", name="bash", arguments="{}")
    assert verdict(probe, call).kept
    assert not verdict(probe, call, FunctionCallOutput(call_id="c9", output="done")).kept
    assert not verdict(probe, user("the call c9 was made")).kept


def test_the_newest_unmarked_mention_decides_the_current_value() -> None:
    set_it, change = user("Set the timeout to 30."), user("Make the timeout 45 now.")
    assert verdict(TIMEOUT, set_it, change).kept
    stale = verdict(TIMEOUT, change, set_it)  # read in order, the old value comes last
    assert not stale.kept and stale.stale and "'30'" in stale.detail
    # A marker makes a mention of an old value history, not a claim.
    marked = summary_message("- `timeout` = 45\n- `timeout` was 30 (superseded)")
    assert verdict(TIMEOUT, marked).kept and not verdict(TIMEOUT, marked).stale
    both = user("The time limit is 45 now, not 30.")
    assert verdict(TIMEOUT, both).kept
    # Short values count only next to the fact's name; nothing said is neither kept nor stale.
    silent = verdict(TIMEOUT, user("30 files changed"))
    assert not silent.kept and not silent.stale
    only_old = verdict(TIMEOUT, summary_message("timeout = 30"))
    assert only_old.stale


def test_long_values_count_without_the_name() -> None:
    probe = UpdateProbe(
        name="delivery address",
        current="Müllerweg 12, 1010 Wien",
        superseded=("Lindenstraße 4, 04109 Leipzig",),
    )
    assert verdict(probe, user("Ship it to Müllerweg 12, 1010 Wien.")).kept
    assert verdict(probe, user("Ship it to Lindenstraße 4, 04109 Leipzig.")).stale


def test_identifiers_the_compressor_invented_are_hallucinated() -> None:
    source = [
        user("See https://ci.example.dev/runs/42 and ticket PAY-4821, commit 3f9c2a1."),
        FunctionCall(call_id="call_abcdefgh12", name="bash", arguments='{"command": "ls"}'),
    ]
    summary = summary_message(
        '<summary sig="0a1b2c3d4e5f60718293">\n'  # the compressor's own framing is not a fact
        "- https://ci.example.dev/runs/42, PAY-4821, 3f9c2a1, call_abcdefgh12\n"
        "- clipped: https://ci.example.d…\n"
        "- invented: PAY-9999, https://ci.example.dev/runs/77, src/ghost.py, 9e8d7c6b\n"
    )
    written = written_text([*source, summary], source)
    assert "PAY-4821" in written and "See https" not in written  # copied items are not written
    from compactkit.evals.scoring import source_text

    assert hallucinated(written, source_text(source)) == [
        "https://ci.example.dev/runs/77",
        "PAY-9999",
        "src/ghost.py",
        "9e8d7c6b",
    ]


def test_identifier_kinds_and_artifact_precision() -> None:
    found = dict(identifiers("a 123e4567-e89b-42d3-a456-426614174000 b req_9xY8wV7u6t c v/d.py"))
    assert found == {
        "123e4567-e89b-42d3-a456-426614174000": "uuid",
        "req_9xY8wV7u6t": "prefixed id",
        "v/d.py": "path",
    }
    probes = [ArtifactProbe(path="src/app.py", action="modified")]
    assert artifact_precision("- `src/app.py` edited; `tests/x.py` read", probes) == 0.5
    assert artifact_precision("nothing here", probes) is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["45", "30", "12"]), st.booleans(), st.booleans()), max_size=8
    )
)
def test_the_last_asserting_line_wins(lines: list[tuple[str, bool, bool]]) -> None:
    """Each line names the timeout with one value; ``marked`` adds a stale marker, ``named``
    decides whether the fact's name is there at all (short values need it)."""
    probe = UpdateProbe(name="timeout", current="45", superseded=("30", "12"))
    texts, presented = [], None
    for value, marked, named in lines:
        texts.append(
            ("timeout " if named else "the ") + f"{value}" + (" (superseded)" if marked else "")
        )
        if named and (not marked or value == "45"):
            presented = value
    result = verdict(probe, user("\n".join(texts))) if texts else verdict(probe)
    assert result.kept == (presented == "45")
    assert result.stale == (presented in ("30", "12"))
