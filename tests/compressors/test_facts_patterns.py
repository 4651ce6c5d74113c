"""``_SHA`` and ``_VERSION`` are written with their first character ahead of their
look-behinds (so the regex engine skips ahead to it): they find exactly what their plain forms
find, from any start."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _facts_ids as facts_ids

PLAIN_SHA = re.compile(r"(?<![\w/.-])(?<!0x)[0-9a-f]{7,40}(?![\w-])")
PLAIN_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:[-+][\w.]+)?(?![\w.])")

# Runs of hex digits and digits (long enough for a sha, past 40 too) among the characters the
# look-arounds test: word characters, "/", ".", "-", "x" of "0x", "v" of a version, "+"; and
# whole versions. (``(?<!0x)`` is implied by the word-character look-behind: "x" is one.)
_PIECES = st.one_of(
    st.text(st.sampled_from("0123456789abcdef"), min_size=5, max_size=44),
    st.text(st.sampled_from("0123456789."), min_size=1, max_size=9),
    st.sampled_from(["0x", "v", "/", ".", "-", "_", " ", "\n", "+", "g", "A", "é", "٣", "x"]),
    st.sampled_from(["1.2.3", "10.0.1-rc1", "2.0.1+build.5", "0.10.0"]),
)
texts = st.lists(_PIECES, max_size=12).map("".join)


@settings(deadline=None, max_examples=1500)
@given(texts, st.integers(0, 60))
def test_the_first_character_first_patterns_find_what_the_plain_ones_find(
    text: str, start: int
) -> None:
    start = min(start, len(text))
    assert facts_ids._SHA.findall(text, start) == PLAIN_SHA.findall(text, start)
    assert facts_ids._VERSION.findall(text, start) == PLAIN_VERSION.findall(text, start)
