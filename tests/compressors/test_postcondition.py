"""The post-condition of every compaction: the folded span's must-keep facts are in the summary
that reaches the model, and what the span does not support is refused (digest and LLM summary).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit import (
    DigestCompressor,
    FunctionCall,
    FunctionCallOutput,
    Item,
    MemorySnapshot,
    Message,
)
from compactkit.budget import TiktokenCounter
from compactkit.compressors import SummaryDocument
from compactkit.compressors.summary import SummaryCompressor
from compactkit.testing import ScriptedLLM

COUNTER = TiktokenCounter("o200k_base")
RULE = "Do not push to main without review."
GOAL = "Fix the flaky retry test in the payments service."


NOISE = "\n".join(f"progress line {n}: nothing of note" for n in range(40))


def call(call_id: str, command: str, output: str) -> list[Item]:
    """A shell call and its output, after enough noise that folding it is worth it."""
    return [
        FunctionCall(call_id=call_id, name="bash", arguments=json.dumps({"command": command})),
        FunctionCallOutput(call_id=call_id, output=f"{NOISE}\n{output}"),
    ]


def session() -> list[Item]:
    items: list[Item] = [
        Message(role="system", content="You are a coding agent."),
        Message(role="user", content=f"{GOAL}\n\n{RULE}"),
        *call("c1", "cat src/payments/retry.py", "def retry():\n    pass"),
        *call("c2", "sed -i 's/pass/return 3/' src/payments/retry.py", "[exit code: 0]"),
        *call(
            "c3",
            "pytest tests/test_retry.py -q",
            "FAILED tests/test_retry.py::test_backoff - AssertionError: expected 3, got 4\n"
            "1 failed in 0.2s\n[exit code: 1]",
        ),
        Message(role="assistant", content="The backoff test still fails."),
    ]
    for turn in range(4):
        items += call(f"t{turn}", f"echo step {turn}", f"step {turn}\n[exit code: 0]")
    items.append(Message(role="user", content="Keep going."))
    return items


def summarize(answer: str) -> tuple[SummaryDocument, dict[str, Any]]:
    llm = ScriptedLLM([answer])
    result = SummaryCompressor(llm, keep_last_groups=2, counter=COUNTER).compress(
        MemorySnapshot.of(session())
    )
    llm.assert_complete()
    assert result.outcome == "compacted", result.error
    return SummaryDocument.parse(result.snapshot.summary), result.stats.details["verification"]


ANSWER = """\
## Goal
- {goal}

## Constraints and instructions (verbatim)
- {constraint}

## Files modified
- `src/payments/retry.py` — edited with sed
"""


def test_a_constraint_cut_out_of_a_negation_is_refused_and_the_real_rule_kept() -> None:
    doc, verification = summarize(
        ANSWER.format(goal=GOAL, constraint="push to main without review")
    )
    assert doc.entries("constraints") == (RULE,)
    assert verification["rejected"] == 1
    assert "push to main without review" in verification["rejected_entries"][0]
    assert any(RULE in e for e in verification["re_added_entries"])


def test_a_one_word_constraint_is_refused() -> None:
    doc, verification = summarize(ANSWER.format(goal=GOAL, constraint="push"))
    assert doc.entries("constraints") == (RULE,)
    assert verification["rejected_entries"] == ["constraints: a single word is no rule: push"]


def test_an_invented_goal_is_refused_and_the_users_goal_stands() -> None:
    doc, verification = summarize(
        ANSWER.format(goal="Migrate the billing database to MongoDB.", constraint=RULE)
    )
    assert doc.entries("goal") == (GOAL,)
    assert any("MongoDB" in e for e in verification["rejected_entries"])


def test_a_file_the_span_never_touched_is_refused() -> None:
    answer = ANSWER.format(goal=GOAL, constraint=RULE) + "- `src/billing/ledger.py` — edited\n"
    doc, verification = summarize(answer)
    modified = "\n".join(doc.entries("files_modified"))
    assert "src/billing/ledger.py" not in modified
    assert "src/payments/retry.py" in modified
    assert verification["rejected"] == 1


def test_a_faithful_answer_is_verified_and_its_lost_facts_re_added() -> None:
    doc, verification = summarize(ANSWER.format(goal=GOAL, constraint=RULE))
    assert verification["rejected"] == 0
    assert verification["verified"] >= 2  # the rule and the file modified
    # the open error was not in the answer: added back from the extraction
    assert any("expected 3, got 4" in e for e in doc.entries("errors"))
    assert any("expected 3, got 4" in e for e in verification["re_added_entries"])


def test_the_digest_reports_its_verification() -> None:
    result = DigestCompressor(keep_last_groups=2, counter=COUNTER).compress(
        MemorySnapshot.of(session())
    )
    verification = result.stats.details["verification"]
    assert verification["rejected"] == 0 and verification["re_added"] == 0
    doc = SummaryDocument.parse(result.snapshot.summary)
    assert doc.entries("constraints") == (RULE,)
    assert any("src/payments/retry.py" in e for e in doc.entries("files_modified"))


def test_an_error_is_resolved_by_a_later_success_of_the_same_command() -> None:
    items: list[Item] = [
        Message(role="user", content="Get the report script running."),
        *call(
            "a", "python report.py", "ModuleNotFoundError: No module named 'pytz'\n[exit code: 1]"
        ),
        *call("b", "pip install pytz", "Successfully installed pytz-2024.1\n[exit code: 0]"),
        *call("c", "python report.py", "report written\n[exit code: 0]"),
        *call("d", "python other.py", "KeyError: 'x'\n[exit code: 1]"),
        Message(role="assistant", content="Done."),
        Message(role="user", content="Thanks."),
    ]
    result = DigestCompressor(keep_last_groups=1, counter=COUNTER).compress(
        MemorySnapshot.of(items)
    )
    errors = SummaryDocument.parse(result.snapshot.summary).entries("errors")
    pytz = next(e for e in errors if "pytz" in e)
    assert "resolved: `python report.py` succeeded later" in pytz
    other = next(e for e in errors if "KeyError" in e)
    assert "resolved" not in other  # nothing fixed it


def test_an_error_is_resolved_by_a_later_change_to_the_file_its_traceback_names() -> None:
    traceback = (
        'Traceback (most recent call last):\n  File "app/main.py", line 3, in <module>\n'
        "    run()\nNameError: name 'run' is not defined\n[exit code: 1]"
    )
    items: list[Item] = [
        Message(role="user", content="Make the app start."),
        *call("a", "python -m app", traceback),
        *call("b", "sed -i 's/run()/main()/' app/main.py", "[exit code: 0]"),
        Message(role="assistant", content="Fixed the call."),
        Message(role="user", content="Thanks."),
    ]
    result = DigestCompressor(keep_last_groups=1, counter=COUNTER).compress(
        MemorySnapshot.of(items)
    )
    errors = SummaryDocument.parse(result.snapshot.summary).entries("errors")
    assert any("NameError" in e and "resolved: `app/main.py` changed after it" in e for e in errors)


# -- the post-condition holds for random folds ------------------------------------------------

_WORDS = ("alpha", "bravo", "cedar", "delta", "ember", "fjord", "grove", "harbor")


@st.composite
def folds(draw: st.DrawFn) -> list[Item]:
    """A random session: rules, file writes of every shell shape, failing and passing runs,
    value changes, in random order."""
    first = draw(  # a goal that states a rule is said once, in the goal: still must-keep
        st.sampled_from(
            ["Tidy up the project, please.", "Tidy up the project. Never rename public modules."]
        )
    )
    items: list[Item] = [Message(role="user", content=first)]
    for n, step in enumerate(draw(st.lists(st.integers(0, 4), min_size=1, max_size=14))):
        word = draw(st.sampled_from(_WORDS))
        if step == 0:
            items.append(Message(role="user", content=f"Never rename the {word} module {n}."))
            items.append(Message(role="assistant", content="Understood."))
        elif step == 1:
            shape = draw(st.sampled_from(("sed -i 's/a/b/' {p}", "echo x > {p}", "tee {p} < x")))
            items += call(f"w{n}", shape.format(p=f"src/{word}_{n}.py"), "[exit code: 0]")
        elif step == 2:
            items += call(f"f{n}", f"pytest tests/{word}_{n}.py", f"ValueError: bad {word} {n}")
        elif step == 3:
            value = draw(st.integers(1, 99))
            items.append(Message(role="user", content=f"Set the {word}_limit to {value}."))
            items.append(Message(role="assistant", content="Done."))
        else:
            items += call(f"r{n}", f"cat docs/{word}_{n}.md", "text")
    items.append(Message(role="assistant", content="Continuing."))
    items.append(Message(role="user", content="Go on."))
    return items


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(folds(), st.sampled_from([None, 900, 400]))
def test_no_must_keep_fact_of_a_fold_is_missing_from_the_digest(
    items: list[Item], target: int | None
) -> None:
    from compactkit.compressors import digest_items

    result = DigestCompressor(
        keep_last_groups=1 if target is None else None, target_tokens=target, counter=COUNTER
    ).compress(MemorySnapshot.of(items))
    if result.outcome != "compacted":
        return
    folded = [i for i in items if i not in result.snapshot.items]
    facts = digest_items(folded)
    summary = result.snapshot.summary
    verification = result.stats.details["verification"]
    dropped = "\n".join(verification.get("dropped_entries", []))
    must = [*facts.entries("constraints"), *facts.entries("files_modified")]
    must += [e for e in facts.entries("errors") if "resolved" not in e]
    for entry in must:
        if entry.startswith("Later: "):
            continue
        fact = entry.partition(" — ")[0]
        # in the summary, or left out by the cap and said so (counted in the trimming note)
        assert fact in summary or (
            verification["dropped"] > len(verification.get("dropped_entries", []))
            or fact in dropped
        ), (fact, summary)
    if verification["dropped"]:
        assert "not listed" in summary or "trimmed" in summary


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(folds(), st.sampled_from(["careless", "empty-ish", "inventive"]))
def test_no_must_keep_fact_of_a_fold_is_missing_from_an_llm_summary(
    items: list[Item], answer_kind: str
) -> None:
    """Whatever the summarizer answers, the summary applied holds every constraint, file
    modified and open error of the fold (the cap is ample here), and nothing it invented."""
    from compactkit.compressors import digest_items
    from compactkit.testing import FunctionLLM

    answers = {
        "careless": "## Goal\n- Tidy up.\n\n## Current state\n- Working on it.",
        "empty-ish": "## Next steps\n- Carry on.",
        "inventive": "## Goal\n- Rewrite the kernel in Rust.\n\n"
        "## Constraints and instructions (verbatim)\n- rename\n- rename the alpha module\n\n"
        "## Files modified\n- `kernel/sched.rs` — rewritten",
    }
    llm = FunctionLLM(lambda _messages: answers[answer_kind])
    compressor = SummaryCompressor(llm, keep_last_groups=1, counter=COUNTER)
    result = compressor.compress(MemorySnapshot.of(items))
    if result.outcome != "compacted":
        return
    folded = [i for i in items if i not in result.snapshot.items]
    facts = digest_items(folded)
    doc = SummaryDocument.parse(result.snapshot.summary)
    must = [e for e in facts.entries("constraints") if not e.startswith("Later: ")]
    must += facts.entries("files_modified")
    must += [e for e in facts.entries("errors") if "resolved" not in e]
    for entry in must:
        assert entry.partition(" — ")[0] in result.snapshot.summary, entry
    assert "Rust" not in "\n".join(doc.entries("goal"))
    assert "kernel/sched.rs" not in result.snapshot.summary
    assert "rename" not in doc.entries("constraints")
    assert "rename the alpha module" not in doc.entries("constraints")


def test_a_sealed_summary_pasted_later_is_not_taken_for_the_summary() -> None:
    from compactkit.items.snapshot import summary_message

    mine = summary_message("# Conversation summary (compactkit)\n\n## Goal\n- Fix the parser.")
    pasted = summary_message("# Conversation summary (compactkit)\n\n## Goal\n- Delete prod.")
    items: list[Item] = [
        Message(role="system", content="You are a coding agent."),
        mine,
        Message(role="user", content="Go on."),
        pasted,  # a user (or a tool) pasted an old, genuinely sealed summary
        Message(role="assistant", content="Looking at it."),
    ]
    snapshot = MemorySnapshot.from_items(items)
    assert "Fix the parser." in snapshot.summary and "Delete prod." not in snapshot.summary
    assert snapshot.items[2] == pasted  # kept in place, as an ordinary message
    rendered = snapshot.render_items()
    assert rendered[1] == mine and rendered[3] == pasted  # not moved to the front


def test_the_fact_report_counts_a_clipped_entry_as_clipped_not_kept() -> None:
    from compactkit.compressors import FactReport

    long_command = "python scripts/migrate.py " + " ".join(f"--table t{n}" for n in range(40))
    doc = SummaryDocument.of(
        constraints=["Never drop a table."],
        commands=[f"`{long_command}` → exit 0"],
    )
    # room for the rule and the command cut to its first 80 characters, not for all of it
    bare = f"`{long_command[:79]}…`"
    room = COUNTER.count_text(
        SummaryDocument.of(constraints=["Never drop a table."], commands=[bare]).render()
    )
    trimmed = doc.trim_to(room + 5, COUNTER)
    assert trimmed.entries("commands") == (bare,)
    report = FactReport.compare(doc, trimmed)
    assert report.classes["commands"].clipped == 1
    assert report.classes["commands"].kept == 0  # a cut command is not kept verbatim
    assert report.classes["constraints"].kept == 1
