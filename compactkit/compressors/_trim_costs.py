"""What trimming computes per entry, remembered across trims: costs and rewritten forms.

Cost model: ``_trim.fit_keeping`` costs every entry of the document it trims (``entry_cost``: the
tokens of its bullet, plus one for its line break) and rewrites them form by form
(``_forms.shorten``, ``_forms.bare``, ``strip_refs``) until the text fits; about 2,700 entries
and four passes per trim in a long agent session, 10-20 ms each time. Every compaction trims the
summary the one before wrote merged with what it adds (most of its entries are the same
strings again) and often trims it twice (``DigestCompressor._fit``), so nearly all of that work
repeats. Here each cost and each form is remembered by entry string: a repeat is one dict
look-up. The three passes every trim makes are remembered together (``form_chains``: what
``shorten``, then ``bare``, then ``no_refs`` make of an entry, as ``(pass, form)`` changes), so
a trim finds every change of the three passes with one look-up per entry; an entry's rank
among its pool's (``_trim._rank``) is remembered like a form.

The plain versions they replace: ``counter.count_text(bullet(entry)) + 1`` and
``form(pool, entry)``, recomputed each time (tests/compressors/test_trim_costing.py holds them
equal on random entries). Costs are shared process-wide only for a plain ``TiktokenCounter``,
whose counts depend on the text and the encoding alone (``TiktokenCounter`` counts are the
process-wide ones of its encoding); any other counter gets a table of its own per trim. Forms
are pure functions of the pool and the entry. Each table is bounded (``LIMIT`` keys; beyond it
the older half is dropped in one pass, checked once per trim).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any, TypeVar

from compactkit.budget import LINE_ADDITIVE
from compactkit.budget.tokens import TiktokenCounter, TokenCounter
from compactkit.compressors._forms import bare, bullet, shorten
from compactkit.compressors._refs import strip_refs

__all__ = [
    "LINE_COUNTS",
    "EntryCosts",
    "cut_apart",
    "LIMIT",
    "entry_cost",
    "from_line",
    "known_cost",
    "line_break_joins",
    "to_line",
    "form_changes",
    "form_chains",
    "no_refs",
    "remembered",
]

LIMIT = 1 << 16
"""Keys per table (costs per encoding, each form's): a long session's summary holds a few
thousand entries, and its trims a few thousand rewritten forms."""

Form = Callable[[str, str], str]
K = TypeVar("K")
V = TypeVar("V")

_COSTS: dict[str, dict[str, int]] = {}  # encoding -> entry -> cost
_FORMS: dict[
    Callable[[str, str], Any], dict[tuple[str, str], Any]
] = {}  # form -> (pool, entry) -> its value


def entry_cost(counter: TokenCounter, entry: str) -> int:
    """The plain cost of an entry: its bullet's tokens and its line break."""
    return counter.count_text(bullet(entry)) + 1


class EntryCosts:
    """``entry_cost(counter, entry)``, remembered (see the module docstring); an entry whose
    rendered line the digest's sizer counted already (``LINE_COUNTS``) is costed from that
    count (``from_line``), without encoding it again."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        self._lines: dict[str, int] = {}
        self._additive = False  # whether cuts are counted apart (``cut_apart``)
        if type(counter) is TiktokenCounter:
            name = counter.encoding_name
            self._table = _COSTS[name] = _bounded(_COSTS.get(name))
            if name in LINE_ADDITIVE:
                self._lines = LINE_COUNTS.setdefault(name, {})
                self._additive = True
        else:
            self._table = {}

    def __call__(self, entry: str) -> int:
        """The cost of ``entry``."""
        cost = self._table.get(entry)
        if cost is None:
            line = self._lines.get(entry)
            if line is not None:
                cost = from_line(self._counter, entry, line)
            if cost is None:
                cost = entry_cost(self._counter, entry)
            self._table[entry] = cost
        return cost

    def cut(self, form: str, entry: str, cost: int) -> int:
        """The cost of ``form``, a rewritten form of ``entry`` (whose cost is ``cost``): when
        ``form`` is ``entry`` cut short where a piece of the encoding's split pattern starts
        (``cut_apart``), ``cost`` less the tokens of what was cut off (mostly a detail many
        entries share: " — read (cat)", " → exit 0"), without encoding the form."""
        known = self._table.get(form)
        if known is None:
            rest = cut_apart(form, entry) if self._additive else None
            if rest is None:
                return self(form)
            known = self._table[form] = cost - self._counter.count_text(rest)
        return known

    def many(self, entries: Iterable[str]) -> list[int]:
        """The costs of ``entries``, in order."""
        entries = entries if isinstance(entries, (tuple, list)) else list(entries)
        costs: list[int | None] = list(map(self._table.get, entries))
        if None in costs:  # counted here, only the entries not known yet
            for index in [i for i, cost in enumerate(costs) if cost is None]:
                costs[index] = self(entries[index])
        return costs  # type: ignore[return-value]


LINE_COUNTS: dict[str, dict[str, int]] = {}
"""Per ``LINE_ADDITIVE`` encoding, entry -> the tokens of its rendered line with its line break
(``bullet(entry) + "\\n"``): the digest's sizer's counts (``_sizer.bullet_counts``), read here."""
# Punctuation the split patterns' punctuation piece takes (never a letter, digit, mark or space):
# ASCII's, and the marks the summary format writes (a clipped text's ellipsis, a detail's dash,
# arrow and count sign): an entry clipped inside backticks ends "…`".
_MARKS = frozenset(string.punctuation) | frozenset(
    "\N{HORIZONTAL ELLIPSIS}\N{EM DASH}\N{EN DASH}\N{RIGHTWARDS ARROW}\N{MULTIPLICATION SIGN}"
)


def line_break_joins(text: str) -> str | None:
    """The end of ``text`` that a line break appended to it is encoded with, as one piece of a
    ``LINE_ADDITIVE`` encoding's split pattern (``""``: the line break is a piece of its own),
    when that is sure; else ``None``. Sure for a text ending with an ASCII letter or digit (no
    piece but whitespace takes a line break: ``""``), or with a run of punctuation (``_MARKS``) that
    follows an ASCII letter or digit (the run: the punctuation piece takes the line breaks after
    it), or a space (the space and the run: the punctuation piece opens with one space), or
    opens the text. So ``count(text + "\\n") - count(text)`` is
    ``count(tail + "\\n") - count(tail)`` (tests/compressors/test_line_counts.py)."""
    last = text[-1:]
    if last.isascii() and last.isalnum():
        return ""
    if not last or last not in _MARKS:
        return None
    start = len(text) - 1
    while start and text[start - 1] in _MARKS:
        start -= 1
    before = text[start - 1 : start]
    if not before or (before.isascii() and before.isalnum()):
        return text[start:]
    return text[start - 1 :] if before == " " else None


def cut_apart(form: str, entry: str) -> str | None:
    """What is left of ``entry`` after ``form`` when ``entry`` is ``form`` followed by a space
    that starts a piece of a ``LINE_ADDITIVE`` encoding's split pattern, in a one-line end;
    else ``None``. Sure when ``form`` ends with an ASCII letter or digit or with ``_MARKS``
    punctuation (no piece of those takes a space after it, and no piece before it looks past
    it) and the rest holds no line break: ``bullet(entry)`` is then ``bullet(form)`` followed
    by the rest, encoded apart, so ``entry_cost(form)`` is ``entry_cost(entry)`` less the
    rest's tokens (tests/compressors/test_line_counts.py)."""
    if len(entry) <= len(form) or entry[len(form)] != " " or not entry.startswith(form):
        return None
    last = form[-1:]
    if not (last in _MARKS or (last.isascii() and last.isalnum())):
        return None
    rest = entry[len(form) :]
    return None if "\n" in rest or "\r" in entry else rest


def from_line(counter: TokenCounter, entry: str, line: int) -> int | None:
    """``entry_cost(counter, entry)`` from ``line``, the tokens of ``bullet(entry) + "\\n"``
    under ``counter`` (a ``LINE_ADDITIVE`` encoding's); ``None`` when not sure."""
    joined = _line_break_tokens(counter, entry)
    return None if joined is None else line - joined + 1


def to_line(counter: TokenCounter, entry: str, cost: int) -> int | None:
    """The tokens of ``bullet(entry) + "\\n"`` from ``cost``, ``entry_cost(counter, entry)``
    (the inverse of ``from_line``); ``None`` when not sure."""
    joined = _line_break_tokens(counter, entry)
    return None if joined is None else cost - 1 + joined


def _line_break_tokens(counter: TokenCounter, entry: str) -> int | None:
    """What appending a line break to ``bullet(entry)`` adds to its tokens (only the piece it
    joins changes: ``line_break_joins``); ``None`` when not sure."""
    if "\r" in entry:
        return None
    tail = line_break_joins(bullet(entry) if "\n" in entry else "- " + entry)
    if tail is None:
        return None
    known = _JOINED.get(counter.encoding_name) if type(counter) is TiktokenCounter else None
    added = None if known is None else known.get(tail)
    if added is None:
        count = counter.count_text
        added = count(tail + "\n") - count(tail)
        if known is not None and len(known) < LIMIT:
            known[tail] = added
    return added


# Per encoding (a plain ``TiktokenCounter``'s), a tail ``line_break_joins`` found -> what a line
# break appended to it adds: a few kinds of tails ("", "`", "…`", ")") recur over thousands of
# entries a compaction, each looked up instead of counted twice.
_JOINED: dict[str, dict[str, int]] = {name: {} for name in LINE_ADDITIVE}


def known_cost(counter: TokenCounter, entry: str) -> int | None:
    """``entry_cost(counter, entry)`` when a trim remembered it (a plain ``TiktokenCounter``
    of a ``LINE_ADDITIVE`` encoding)."""
    if type(counter) is not TiktokenCounter or counter.encoding_name not in LINE_ADDITIVE:
        return None
    table = _COSTS.get(counter.encoding_name)
    return None if table is None else table.get(entry)


def remembered(form: Callable[[str, str], V]) -> Callable[[str, str], V]:
    """``form(pool, entry)`` remembered by pool and entry (``form`` must be a pure function of
    them: ``shorten``, ``bare``, references stripped, an entry's rank)."""
    table = _FORMS[form] = _bounded(_FORMS.get(form))

    def rewrite(pool: str, entry: str) -> V:
        key = (pool, entry)
        rewritten = table.get(key)
        if rewritten is None:
            rewritten = table[key] = form(pool, entry)
        return rewritten

    return rewrite


def no_refs(pool: str, entry: str) -> str:
    """An entry without its references (the third form)."""
    return strip_refs(entry)


FORMS: tuple[Form, ...] = (shorten, bare, no_refs)
"""The forms trimming rewrites every entry with, pass after pass (``_trim._steps`` 1-3)."""
Changes = tuple[tuple[int, str], ...]
_CHAINS: list[dict[tuple[str, str], Changes]] = [{}]


def form_changes(pool: str, entry: str) -> Changes:
    """What the passes of ``FORMS`` make of ``entry`` (of ``pool``), each pass rewriting what
    the one before left: ``(pass, form)`` for each pass that changes it."""
    changes = []
    for step, form in enumerate(FORMS):
        rewritten = form(pool, entry)
        if rewritten != entry:
            changes.append((step, rewritten))
            entry = rewritten
    return tuple(changes)


def form_chains() -> dict[tuple[str, str], Changes]:
    """``form_changes(pool, entry)`` remembered by ``(pool, entry)``, for every trim of the
    process (the table is bounded like the others: checked when a trim takes it)."""
    table = _CHAINS[0] = _bounded(_CHAINS[0])
    return table


def _bounded(table: dict[K, V] | None) -> dict[K, V]:
    """``table`` (a new one for ``None``), its older half dropped when it outgrew ``LIMIT``
    (a trim that still holds the old table is unaffected: it keeps filling that one)."""
    if table is None:
        return {}
    if len(table) > LIMIT:
        return dict(islice(table.items(), len(table) // 2, None))
    return table
