"""Recall: full-text search over what compaction folded, and the items a reference names.

An optional capability of a memory, declared as its own small protocol (``Recallable``) beside
``AgentMemory``: ``InMemoryMemory`` (BM25 in the process) and ``SQLMemory`` (SQLite FTS5,
PostgreSQL ``tsvector`` + GIN) offer it; ``require_recall(memory)`` names the backend that does
not with a ``RecallUnsupportedError``.

What is searched — the *archive* and the summary:

* the archive: every item stored since the last ``clear()`` whose original is not in the active
  window as it was stored — items a compaction folded away, and the originals of items it
  replaced (a masked tool output is found by its original text);
Matching: the archived items holding every word of the query; when none does, the items holding
any of them, an item holding more of the query's distinct words first. Then by BM25 (or the
backend's equivalent: FTS5 ``bm25()``, PostgreSQL ``ts_rank``).

* the summary: a line of the running summary that holds every word of the query is a hit of
  kind ``summary`` (``seq`` 0, ref ``summary``), after the archived items (the summary is in
  the prompt already; its lines point at the items they came from).

Words are runs of letters and digits (Unicode), compared lower-cased, without stemming — exact
identifiers, error codes and numbers are what recall is for. Query syntax is never
interpreted, so any text is a valid query.

References name items by sequence number: ``#412`` or the range ``#412-418`` (printed with an
en dash, U+2013; a hyphen, brackets ``[#412-418]`` and a missing ``#`` are accepted on input).
``expand(ref)`` returns every item stored with a seq in the range, as first stored, in seq order.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from compactkit.errors import ConfigError, RecallUnsupportedError
from compactkit.items import Item, Message, item_text
from compactkit.memory._bm25 import K1, B

__all__ = ["RecallHit", "Recallable", "format_ref", "parse_ref", "require_recall"]

DEFAULT_RECALL_LIMIT = 5
"""Hits ``recall`` returns unless told otherwise."""

MAX_RECALL_LIMIT = 1000
"""The most hits one ``recall`` call returns."""

MAX_QUERY_WORDS = 32
"""Distinct words of a query that are searched (the first ones); the rest are ignored."""

MAX_INDEXED_CHARS = 100_000
"""Characters of an item's text that are indexed (its beginning); the whole item is returned."""

_WORD = re.compile(r"[^\W_]+")
_REF = re.compile(
    r"\s*\[?\s*#?\s*(\d{1,18})\s*(?:(?:[-\u2013—]|\.\.)\s*#?\s*(\d{1,18}))?\s*\]?\s*\Z"
)


@dataclass(frozen=True)
class RecallHit:
    """One result of ``recall``: an archived item (or a summary line) and its score."""

    ref: str
    """``#seq`` for an item (expand it to get the item again); ``summary`` for a summary line."""
    seq: int
    """The item's sequence number in its session; 0 for a summary line."""
    kind: str
    """The item's ``type`` (``message``, ``function_call``, ...), or ``summary``."""
    role: str | None
    """A message's role; ``None`` for other kinds."""
    text: str
    """The item's text (a call as ``name(arguments)``), or the summary line."""
    score: float
    """Relevance, higher is better; comparable only within one result list."""
    item: Item | None = None
    """The original item, as first stored; ``None`` for a summary line."""

    def to_json(self) -> dict[str, object]:
        """The hit as the CLI prints it (``ref``, ``seq``, ``kind``, ``role``, ``text``,
        ``score``)."""
        return {
            "ref": self.ref,
            "seq": self.seq,
            "kind": self.kind,
            "role": self.role,
            "text": self.text,
            "score": self.score,
        }


@runtime_checkable
class Recallable(Protocol):
    """A memory that can search its archive and summary, and expand references.

    Implement both methods to offer recall from your own backend (the conformance kit checks
    them where a memory offers them).
    """

    def recall(self, query: str, *, limit: int = DEFAULT_RECALL_LIMIT) -> list[RecallHit]:
        """The archived items and summary lines that best match ``query``, best first.

        Raises:
            ConfigError: ``query`` has no words, or ``limit`` is not between 1 and 1000.
        """
        ...

    def expand(self, ref: str) -> list[Item]:
        """Every stored item a reference (``#412`` or ``#412-418``) names, in seq order.

        Raises:
            ConfigError: ``ref`` is not a reference.
        """
        ...


def require_recall(memory: object) -> Recallable:
    """Return ``memory`` if it offers recall and expand.

    Raises:
        RecallUnsupportedError: it does not (names its type and the backends that do).
    """
    if isinstance(memory, Recallable):
        return memory
    raise RecallUnsupportedError(
        f"{type(memory).__name__} does not offer recall(query) and expand(ref); use "
        "InMemoryMemory or SQLMemory, or implement compactkit.memory.Recallable on it"
    )


def search_words(text: str) -> list[str]:
    """The words recall indexes and searches in ``text``: runs of letters and digits,
    lower-cased (the first ``MAX_INDEXED_CHARS`` characters)."""
    return _WORD.findall(text[:MAX_INDEXED_CHARS].lower())


def query_words(query: str) -> list[str]:
    """The distinct words of a query, in order (at most ``MAX_QUERY_WORDS``).

    Raises:
        ConfigError: ``query`` is not a string or has no words.
    """
    if not isinstance(query, str):
        raise ConfigError(f"a recall query is text, got {type(query).__name__}: {query!r:.60}")
    words = list(dict.fromkeys(search_words(query)))[:MAX_QUERY_WORDS]
    if not words:
        raise ConfigError(
            f"recall query {query!r:.80} has no words to search for; give words or identifiers "
            "from what you are looking for"
        )
    return words


def check_limit(limit: int) -> int:
    """Return ``limit`` if it is a valid number of hits.

    Raises:
        ConfigError: it is not an int between 1 and ``MAX_RECALL_LIMIT``.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_RECALL_LIMIT:
        raise ConfigError(
            f"recall limit must be an integer from 1 to {MAX_RECALL_LIMIT}, got {limit!r}"
        )
    return limit


def parse_ref(ref: str) -> tuple[int, int]:
    """The first and last seq a reference names (``#412`` -> ``(412, 412)``).

    Raises:
        ConfigError: ``ref`` is not ``#N`` or ``#N-M`` with ``1 <= N <= M``.
    """
    found = _REF.match(ref) if isinstance(ref, str) else None
    if found is None:
        raise ConfigError(
            f"not a reference: {ref!r:.80}; write #412 for one item or #412\u2013418 for a range "
            "(sequence numbers, as recall hits and summary entries show them)"
        )
    first = int(found.group(1))
    last = int(found.group(2) or first)
    if not 1 <= first <= last:
        raise ConfigError(
            f"reference {ref!r} names no items: sequence numbers start at 1 and a range goes "
            f"from the smaller to the larger (#{min(first, last) or 1}\u2013{max(first, last)})"
        )
    return first, last


def format_ref(first: int, last: int | None = None) -> str:
    """The reference to seqs ``first..last``: ``#412`` or ``#412-418``."""
    if last is None or last == first:
        return f"#{first}"
    return f"#{first}\u2013{last}"


def hit_for_item(item: Item, score: float) -> RecallHit:
    """The hit that returns ``item`` (a stored item with its seq)."""
    seq = item.seq or 0
    role = item.role if isinstance(item, Message) else None
    return RecallHit(format_ref(seq), seq, item.type, role, item_text(item), score, item)


def summary_hits(summary: str, words: Sequence[str]) -> list[RecallHit]:
    """The summary's lines that hold every one of ``words``, in order (score 1.0)."""
    wanted = set(words)
    return [
        RecallHit("summary", 0, "summary", None, line, 1.0)
        for line in (raw.strip() for raw in summary.splitlines())
        if line and wanted.issubset(search_words(line))
    ]


def candidates(limit: int) -> int:
    """How many of the backend's best matches ``rank_hits`` re-ranks for ``limit`` hits."""
    return min(MAX_RECALL_LIMIT, max(100, 10 * limit))


def rank_hits(
    items: Sequence[RecallHit],
    summary: Sequence[RecallHit],
    words: Sequence[str],
    limit: int,
) -> list[RecallHit]:
    """The hits ``recall`` returns: archived items holding more of the query's distinct words
    first, then by the backend's score; then the summary's lines that hold every query word
    (the summary is in the prompt already); ``limit`` in all.

    Counting the words matched first makes an item that holds the whole query beat one that
    holds only its rarest word (BM25 alone, with FTS5's floor on common words' weight, can
    rank a short item holding one rare word above it).
    """
    wanted = set(words)

    def matched(hit: RecallHit) -> int:
        return len(wanted.intersection(search_words(hit.text)))

    ranked = sorted(items, key=lambda hit: (-matched(hit), -hit.score, hit.seq))
    return [*ranked, *summary][:limit]


def rank_matches(
    matches: Iterable[tuple[int, str]], words: Iterable[str]
) -> list[tuple[int, float]]:
    """``(key, score)`` of documents that all hold every one of ``words`` (``matches``: key and
    the document's words, space-separated), best first; ties by key.

    BM25 with every word's idf equal (each match holds each word, so an idf would weigh the
    same words for every match), lengths normalised by the matches' average: the order
    BM25's term-frequency part gives, without counting each word's documents in the whole
    index (what makes a database's own BM25 slow for common words).
    """
    wanted = list(dict.fromkeys(words))
    counted = [(key, Counter(text.split())) for key, text in matches]
    if not counted:
        return []
    lengths = [sum(counts.values()) for _, counts in counted]
    average = sum(lengths) / len(lengths) or 1.0
    scored = []
    for (key, counts), length in zip(counted, lengths, strict=True):
        norm = K1 * (1.0 - B + B * length / average)
        score = sum(counts[w] * (K1 + 1.0) / (counts[w] + norm) for w in wanted if counts[w])
        scored.append((key, score))
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))
