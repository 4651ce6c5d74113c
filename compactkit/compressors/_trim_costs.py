"""What trimming computes per entry, remembered across trims: costs and rewritten forms.

Cost model: ``_trim.fit`` costs every entry of the document it trims (``entry_cost``: the
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

from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any, TypeVar

from compactkit.budget.tokens import TiktokenCounter, TokenCounter
from compactkit.compressors._forms import bare, bullet, shorten
from compactkit.compressors._refs import strip_refs

__all__ = [
    "EntryCosts",
    "LIMIT",
    "entry_cost",
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
    """``entry_cost(counter, entry)``, remembered (see the module docstring)."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        if type(counter) is TiktokenCounter:
            self._table = _COSTS[counter.encoding_name] = _bounded(
                _COSTS.get(counter.encoding_name)
            )
        else:
            self._table = {}

    def __call__(self, entry: str) -> int:
        """The cost of ``entry``."""
        cost = self._table.get(entry)
        if cost is None:
            cost = self._table[entry] = entry_cost(self._counter, entry)
        return cost

    def many(self, entries: Iterable[str]) -> list[int]:
        """The costs of ``entries``, in order."""
        table = self._table
        try:
            return list(map(table.__getitem__, entries))
        except KeyError:
            return list(map(self, entries))


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
