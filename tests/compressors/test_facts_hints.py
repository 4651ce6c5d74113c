"""The identifier and exit-code patterns are only run on a text that holds their hint (a fast
literal-first search for what every match holds): every match of each pattern holds its hint,
so skipping a text without it finds exactly what running the pattern finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _facts as facts
from compactkit.compressors import _facts_ids as facts_ids

PROPERTY = settings(deadline=None, max_examples=300)

HINTED = [
    (facts_ids._UUID, [facts_ids._UUID_HINT]),
    (facts_ids._TICKET, [facts_ids._TICKET_HINT]),
    (facts_ids._PREFIXED, list(facts_ids._PREFIXED_HINTS)),
    (facts_ids._RANDOM_ID, [facts_ids._RANDOM_ID_HINT]),
    (facts_ids._CODE_ID, [facts_ids._CODE_ID_HINT]),
]


@pytest.mark.parametrize(("pattern", "hints"), HINTED, ids=lambda v: getattr(v, "pattern", ""))
@PROPERTY
@given(data=st.data())
def test_every_match_of_a_hinted_pattern_holds_its_hint(
    pattern: re.Pattern[str], hints: list[re.Pattern[str]], data: st.DataObject
) -> None:
    around = st.text(st.sampled_from("aZ9_- .\n"), max_size=4)
    text = data.draw(around) + data.draw(st.from_regex(pattern, fullmatch=True)) + data.draw(around)
    for match in pattern.finditer(text):
        assert any(hint.search(match.group(0)) for hint in hints), (match.group(0), text)


@PROPERTY
@given(st.from_regex(facts._EXIT, fullmatch=True).filter(str.isascii))
def test_every_ascii_exit_phrase_holds_one_of_the_phrases_looked_for(text: str) -> None:
    lowered = text.lower()
    assert any(phrase in lowered for phrase in facts._EXIT_PHRASES)
    assert facts._last_exit(text) is not None
