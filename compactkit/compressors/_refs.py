"""Provenance references on summary entries: ``[#412-418]`` at the end of an entry.

Every entry a compressor writes names the items it was drawn from by their sequence numbers in
the session (a memory's ``expand("#412-418")`` returns them). The references are part of the
entry's text, so that counting, trimming and rendering a summary count them as they are sent;
the merge rules (``_entries``) read an entry without them and give the merged entry the union of
both entries' references.

Compact on purpose (an entry's references cost 4 to 8 tokens): adjacent and overlapping seqs are
one range, and an entry keeps at most ``MAX_RANGES`` ranges — beyond that, the two ranges with
the smallest gap between them become one (a range may then also name items between the ones
the entry came from; ``expand`` returns what the range names).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

__all__ = [
    "MAX_RANGES",
    "Spans",
    "add_refs",
    "joined",
    "merge_spans",
    "provenance_on",
    "spans_of",
    "split_refs",
    "strip_refs",
    "with_refs",
    "without_provenance",
]

MAX_RANGES = 2
"""The most ranges one entry's references keep."""

Spans = tuple[tuple[int, int], ...]
"""Ranges of seqs, ``(first, last)``, sorted and disjoint."""

_SUFFIX = re.compile(r" *\[#\d+(?:[\u2013-]\d+)?(?:, *#?\d+(?:[\u2013-]\d+)?)*\]\Z")
_RANGE = re.compile(r"(\d+)(?:[\u2013-](\d+))?")


def split_refs(entry: str) -> tuple[str, Spans]:
    """``(text, spans)``: an entry without its trailing references, and the ranges they name."""
    if not entry.endswith("]"):
        return entry, ()
    return _split_refs(entry)


@lru_cache(maxsize=1 << 15)
def _split_refs(entry: str) -> tuple[str, Spans]:
    # Remembered by text (a pure function of an immutable string): trimming and merging read
    # the same entries' references many times per compaction — about 450 calls per compaction
    # in a long governed session, 25% of the governed step's time before this cache. Bounded:
    # 32k entries.
    found = _SUFFIX.search(entry)
    if found is None:
        return entry, ()
    spans = [
        (int(m.group(1)), int(m.group(2) or m.group(1))) for m in _RANGE.finditer(found.group())
    ]
    return entry[: found.start()], merge_spans(spans)


def strip_refs(entry: str) -> str:
    """An entry without its trailing references."""
    return split_refs(entry)[0] if entry.endswith("]") else entry


def with_refs(text: str, spans: Spans) -> str:
    """``text`` ending with the references to ``spans`` (``text`` itself when there are none)."""
    if not spans:
        return text
    refs = ", ".join(f"#{a}" if a == b else f"#{a}\u2013{b}" for a, b in spans)
    return f"{text} [{refs}]"


def merge_spans(*groups: Iterable[tuple[int, int]]) -> Spans:
    """The union of ``groups`` as sorted, disjoint ranges (adjacent ones joined), at most
    ``MAX_RANGES`` of them (the closest neighbours joined first; ties: the oldest)."""
    if all(group == () for group in groups):  # entries without references (a mirror's): none
        return ()
    spans = sorted({(min(a, b), max(a, b)) for group in groups for a, b in group if min(a, b) >= 1})
    merged: list[tuple[int, int]] = []
    for first, last in spans:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
        else:
            merged.append((first, last))
    while len(merged) > MAX_RANGES:
        gap = min(range(len(merged) - 1), key=lambda i: merged[i + 1][0] - merged[i][1])
        merged[gap : gap + 2] = [(merged[gap][0], merged[gap + 1][1])]
    return tuple(merged)


_PROVENANCE: ContextVar[bool] = ContextVar("compactkit_provenance", default=True)


@contextmanager
def without_provenance() -> Iterator[None]:
    """Compactions in this block write no references: for memories whose seqs are nobody's to
    expand (a plain message list's mirror, numbered afresh by each new reader)."""
    token = _PROVENANCE.set(False)
    try:
        yield
    finally:
        _PROVENANCE.reset(token)


def provenance_on() -> bool:
    """Whether compactions write references here (not inside ``without_provenance``)."""
    return _PROVENANCE.get()


def spans_of(seqs: Iterable[int | None]) -> Spans:
    """The ranges naming ``seqs`` (``None``, an item never stored, is left out); none inside
    ``without_provenance``."""
    if not _PROVENANCE.get():
        return ()
    return merge_spans((s, s) for s in seqs if s is not None)


def add_refs(entry: str, spans: Spans) -> str:
    """``entry`` with ``spans`` added to its references."""
    if not spans:
        return entry
    text, old = split_refs(entry)
    return with_refs(text, merge_spans(old, spans))


def joined(text: str, *entries: str) -> str:
    """``text`` carrying the union of the references of ``entries`` (the merged entries)."""
    spans = [split_refs(e)[1] for e in entries if e.endswith("]")]
    return with_refs(text, merge_spans(*spans)) if spans else text
