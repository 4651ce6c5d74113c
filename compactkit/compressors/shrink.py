"""A running summary fitted to the room one request leaves it: ``shrink_summary``.

The stored summary is sized by the compressor against its target; a later request can hold
less room for it (the newest group grew: a long tool output, a long new task). The projection
then sends the summary trimmed to what is left, rather than cutting the newest output or
refusing a request everything else of which fits. The trim is the digest's own (``trim_to``:
context shortened before any fact goes, then by class, oldest first, with a note counting what
was left out); the user's goal and rules go only when nothing else is left, oldest first.
Nothing stored changes: the next request with room sends the summary whole again. The note of a
summary trimmed here says which entries went to fit this request (``trim_note``: "40 older
entries were trimmed to fit this request", or "52 … were trimmed (40 of them to fit this
request)" when the stored summary had trimmed some itself), and counts them per section ("not
listed: 30 files read, 2 constraints") while the counts fit: they go last, after the user's
goal and rules (``shortest_summary``: the floor, its note a total).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._document import parsed
from compactkit.compressors.digest.compressor import USER_WORDS
from compactkit.compressors.sections import SummaryDocument

__all__ = ["shortest_summary", "shrink_summary", "user_words_summary"]

_RETRIES = 4  # re-trims when the rendered text's tokens drift from the cap (joins, notes)


def shrink_summary(
    text: str, limit: int, size: Callable[[str], int], counter: TokenCounter
) -> str | None:
    """``text`` (a rendered summary: compactkit's or any other) trimmed so that
    ``size(result) <= limit``, or ``None`` when even the trimming note alone is larger.

    ``size(text)`` is the tokens of the message that sends ``text`` (the summary message, as
    the request counts it); ``counter`` counts the text alone, for the trim's cap. The trim is
    ``SummaryDocument.trim_to``'s: the user's goal and constraints go only when nothing else is
    left, oldest first.
    """
    overhead = max(0, size(text) - counter.count_text(text))  # the message's own tokens
    doc = _for_request(text)
    if not doc.sections:  # prose: one entry per paragraph, too coarse to trim by entries
        return _cut_prose(text, limit, size, counter)
    cap, last = limit - overhead, None
    for _attempt in range(_RETRIES):
        if cap < 1:
            break
        trimmed = doc.trim_to(cap, counter)
        if trimmed == last:  # nothing more to trim
            break
        out = trimmed.render()
        over = size(out) - limit
        if over <= 0:
            return out
        if trimmed.is_empty:
            break
        cap, last = cap - over, trimmed
    return None


def shortest_summary(text: str, counter: TokenCounter) -> str:
    """The shortest form ``shrink_summary`` gives of ``text``: a digest with every entry
    trimmed (its note saying how many, not how many per section: the counts are the last
    thing a request gives up), or a summary without sections cut to the marker."""
    doc = _for_request(text)
    if not doc.sections:
        return _cut_at(text, 0, counter)
    return doc.trim_to(1, counter).render()


def user_words_summary(text: str, counter: TokenCounter) -> str | None:
    """``text`` with only the user's goal and rules left (every other entry trimmed, the note
    giving their total), or ``None`` for a summary without compactkit's sections (prose: where its
    goal and rules are is not known)."""
    doc = _for_request(text)
    if not doc.sections:
        return None
    return doc.trim_to(1, counter, keep=USER_WORDS).render()


def _for_request(text: str) -> SummaryDocument:
    """``text`` parsed, to be trimmed for one request: its note will say which entries went
    for the request (``SummaryDocument.stored_trimmed``: those it counted already did not)."""
    doc = parsed(text)
    if doc.stored_trimmed is not None:  # (a summary fitted already: as it says)
        return doc
    return replace(doc, stored_trimmed=doc.trimmed)


def _cut_prose(
    text: str, limit: int, size: Callable[[str], int], counter: TokenCounter
) -> str | None:
    """A summary with no sections of compactkit's (an LLM's prose, a hand-written note) cut
    to ``limit``: its head (a third) and its newest part (two thirds) kept whole-word, with a
    marker between them saying how much was left out; the longest such cut that fits (binary
    search over the characters kept: O(log n) counts)."""
    best, low, high = None, 0, len(text) - 1
    while low <= high:
        keep = (low + high) // 2
        out = _cut_at(text, keep, counter)
        if size(out) <= limit:
            best, low = out, keep + 1
        else:
            high = keep - 1
    return best


def _cut_at(text: str, keep: int, counter: TokenCounter) -> str:
    """``text`` with about ``keep`` characters kept around one cut, made at whitespace near
    each end of the cut (a word boundary), else at the character (scripts without spaces)."""
    head = keep // 3
    start = _boundary(text, head, -1)
    end = _boundary(text, len(text) - (keep - head), 1)
    if end <= start:
        return text
    left_out = counter.count_text(text[start:end])
    return f"{text[:start].rstrip()}{_GAP.format(left_out)}{text[end:].lstrip()}"


def _boundary(text: str, at: int, step: int) -> int:
    """The whitespace nearest ``at`` within ``_NEAR`` characters, going back (``step`` -1) or
    forward (1), else ``at`` itself."""
    if step < 0:
        found = max(
            text.rfind(" ", max(0, at - _NEAR), at + 1),
            text.rfind("\n", max(0, at - _NEAR), at + 1),
        )
    else:
        hits = [
            i for i in (text.find(" ", at, at + _NEAR), text.find("\n", at, at + _NEAR)) if i >= 0
        ]
        found = min(hits, default=-1)
    return found if found >= 0 else at


_NEAR = 40  # characters searched for a word boundary around a cut
_GAP = "\n\n[... {:,} tokens of this summary left out here to fit this request's budget ...]\n\n"
