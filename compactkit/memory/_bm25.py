"""A BM25 index in pure Python: the in-process memory's recall.

Cost model: adding a document is O(its words); a query is O(sum of the postings of its words)
plus a sort of the matches. Documents are keyed by an int (a seq); the index only grows —
memories rebuild it from scratch after ``clear()`` or ``restore()``, the only writes that
change what a seq names. Plain version it replaces: scoring every stored item's words against
the query on each call (O(history)); ``tests/memory/test_recall.py`` checks the two agree.

Scoring is Okapi BM25 (k1 = 1.2, b = 0.75) with the non-negative idf
``ln(1 + (N - n + 0.5) / (n + 0.5))``, as SQLite FTS5 computes it.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterable

__all__ = ["BM25Index"]

K1 = 1.2
B = 0.75


class BM25Index:
    """Documents (int keys) indexed by their words; ``search`` ranks them for a query."""

    def __init__(self) -> None:
        self._postings: dict[str, dict[int, int]] = {}  # word -> {doc: count}
        self._lengths: dict[int, int] = {}
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def __contains__(self, key: int) -> bool:
        return key in self._lengths

    def add(self, key: int, words: Iterable[str]) -> None:
        """Index document ``key`` (a key already indexed is left as it is)."""
        if key in self._lengths:
            return
        counts = Counter(words)
        length = sum(counts.values())
        self._lengths[key] = length
        self._total_length += length
        postings = self._postings
        for word, count in counts.items():
            found = postings.get(word)
            if found is None:
                postings[word] = {key: count}
            else:
                found[key] = count

    def search(
        self,
        words: Iterable[str],
        *,
        limit: int,
        accept: Callable[[int], bool] | None = None,
        every_word: bool = False,
    ) -> list[tuple[int, float]]:
        """The ``limit`` best ``(key, score)`` pairs for ``words`` (ORed; with ``every_word``
        only documents holding all of them), best first; ties by key. ``accept`` filters the
        keys (the archive of a memory)."""
        words = list(dict.fromkeys(words))
        n_docs = len(self._lengths)
        if not n_docs:
            return []
        only: set[int] | None = None
        if every_word:  # intersect the postings, smallest first: cheap for a rare word
            lists = sorted((self._postings.get(w, {}) for w in words), key=len)
            only = set(lists[0]) if lists else set()
            for other in lists[1:]:
                only.intersection_update(other)
                if not only:
                    return []
        average = self._total_length / n_docs or 1.0
        lengths = self._lengths
        scores: dict[int, float] = {}
        for word in words:
            postings = self._postings.get(word)
            if not postings:
                continue
            n = len(postings)
            idf = math.log(1.0 + (n_docs - n + 0.5) / (n + 0.5))
            counts = postings.items() if only is None else ((k, postings[k]) for k in only)
            for key, count in counts:
                norm = K1 * (1.0 - B + B * lengths[key] / average)
                scores[key] = scores.get(key, 0.0) + idf * count * (K1 + 1.0) / (count + norm)
        pairs = scores.items() if accept is None else (p for p in scores.items() if accept(p[0]))
        return heapq.nsmallest(limit, pairs, key=lambda pair: (-pair[1], pair[0]))
