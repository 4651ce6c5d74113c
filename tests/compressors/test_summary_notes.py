"""The summary's trimming note says why entries are missing, and counts them per section.

A summary the projection trims to fit one request's room (docs/projector.md, rule 6) says so
("… trimmed to fit this request"), apart from the entries its stored form had trimmed to keep
within its own cap; its note lists what it left out ("not listed: 60 files read, …") while the
counts fit: they go last, after the user's goal and rules. Every note form a stored summary
holds reads back (a user's database keeps the summaries older versions wrote). Asserted on the
summary text in the request ``MessageCompactor`` sends, and on ``SummaryDocument.parse``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit.budget import counter_for
from compactkit.compressors import (
    SummaryDocument,
    shortest_summary,
    shrink_summary,
    user_words_summary,
)
from compactkit.integrations import MessageCompactor
from compactkit.items.snapshot import unseal_summary

COUNTER = counter_for("gpt-4o")
TASK = (
    "Fix the failing date parser in src/dates.py. Never edit tests/test_dates.py. "
    "Keep the public API unchanged."
)
_NOTE = re.compile(r"^_Note: .*$", re.MULTILINE)


def _call(i: int, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "bash", "arguments": arguments},
            }
        ],
    }


def _session(files: int) -> list[dict[str, Any]]:
    """A task, then ``files`` files read (a rule of the user's every tenth)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": TASK},
    ]
    for i in range(files):
        source = "\n".join(f"def helper_{i}_{k}(x): return x + {k}" for k in range(40))
        messages += [
            _call(i, f"cat src/pkg/module_{i}.py"),
            {"role": "tool", "tool_call_id": f"call_{i}", "content": source},
            {"role": "user", "content": f"Rule {i}: do not touch module_{i}.py again."}
            if i % 10 == 0
            else {"role": "assistant", "content": f"Module {i} looks fine."},
        ]
    return messages


def _summaries(messages: list[Any]) -> list[str]:
    found = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str) and "# Conversation summary (compactkit)" in content:
            found.append(unseal_summary(content))
    assert len(found) == 1, "the summary is sent exactly once"
    return found


def _governed(budget: int, files: int, task_words: int, output_lines: int) -> tuple[Any, str]:
    """A session folded, then a long new task (the latest user input: never dropped) and an
    output as the newest group, at ``budget``: the request it sends, and the summary stored."""
    compactor = MessageCompactor("gpt-4o", budget=budget)
    history = list(compactor(_session(files)).history)
    report = "Now read this report. " + " ".join(f"word{k}" for k in range(task_words))
    history = list(compactor([*history, {"role": "user", "content": report}]).history)
    (stored,) = _summaries(history)
    log = "\n".join(f"line {k}: value {k * 7}" for k in range(output_lines))
    output = {"role": "tool", "tool_call_id": f"call_{files}", "content": log}
    turn = compactor([*history, _call(files, "cat data/big.log"), output])
    assert turn.tokens <= budget
    assert not turn.compacted and any("summary trimmed" in n for n in turn.report.notes)
    return turn, stored


def _note(summary: str) -> str:
    found = _NOTE.findall(summary)
    assert len(found) == 1, summary[:400]
    return found[0]


def test_a_summary_trimmed_to_fit_the_request_says_so() -> None:
    turn, stored = _governed(6_000, 60, 1_500, 150)
    assert "_Note" not in stored  # the stored summary had trimmed nothing
    (sent,) = _summaries(turn.send)
    note = _note(sent)
    assert note.startswith("_Note: ") and "trimmed to fit this request; not listed: " in note
    assert "token cap" not in note  # (before: "… to keep this summary within its token cap")
    assert turn.send[-1]["content"].startswith("line 0:")  # the output went whole
    (kept,) = _summaries(turn.history)
    assert kept == stored  # what is stored is unchanged


def test_a_capped_summary_trimmed_again_for_the_request_says_which_went_why() -> None:
    turn, stored = _governed(4_000, 120, 800, 200)
    capped = SummaryDocument.parse(stored).trimmed
    assert capped > 0 and "to keep this summary within its token cap" in _note(stored)
    note = _note(_summaries(turn.send)[0])
    found = re.match(
        r"_Note: (\d+) older entries were trimmed \((\d+) of them to fit this request\); "
        r"not listed: .+\._$",
        note,
    )
    assert found, note  # (before: "… trimmed to keep this summary within its token cap; …")
    total, fit = map(int, found.groups())
    assert fit > 0 and total == capped + fit


def test_the_summary_at_its_floor_says_the_request_trimmed_it() -> None:
    # The newest output is cut anyway: the summary keeps only the user's goal and rules.
    turn, stored = _governed(6_000, 60, 1_500, 300)
    assert "[cut by compactkit" in turn.send[-1]["content"]
    sent = _summaries(turn.send)[0]
    assert set(SummaryDocument.parse(sent).sections) == {"goal", "constraints"}
    # (before: "_Note: 121 older entries were trimmed to keep this summary within its token
    # cap._")
    assert _note(sent) == "_Note: 121 older entries were trimmed to fit this request._"
    assert SummaryDocument.parse(sent).trimmed == len(SummaryDocument.parse(stored)) - len(
        SummaryDocument.parse(sent)
    )


def _facts() -> SummaryDocument:
    return SummaryDocument.of(
        goal=[TASK],
        constraints=[f"Rule {n}: keep module_{n}.py as it is." for n in range(5)],
        files_read=[f"`src/m_{n}.py` — read" for n in range(30)],
        commands=[f"`pytest -k t{n}` → exit 0" for n in range(12)],
    )


def test_the_user_words_summary_says_the_request_trimmed_it() -> None:
    kept = user_words_summary(_facts().render(), COUNTER)
    assert kept is not None
    assert _note(kept) == "_Note: 42 older entries were trimmed to fit this request._"
    assert SummaryDocument.parse(kept).entries("goal") == (TASK,)


def test_the_counts_go_last_and_the_shortest_summary_is_the_floor() -> None:
    text, size = _facts().render(), COUNTER.count_text
    listed = (
        "_Note: 48 older entries were trimmed to fit this request; not listed: "
        "1 goal entries, 5 constraints, 30 files read, 12 commands._"
    )
    counted = f"# Conversation summary (compactkit)\n{listed}\n"
    # With room for the note and its counts, and nothing else, the counts are listed;
    assert shrink_summary(text, size(counted), size, COUNTER) == counted
    # a token less, only the total is (the very last resort: the floor).
    shortest = shortest_summary(text, COUNTER)
    assert _note(shortest) == "_Note: 48 older entries were trimmed to fit this request._"
    assert shrink_summary(text, size(counted) - 1, size, COUNTER) == shortest
    assert shrink_summary(text, size(shortest), size, COUNTER) == shortest
    assert shrink_summary(text, size(shortest) - 1, size, COUNTER) is None


@pytest.mark.parametrize(
    ("note", "trimmed", "omitted", "stored"),
    [
        # as every version before this one wrote them (stored summaries in users' databases)
        (
            "_Note: 3 older entries were trimmed to keep this summary within its token cap; "
            "not listed: 2 files read, 1 under Open questions._",
            3,
            {"files_read": 2, "Open questions": 1},
            None,
        ),
        (
            "_Note: 1 older entry was trimmed to keep this summary within its token cap._",
            1,
            {},
            None,
        ),
        ("Note: 4 older entries were trimmed", 4, {}, None),
        # as a summary fitted to a request has them
        (
            "_Note: 5 older entries were trimmed to fit this request; not listed: "
            "4 constraints, 1 goal entries._",
            5,
            {"constraints": 4, "goal": 1},
            0,
        ),
        (
            "_Note: 52 older entries were trimmed (40 of them to fit this request); not listed: "
            "42 files read, 10 commands._",
            52,
            {"files_read": 42, "commands": 10},
            12,
        ),
        ("_Note: 1 older entry was trimmed to fit this request._", 1, {}, 0),
    ],
)
def test_every_note_form_reads_back(
    note: str, trimmed: int, omitted: dict[str, int], stored: int | None
) -> None:
    text = f"# Conversation summary (compactkit)\n{note}\n\n## Goal\n- {TASK}\n"
    doc = SummaryDocument.parse(text)
    assert doc.trimmed == trimmed and dict(doc.omitted) == omitted
    assert doc.stored_trimmed == stored
    assert doc.entries("goal") == (TASK,) and not doc.extra  # the note is no entry
    # A summary read back and merged on is a stored one: its note says "token cap" again.
    merged = doc.merge(SummaryDocument.of(goal=["Also keep the docs."]))
    assert merged.trimmed == trimmed and "to keep this summary within its token cap" in (
        merged.render()
    )
    assert "request" not in merged.render()


_counts = st.dictionaries(
    st.sampled_from(["files_read", "commands", "constraints", "Open questions"]),
    st.integers(1, 40),
    max_size=3,
)


@settings(deadline=None, max_examples=150)
@given(stored=st.integers(0, 60), fitted=st.integers(0, 60), omitted=_counts)
@example(stored=0, fitted=1, omitted={})
@example(stored=1, fitted=0, omitted={"files_read": 1})
@example(stored=12, fitted=40, omitted={"files_read": 42, "commands": 10})
@example(stored=0, fitted=0, omitted={})
def test_a_fitted_summary_reads_back_as_itself(
    stored: int, fitted: int, omitted: dict[str, int]
) -> None:
    base = SummaryDocument.of(goal=[TASK], files_read=["`src/a.py` — read"])
    omitted = omitted if stored + fitted else {}  # (no note: nothing trimmed)
    doc = SummaryDocument(
        sections=base.sections,
        trimmed=stored + fitted,
        omitted=omitted,
        stored_trimmed=stored,
    )
    text = doc.render()
    read = SummaryDocument.parse(text)
    assert read.render() == text
    assert read.trimmed == stored + fitted and dict(read.omitted) == omitted
    if fitted:
        assert "to fit this request" in text and read.stored_trimmed == stored
