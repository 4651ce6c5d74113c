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

__all__ = ["case_folded", "matches_at", "occurrences", "run_start"]


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


# The only characters beyond ASCII that a case-insensitive pattern matches to an ASCII letter
# (capital I with a dot, dotless i, long s and the Kelvin sign;
# tests/compressors/test_anchored_patterns.py reads every code point), and the only ones whose
# ``lower()`` is ASCII (the Kelvin sign) or longer than one character (capital I with a dot).
_FOLDS_TO_ASCII = "\u0130\u0131\u017f\u212a"


def case_folded(text: str) -> str | None:
    """``text.lower()`` where that is what ignoring case does to its ASCII words, character for
    character; ``None`` where it is not (a character of ``_FOLDS_TO_ASCII``).

    In the lowered text an ASCII word stands where a case-insensitive pattern finds it in
    ``text``, at the same position: any other character lowers to one character that matches
    no ASCII letter. So the places a pattern opening with such a word is tried at can be read
    from it, in text beyond ASCII too (a "✓" in an agent's script).
    """
    if text.isascii() or not any(char in text for char in _FOLDS_TO_ASCII):
        return text.lower()
    return None


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
