"""A rule stated in the first message's first paragraph is both the goal and a constraint: the
digest says it once, in the goal, and the post-condition finds it there. A rule the goal does
not quote word for word, as a whole clause, is still re-added under the constraints."""

from __future__ import annotations

import json

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
from compactkit.compressors import SummaryDocument, digest_items
from compactkit.compressors._verify import rules_said_once, unkept

COUNTER = TiktokenCounter("o200k_base")
NOISE = "\n".join(f"progress line {n}: nothing of note" for n in range(40))
RULE = "Do not add new third-party dependencies."
LATER_RULE = "Keep the public signature of Client.request() unchanged."


def call(call_id: str, command: str) -> list[Item]:
    return [
        FunctionCall(call_id=call_id, name="bash", arguments=json.dumps({"command": command})),
        FunctionCallOutput(call_id=call_id, output=f"{NOISE}\n[exit code: 0]"),
    ]


def session(first: str, *later: str) -> list[Item]:
    items: list[Item] = [Message(role="user", content=first)]
    for n in range(5):
        items += call(f"c{n}", f"cat src/module_{n}.py")
        if n < len(later):  # the user says something again
            items += [
                Message(role="user", content=later[n]),
                Message(role="assistant", content="OK."),
            ]
    items.append(Message(role="assistant", content="Read the modules."))
    items.append(Message(role="user", content="Go on."))
    return items


def test_a_rule_in_the_goal_is_said_once_and_verified_there() -> None:
    first = f"Add retries to the HTTP client. {RULE}\n\n{LATER_RULE}"
    result = DigestCompressor(keep_last_groups=1, counter=COUNTER).compress(
        MemorySnapshot.of(session(first, LATER_RULE, RULE))
    )
    summary = result.snapshot.summary
    doc = SummaryDocument.parse(summary)
    assert summary.count(RULE) == 1  # what reaches the model: the rule once, word for word
    assert any(RULE in goal for goal in doc.entries("goal"))
    assert RULE not in doc.entries("constraints")
    assert LATER_RULE in doc.entries("constraints")  # not in the goal: stays a constraint
    assert summary.count(LATER_RULE) == 1  # (said twice, kept once, as before)
    verification = result.stats.details["verification"]
    # found in the goal, so not added back under the constraints
    assert verification["re_added"] == 0 and verification["rejected"] == 0
    assert verification["dropped"] == 0


def test_the_extraction_still_lists_the_rule_as_a_constraint() -> None:
    """What the post-condition checks every summary (an LLM's too) against is unchanged."""
    facts = digest_items([Message(role="user", content=f"Add retries. {RULE}")])
    assert RULE in facts.entries("constraints")
    assert RULE not in rules_said_once(facts).entries("constraints")


def test_a_goal_that_does_not_quote_the_rule_as_a_whole_clause_does_not_hold_it() -> None:
    rule = "Run the integration tests."
    facts = SummaryDocument.of(constraints=[rule, "(system) Run the integration tests."])
    for goal in (
        "Never run the integration tests.",  # a negation before it
        "Run the integration tests nightly.",  # the clause goes on
        "Run the integration tests",  # (fine: the clause ends with the text)
    ):
        summary = SummaryDocument.of(goal=[goal])
        missing = unkept(summary, facts)
        held = f"constraints: {rule}" not in missing
        assert held == (goal == "Run the integration tests"), goal
        # a system or developer rule is never taken for the user's goal
        assert "constraints: (system) Run the integration tests." in missing
    said = SummaryDocument.of(goal=["Never run the integration tests."], constraints=[rule])
    assert rules_said_once(said) == said


_RULES = (
    "Do not touch the billing module.",
    "Always run the linter first.",
    "Never push to main without review.",
    "Use Python 3.12 only.",
)
_PLAIN = ("Tidy up the project.", "The parser is slow on big files.", "Thanks for the help.")


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(_RULES + _PLAIN), min_size=1, max_size=4, unique=True),
    st.lists(st.sampled_from(_RULES), max_size=2, unique=True),
    st.sampled_from([None, 700, 350]),
)
def test_every_rule_of_the_first_message_is_in_the_summary_exactly_once(
    goal_sentences: list[str], later_rules: list[str], target: int | None
) -> None:
    first = " ".join(goal_sentences)
    if later_rules:
        first += "\n\n" + "\n\n".join(r for r in later_rules if r not in goal_sentences)
    result = DigestCompressor(
        keep_last_groups=1 if target is None else None, target_tokens=target, counter=COUNTER
    ).compress(MemorySnapshot.of(session(first)))
    if result.outcome != "compacted":
        return
    summary = result.snapshot.summary
    assert result.stats.details["verification"]["re_added"] == 0
    for rule in digest_items([Message(role="user", content=first)]).entries("constraints"):
        if not rule.startswith("Later: "):
            assert summary.count(rule) == 1, (rule, summary)
