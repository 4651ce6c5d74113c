"""The document a trim changes (``_trim``): its entries per pool, each entry's cost, and a
running total of the rendered text's tokens that every change keeps by its own difference.

Each entry is costed once when a trim starts (``EntryCosts``: remembered across trims); a
rewritten form is costed from the entry it replaces where that is sure (``EntryCosts.cut``); a
dropped entry takes its cost out, and what its going changes around it (its heading with a
section's last entry, the quoted-data label with the last quoting entry, the trimming note and
its per-section counts) is counted as it changes.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from itertools import compress, repeat
from operator import eq, ne
from typing import Any, Protocol

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._forms import EXTRA, LATER, SUPERSEDED
from compactkit.compressors._refs import strip_refs
from compactkit.compressors._trim_costs import EntryCosts


class TrimmedDocument(Protocol):
    """What trimming reads of a ``SummaryDocument`` (kept structural: sections imports us)."""

    @property
    def sections(self) -> Mapping[Any, tuple[str, ...]]: ...
    @property
    def extra(self) -> Mapping[str, tuple[str, ...]]: ...
    @property
    def trimmed(self) -> int: ...
    @property
    def omitted(self) -> Mapping[str, int]: ...
    @property
    def stored_trimmed(self) -> int | None: ...
    def render(self) -> str: ...


_NOTE = (
    "_Note: 10 older entries were trimmed to keep this summary within its token cap; not listed: ._"
)
_FIT_NOTES = (
    "_Note: 10 older entries were trimmed to fit this request; not listed: ._",
    "_Note: 10 older entries were trimmed (10 of them to fit this request); not listed: ._",
)
"""The note as a summary fitted to one request has it (``trim_note``): when its stored form
had trimmed none, and when it had."""


class TrimState:
    """The document being trimmed: entries per pool with their costs and a running total."""

    def __init__(
        self,
        doc: TrimmedDocument,
        counter: TokenCounter,
        headings: Mapping[str, str],
        label: tuple[str, frozenset[str]],
        total: int,
    ) -> None:
        self.counter = counter
        self.cost = EntryCosts(counter)  # an entry's bullet and line break, remembered
        self.doc = doc
        self.headings = headings
        self.label, self.quoting = label
        # section name (key or "extra:<heading>") -> entries; None marks a dropped entry
        self.entries: dict[str, list[str | None]] = {}
        self.costs: dict[str, list[int]] = {}
        self.pools: dict[str, list[tuple[str, int]]] = {}  # pool -> (section, index), oldest first
        # pool -> the sections whose entries, all of them in order, are its (section, index)
        # list; None for a pool made entry by entry (of a MIXED section)
        self.runs: dict[str, list[str] | None] = {}
        self.mixed: dict[tuple[str, int], str] = {}  # the pool of each entry of a MIXED section
        self.sizes: dict[str, int] = {}  # pool -> the costs of its entries not dropped
        self.omitted: dict[str, int] = dict(doc.omitted)
        self.dropped = 0
        for key, values in doc.sections.items():
            self._add(key, values, key)
        for heading, values in doc.extra.items():
            self._add(f"extra:{heading}", values, EXTRA)
        self.live = {name: len(values) for name, values in self.entries.items()}
        self.quoted = sum(n for name, n in self.live.items() if self._quotes(name))
        self.total = total  # the tokens of ``doc.render()``
        self.budget = total  # what ``fit_keeping`` aims at now: steps pause only once within it
        self.rewritten = False  # whether the rewriting passes (1-3) are done

    def copy(self) -> TrimState:
        """This state, to change apart from it, its rewriting passes counted done."""
        copy = object.__new__(TrimState)
        copy.__dict__.update(self.__dict__)
        copy.entries = {name: list(values) for name, values in self.entries.items()}
        copy.costs = {name: list(values) for name, values in self.costs.items()}
        copy.sizes, copy.omitted, copy.live = dict(self.sizes), dict(self.omitted), dict(self.live)
        copy.rewritten = True
        return copy

    def _add(self, section: str, values: tuple[str, ...], pool: str) -> None:
        self.entries[section] = list(values)
        costs = self.costs[section] = self.cost.many(values)
        if not values:
            return
        if pool in MIXED:  # entry by entry: a pool of its own for some
            self._add_mixed(section, values, pool, costs)
        else:  # the whole section one pool
            self.pools.setdefault(pool, []).extend(zip(repeat(section), range(len(values))))
            self.sizes[pool] = self.sizes.get(pool, 0) + sum(costs)
            run = self.runs.setdefault(pool, [])
            if run is not None:
                run.append(section)

    def _add_mixed(
        self, section: str, values: tuple[str, ...], pool: str, costs: list[int]
    ) -> None:
        """A MIXED section's entries added to their pools (``pool_of``, remembered per entry),
        each pool's positions and costs picked out in C; only the entries of a pool other
        than the section's own are listed in ``mixed`` (``pool`` finds the others by default).
        The plain version walks the entries one by one (tests/compressors/test_trim_rewording.py
        holds them equal)."""
        names = list(map(_pool_of, repeat(pool), values))
        positions = list(zip(repeat(section), range(len(values))))
        for position in compress(positions, map(ne, names, repeat(section))):
            self.mixed[position] = names[position[1]]
        for name in dict.fromkeys(names):  # (in the order each pool first appears)
            mine = list(map(eq, names, repeat(name)))
            self.pools.setdefault(name, []).extend(compress(positions, mine))
            self.sizes[name] = self.sizes.get(name, 0) + sum(compress(costs, mine))
            self.runs[name] = None

    def pool(self, section: str, index: int) -> str:
        """The pool of the entry at ``section``, ``index``."""
        if section.startswith("extra:"):
            return EXTRA
        return self.mixed.get((section, index), section)

    def replace(self, section: str, index: int, entry: str) -> None:
        new = self.cost.cut(entry, self.entries[section][index], self.costs[section][index])  # type: ignore[arg-type]
        change = new - self.costs[section][index]
        self.total += change
        self.sizes[self.pool(section, index)] += change
        self.entries[section][index] = entry
        self.costs[section][index] = new

    def drop(self, section: str, index: int) -> None:
        self.total -= self.costs[section][index]
        self.sizes[self.pool(section, index)] -= self.costs[section][index]
        self.entries[section][index] = None
        self.costs[section][index] = 0
        name = section.removeprefix("extra:")
        if not self.omitted.get(name):
            self.total += 6  # "12 files read, " in the trimming note
        self.omitted[name] = self.omitted.get(name, 0) + 1
        if not self.dropped:  # the trimming note appears, or says the request trimmed too
            self.total += self._note_change()
        self.dropped += 1
        self.live[section] -= 1
        if not self.live[section]:  # the heading goes with the last entry
            heading = self.headings.get(section, name)
            self.total -= self.counter.count_text(f"## {heading}") + 2
        if self._quotes(section):
            self.quoted -= 1
            if not self.quoted:  # and the quoted-data label with the last quoting entry
                self.total -= self.counter.count_text(self.label) + 1

    def _note_change(self) -> int:
        """The tokens the trimming note adds when the first entry is dropped."""
        count, doc = self.counter.count_text, self.doc
        if doc.stored_trimmed is None:  # a summary as stored: the note appears
            return 0 if doc.trimmed else count(_NOTE) + 1
        before = count(_NOTE) if doc.trimmed else -1
        return count(_FIT_NOTES[1] if doc.stored_trimmed else _FIT_NOTES[0]) - before

    def _quotes(self, section: str) -> bool:
        return section.startswith("extra:") or section in self.quoting

    def build(self) -> Any:
        sections: dict[str, tuple[str, ...]] = {}
        extra: dict[str, tuple[str, ...]] = {}
        for name, values in self.entries.items():
            whole = self.live[name] == len(values)  # (a section nothing was dropped of)
            kept: tuple[str, ...] = tuple(values if whole else filter(_kept, values))  # type: ignore[arg-type]
            if not kept:
                continue
            if name.startswith("extra:"):
                extra[name.removeprefix("extra:")] = kept
            else:
                sections[name] = kept
        make: Any = type(self.doc)
        return make(
            sections=sections,
            extra=extra,
            trimmed=self.doc.trimmed + self.dropped,
            omitted=self.omitted,
            stored_trimmed=self.doc.stored_trimmed,
        )


MIXED = frozenset({"values", "goal", "constraints"})  # the sections ``pool_of`` splits
_kept = functools.partial(operator.is_not, None)  # an entry not dropped


LATER_PREFIX = "Later: "
"""How a goal or constraints entry holding a later request of the user's starts (``LATER``)."""


def pool_of(key: str, entry: str) -> str:
    """The trimming pool of an entry of section ``key``."""
    if key == "values" and strip_refs(entry).endswith("(superseded)"):
        return SUPERSEDED
    if key in ("goal", "constraints") and entry.startswith(LATER_PREFIX):
        return LATER
    return key


_pool_of = functools.lru_cache(maxsize=1 << 15)(pool_of)  # (a trim reads each entry's again)
