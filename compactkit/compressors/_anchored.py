"""A pattern's matches, tried only where a match can start.

Cost model: a pattern that opens with ``\\b``, a look-behind or a case-insensitive word is tried
by the regex engine at every position of the text (30-60 ns per character); the digest reads
millions of characters of tool output and prose in a long agent session. Every match of such a
pattern holds something a plain search finds fast (a literal word in the lowered text, a "-"
before a digit, a "_" before eight letters or digits), and where its match starts follows from
where that stands; so the pattern is tried at those few places, in order, each past the end of
the match before: the matches ``finditer`` returns.

The plain version is ``pattern.finditer(text)``; each caller's test holds them equal
(tests/compressors/test_anchored_patterns.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["matches_at", "occurrences", "run_start"]


def matches_at(pattern: re.Pattern[str], text: str, starts: Iterable[int]) -> list[re.Match[str]]:
    """``list(pattern.finditer(text))`` when every match starts at one of ``starts`` (and
    matches are never empty): the pattern tried at each start, in order, skipping those
    inside the match before (as ``finditer`` does)."""
    matches: list[re.Match[str]] = []
    end = 0
    match_at = pattern.match
    for at in sorted(set(starts)):
        if at >= end and (match := match_at(text, at)):
            matches.append(match)
            end = match.end()
    return matches


def occurrences(text: str, words: Iterable[str]) -> list[int]:
    """Where each of ``words`` starts in ``text`` (every occurrence, overlapping ones too)."""
    found: list[int] = []
    for word in words:
        at = text.find(word)
        while at >= 0:
            found.append(at)
            at = text.find(word, at + 1)
    return found


def run_start(text: str, end: int, chars: frozenset[str], longest: int) -> int:
    """Where the run of ``chars`` that ends at ``end`` in ``text`` starts, read back at most
    ``longest + 1`` characters (a longer run starts before ``end - longest``)."""
    start = end
    stop = max(0, end - longest - 1)
    while start > stop and text[start - 1] in chars:
        start -= 1
    return start
