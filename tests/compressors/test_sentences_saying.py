"""The sentences of a text that say a decision or a next step: a text in which the phrase
pattern is found nowhere (hard wraps joined, fenced code removed) is not split into sentences,
and the sentences found are those every sentence read on its own gives."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _facts_prose as facts_prose

PROPERTY = settings(deadline=None, max_examples=2000)

PATTERNS = [facts_prose.CONSTRAINT, facts_prose.DECISION, facts_prose.NEXT_STEP]

# Phrases whole and cut by a hard wrap, a fence or a list marker; sentence ends, list markers,
# quote and heading marks, and characters beyond ASCII (ignoring case folds the Kelvin sign and
# the long s to ASCII letters).
PARTS = [
    "going with",
    "going\nwith",
    "going\n   with",
    "rather```y```than",
    "do\nnot",
    "going",
    "with",
    "because",
    "becau",
    "se",
    "instead",
    "rather than",
    "rather",
    "than",
    "tried it, but",
    "next",
    "Next step",
    "todo",
    "must",
    "do not",
    "not",
    "use",
    "the fix is",
    "I decided.",
    "We switch back",
    "\n",
    "\n\n",
    "\n  ",
    "- ",
    "\n- ",
    "\n1. ",
    "\n* ",
    "# ",
    "> ",
    "#",
    "```x```",
    "\n```\nbecause\n```\n",
    ". ",
    "! A",
    "x",
    "_",
    "1",
    "é",
    "\u212a",
    "\u017f",
]

TEXTS = st.lists(
    st.sampled_from(PARTS) | st.text(st.sampled_from("ab .\n-#"), max_size=6), max_size=12
).map(lambda parts: "".join(parts))


@PROPERTY
@given(TEXTS, st.sampled_from(PATTERNS))
def test_the_sentences_saying_a_phrase_are_those_each_sentence_read_alone_gives(
    text: str, pattern: re.Pattern[str]
) -> None:
    expected = facts_prose.saying(pattern, facts_prose.sentences(text))
    assert facts_prose.sentences_saying(pattern, text) == expected


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("We are going\nwith the second plan now.", ["We are going with the second plan now."]),
        ("Nothing to see here at all.", []),
        ("- instead of a retry loop", ["instead of a retry loop"]),
        ("# because the cache was stale", ["because the cache was stale"]),
        ("The plan:\n```\nbecause\n```\nno word of it here.", []),
        ("going```x```with it, we were.", ["going with it, we were."]),
    ],
)
def test_a_decision_is_found_in_its_sentence(text: str, found: list[str]) -> None:
    assert facts_prose.sentences_saying(facts_prose.DECISION, text) == found
    assert facts_prose.saying(facts_prose.DECISION, facts_prose.sentences(text)) == found
