"""``SummarySizer``: the tokens of a rendered summary, counted entry by entry (see the class).

Cost model: a compaction counts the summary it grows after every group it folds; rendering and
counting the whole text each time is O(summary) per count. Counted per bullet, with each bullet
remembered per encoding, a count is O(sections + new entries). The plain version it replaces is
``text_tokens(doc.render(), counter)``; tests/compressors/test_text_tokens.py holds them equal.

``message_tokens`` derives the summary *message*'s tokens (the sealed text a request carries)
from that count, instead of cutting the whole sealed text into lines and looking each up
again (about 1 ms a compaction once the summary nears its cap). The plain version it replaces
is ``summary_tokens(doc.render(), counter)``; tests/compressors/test_summary_message_tokens.py
holds them equal.
"""

from __future__ import annotations

import re
from itertools import compress, islice, repeat
from operator import is_

from compactkit.budget.tokens import TiktokenCounter, TokenCounter, remember_text_tokens
from compactkit.compressors._plan import counts_by_lines, summary_tokens
from compactkit.compressors._trim_costs import LINE_COUNTS, known_cost, to_line
from compactkit.compressors.sections import SummaryDocument
from compactkit.items import Message
from compactkit.items.snapshot import DEFAULT_SUMMARY_ROLE, sealed_around

__all__ = ["SummarySizer", "bullet", "bullet_counts"]


class SummarySizer:
    """``text_tokens(doc.render(), counter)`` for documents that share most of their entries
    (the summary a digest grows, its trimmed copy), without rendering them: with a counter that
    counts by lines (``counts_by_lines``) a rendered summary is cut before every title, note,
    heading and entry, so its tokens are those of its head lines, its headings and its entries,
    each entry counted once (a section's last entry before the next heading carries the blank
    line between them), and a section that only grew at its end since it was last counted by
    what it gained."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        # entry -> tokens of its rendered bullet; shared by the sizers of one encoding
        self.entries: dict[str, int] = (
            bullet_counts(counter.encoding_name)
            if isinstance(counter, TiktokenCounter) and counts_by_lines(counter)
            else {}
        )
        # heading -> the entries counted last under it, and their tokens: a section that only
        # grew at its end since is counted by what it gained
        self.runs: dict[str, tuple[tuple[str, ...], int]] = {}
        self._message: int | None = None  # a summary message's tokens beyond its text
        # the document counted last, and its tokens: a digest counts the summary it merged,
        # then (unchanged by the checks after) the same document again to fit it
        self._last: tuple[SummaryDocument, int] | None = None

    def __call__(self, doc: SummaryDocument) -> int:
        """Tokens of ``doc.render()``."""
        last = self._last
        if last is not None and last[0] is doc:  # (a document never changes)
            return last[1]
        tokens = self._count_doc(doc)
        self._last = (doc, tokens)
        return tokens

    def _count_doc(self, doc: SummaryDocument) -> int:
        count = self.counter.count_text
        if not counts_by_lines(self.counter):
            return count(doc.render())
        head, blocks = doc.head_lines(), doc.blocks()
        pieces = [f"{line}\n" for line in head]
        if blocks:
            pieces[-1] += "\n"  # the blank line before the first heading
        pieces += [f"## {heading}\n" for heading, _entries in blocks]
        pieces += [f"{bullet(entries[-1])}\n" for _heading, entries in blocks[:-1]]
        if any("\r" in piece for piece in pieces):
            return count(doc.render())
        counted = [(heading, entries[:-1]) for heading, entries in blocks[:-1]]
        counted += [(heading, entries) for heading, entries in blocks[-1:]]
        total = sum(map(count, pieces))
        for heading, entries in counted:
            run = self.runs.get(heading)
            if run is not None and entries[: len(run[0])] == run[0]:  # grown at its end
                tokens, grown = run[1], entries[len(run[0]) :]
                # Bullet by bullet, not joined: each bullet is one of the pieces the rendered
                # summary is counted by (``text_tokens``, when the digest counts its result),
                # so it is encoded once, here, and looked up there.
                gained = self._one_by_one(grown) if grown else 0
                if gained is None:
                    return count(doc.render())
                tokens += gained
            else:
                counted_apart = self._one_by_one(entries)
                if counted_apart is None:
                    return count(doc.render())
                tokens = counted_apart
            self.runs[heading] = (entries, tokens)
            total += tokens
        return total

    def message_tokens(self, doc: SummaryDocument, tokens: int | None = None) -> int:
        """``summary_tokens(doc.render(), counter)``: the tokens of the message carrying
        ``doc``, from ``tokens`` (``self(doc)``, counted here when not given).

        Exact with a counter that counts by lines (``counts_by_lines``), for a text without
        ``\r`` that starts a line of its own (as a rendered summary does, with its title) and
        ends with a line break. The sealed text is ``head + text + tail``, ``head`` ending
        with a line break and ``tail`` a line break then ``<``, so its cuts are ``head``'s,
        ``text``'s (the last piece of which takes ``tail``'s line break) and one before the
        rest of ``tail``: its count is ``head``'s, plus ``tokens``, less the last piece's,
        plus that piece's with the line break, plus the rest of ``tail``'s."""
        text = doc.render()
        counter = self.counter
        if (
            not text
            or not counts_by_lines(counter)
            or "\r" in text
            or not text.endswith("\n")
            or not _LINE_OPENER.match(text)
        ):
            return summary_tokens(text, counter)
        head, tail = sealed_around(text)
        if not head.endswith("\n") or not _LINE_OPENER.match(tail, 1) or tail[0] != "\n":
            return summary_tokens(text, counter)
        if self._message is None:
            self._message = counter.count_item(Message(role=DEFAULT_SUMMARY_ROLE, content=""))
        count = counter.count_text
        last = _last_piece(text)
        if tokens is None:
            tokens = self(doc)
        body = tokens - count(last) + count(last + "\n")
        sealed = count(head) + body + count(tail[1:])
        # The sealed text's count, for whoever counts the summary message next (the governor,
        # the projector): the counter would encode every bullet this sizer counted its own way.
        remember_text_tokens(counter, head + text + tail, sealed)
        return self._message + sealed

    def _one_by_one(self, entries: tuple[str, ...]) -> int | None:
        """Tokens of ``entries``' bullets, each counted once per sizer (``None``: an entry
        holds a ``\r``)."""
        known = self.entries
        try:  # (mostly every entry is known: one pass in C)
            return sum(map(known.__getitem__, entries))
        except KeyError:
            pass
        tokens: list[int | None] = list(map(known.get, entries))  # (in C)
        if None in tokens:  # counted here, only the entries not known yet (mostly new ones)
            for index in compress(range(len(tokens)), map(is_, tokens, repeat(None))):
                entry = entries[index]
                if "\r" in entry:
                    return None
                counted = known.get(entry)  # (a repeat of an entry counted just before)
                if counted is None:
                    counted = known[entry] = self._count(entry)
                tokens[index] = counted
        return sum(tokens)  # type: ignore[arg-type]

    def _count(self, entry: str) -> int:
        """Tokens of ``entry``'s bullet: from its trim cost when a trim costed it already
        (``_trim_costs.to_line``), else encoded."""
        cost = known_cost(self.counter, entry)
        tokens = None if cost is None else to_line(self.counter, entry, cost)
        return self.counter.count_text(bullet(entry)) if tokens is None else tokens


# A character that starts a piece of ``line_pieces`` when a line starts with it.
_LINE_OPENER = re.compile(r"[^\s/]")


def _last_piece(text: str) -> str:
    """``line_pieces(text)[-1]``, found from the end (``text`` ends with a line break)."""
    at = text.rfind("\n", 0, len(text) - 1)
    while at >= 0:
        if _LINE_OPENER.match(text, at + 1):
            return text[at + 1 :]
        at = text.rfind("\n", 0, at)
    return text


# Tokens of an entry's rendered bullet, per encoding, for every sizer of the process: each
# compaction reads back the summary the one before wrote, and its sizer counts those entries
# again (a count depends on the text and the encoding alone: ``counts_by_lines`` holds only for
# a plain ``TiktokenCounter``, whose counts are the process-wide ones of its encoding).
_BULLET_COUNTS = LINE_COUNTS  # (trimming reads them: ``_trim_costs.EntryCosts``)
_BULLET_LIMIT = 1 << 16  # entries per encoding; beyond it the older half is dropped


def bullet_counts(encoding: str) -> dict[str, int]:
    """The shared bullet counts of ``encoding``, the older half dropped in one pass when they
    outgrew ``_BULLET_LIMIT`` (checked once per sizer: a compaction adds a few thousand)."""
    counts = _BULLET_COUNTS.get(encoding)
    if counts is None or len(counts) > _BULLET_LIMIT:
        kept = dict(islice(counts.items(), len(counts) // 2, None)) if counts else {}
        counts = _BULLET_COUNTS[encoding] = kept  # a sizer still filling the old dict is harmless
    return counts


def bullet(entry: str) -> str:
    """An entry as ``SummaryDocument.render`` writes it: ``- first line``, the others indented
    by two spaces."""
    return "- " + entry.replace("\n", "\n  ") + "\n"
