"""The trimming algorithm as it was before its fast paths (compactkit 0ae38ba's ``_trim``),
kept here as the oracle the fast paths are held to: every entry costed anew, every form computed
anew, every change a step of its own, each pool's size summed again where it is read."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._entries import runs
from compactkit.compressors._forms import EXTRA, SUPERSEDED, bare, barer, shorten
from compactkit.compressors._plan import text_tokens
from compactkit.compressors._refs import strip_refs
from compactkit.compressors._trim import (
    BAREST,
    FLOORS,
    HEAVY,
    QUOTA_SHARE,
    TIERS,
    UNGUARANTEED,
    WEIGHTS,
)
from compactkit.compressors._trim_costs import entry_cost
from compactkit.compressors._trim_state import pool_of

_Document = Any
Doc = Any


class EntryCosts:
    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def __call__(self, entry: str) -> int:
        return entry_cost(self.counter, entry)

    def many(self, entries) -> list[int]:
        return [self(e) for e in entries]


def remembered(form):
    return form


_NOTE = (
    "_Note: 10 older entries were trimmed to keep this summary within its token cap; not listed: ._"
)


class _State:
    """The document being trimmed: entries per pool with their costs and a running total."""

    def __init__(
        self,
        doc: _Document,
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
        self.omitted: dict[str, int] = dict(doc.omitted)
        self.dropped = 0
        for key, values in doc.sections.items():
            self._add(key, values, lambda entry, key=key: pool_of(key, entry))  # type: ignore[misc]
        for heading, values in doc.extra.items():
            self._add(f"extra:{heading}", values, lambda _entry: EXTRA)
        self.live = {name: len(values) for name, values in self.entries.items()}
        self.quoted = sum(n for name, n in self.live.items() if self._quotes(name))
        self.total = total  # the tokens of ``doc.render()``

    def _add(self, section: str, values: tuple[str, ...], pool_of: Callable[[str], str]) -> None:
        self.entries[section] = list(values)
        self.costs[section] = self.cost.many(values)
        for index, entry in enumerate(values):
            self.pools.setdefault(pool_of(entry), []).append((section, index))

    def measured_runs(self, at: tuple[str, int]) -> int:
        """How many runs the measurements entry at ``at`` was taken over, as first given."""
        return runs(strip_refs(self.doc.sections[at[0]][at[1]]))[1]

    def replace(self, section: str, index: int, entry: str) -> None:
        new = self.cost(entry)
        self.total += new - self.costs[section][index]
        self.entries[section][index] = entry
        self.costs[section][index] = new

    def drop(self, section: str, index: int) -> None:
        self.total -= self.costs[section][index]
        self.entries[section][index] = None
        self.costs[section][index] = 0
        name = section.removeprefix("extra:")
        if not self.omitted.get(name):
            self.total += 6  # "12 files read, " in the trimming note
        self.omitted[name] = self.omitted.get(name, 0) + 1
        if not self.dropped and not self.doc.trimmed:  # the trimming note appears
            self.total += self.counter.count_text(_NOTE) + 1
        self.dropped += 1
        self.live[section] -= 1
        if not self.live[section]:  # the heading goes with the last entry
            heading = self.headings.get(section, name)
            self.total -= self.counter.count_text(f"## {heading}") + 2
        if self._quotes(section):
            self.quoted -= 1
            if not self.quoted:  # and the quoted-data label with the last quoting entry
                self.total -= self.counter.count_text(self.label) + 1

    def _quotes(self, section: str) -> bool:
        return section.startswith("extra:") or section in self.quoting

    def build(self) -> Any:
        sections: dict[str, tuple[str, ...]] = {}
        extra: dict[str, tuple[str, ...]] = {}
        for name, values in self.entries.items():
            kept = tuple(e for e in values if e is not None)
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
        )


def _steps(state: _State, budget: int, keep: frozenset[str]) -> Iterator[None]:
    """Every change trimming may make, in order; the caller stops as soon as the text fits.
    The pools in ``keep`` are shortened like the others but never dropped."""
    pools = state.pools
    tier_pools = [[p for p in tier if p in pools] for tier in TIERS]
    # (each form remembered per entry: the next compaction trims most of the same entries)
    yield from _rewrite(state, tier_pools, remembered(shorten))  # 1. context shortened
    yield from _rewrite(state, tier_pools, remembered(bare))  # 2. every fact alone
    yield from _rewrite(state, tier_pools, remembered(_no_refs))  # 3. the references go
    if state.total > budget * BAREST:  # 3b. under heavy pressure, barer still
        yield from _rewrite(state, tier_pools, _barer(state))
    # 4. the entries beyond each pool's quota dropped, tier by tier (least important first,
    # from the pool holding the most tokens): every class keeps its most important entries
    # while a later tier still has extras to give; then 5. the quotas, tier by tier.
    tier_pools = [[p for p in tier if p not in keep] for tier in tier_pools]
    queues = {p: _by_importance(state, p) for tier in tier_pools for p in tier}
    weights = {p: WEIGHTS[t] for t, tier in enumerate(tier_pools[:-1]) for p in tier}
    quotas = _quotas(state, budget, tier_pools, queues)
    if state.total > budget * HEAVY:  # small classes keep their floors too
        for pool, share in FLOORS.items():
            if pool in quotas:
                quotas[pool] = max(quotas[pool], math.ceil(len(queues[pool]) * share))
    for pool in quotas.keys() - UNGUARANTEED:  # every class its most important entry
        quotas[pool] = max(quotas[pool], min(1, len(queues[pool])))
    yield from _drop_weighted(state, weights, queues, quotas)
    for tier in tier_pools:  # (every pool of a tier alike, none kept)
        yield from _drop_weighted(state, dict.fromkeys(tier, 1), queues, dict.fromkeys(tier, 0))


def _drop_weighted(
    state: _State,
    weights: Mapping[str, float],
    queues: dict[str, list[tuple[str, int]]],
    quotas: Mapping[str, int],
) -> Iterator[None]:
    """Drop entries — superseded values first, then the least important entry of the pool
    whose tokens are largest for its weight — until the caller stops."""
    pools = state.pools
    sizes = {
        pool: sum(state.costs[s][i] for s, i in pools[pool] if state.entries[s][i] is not None)
        for pool in weights
    }
    while True:
        live = [p for p in weights if len(queues[p]) > quotas[p]]
        if not live:
            return
        pool = SUPERSEDED if SUPERSEDED in live else max(live, key=lambda p: sizes[p] / weights[p])
        section, index = queues[pool].pop()
        if state.entries[section][index] is None:
            continue
        sizes[pool] -= state.costs[section][index]
        state.drop(section, index)
        yield


def _rewrite(
    state: _State, tier_pools: list[list[str]], change: Callable[[str, str], str]
) -> Iterator[None]:
    """Rewrite entries one at a time with ``change(pool, entry)``, tier by tier."""
    for tier in tier_pools:
        for pool in tier:
            for section, index in state.pools[pool]:
                entry = state.entries[section][index]
                if entry is not None and (changed := change(pool, entry)) != entry:
                    state.replace(section, index, changed)
                    yield


def _barer(state: _State) -> Callable[[str, str], str]:
    """``barer`` for the entries of ``state`` (the next steps it keeps, its untrimmed state)."""
    steps = [e for e in state.entries.get("next_steps", ()) if e is not None]
    return functools.partial(barer, next_steps=steps, state=state.doc.sections.get("state", ()))


def _no_refs(pool: str, entry: str) -> str:
    return strip_refs(entry)


_TEST_COUNTS = re.compile(r"\b\d+ (?:passed|failed|errors?|skipped|tests?)\b")
_WHY = re.compile(r"\b(?:because|since|instead|rather than|but|so that)\b", re.IGNORECASE)


def _by_importance(state: _State, pool: str) -> list[tuple[str, int]]:
    """A pool's entries, most important first: the newest first; an open error before a
    resolved one; a measured quantity (a latency, a size, a rate) before a test run's counts
    (whether tests passed the commands and errors tell), then one taken over more runs before
    one taken once (a value tracked run after run is what the work is tuning); a decision that
    says why (or what it replaced) before one that does not."""
    entries = list(reversed(state.pools[pool]))
    if pool == "errors":
        entries.sort(key=lambda at: "resolved" in (state.entries[at[0]][at[1]] or ""))
    elif pool == "measurements":
        entries.sort(
            key=lambda at: (
                bool(_TEST_COUNTS.search(state.doc.sections[at[0]][at[1]].partition(" — ")[0])),
                -state.measured_runs(at),
            )
        )
    elif pool == "decisions":  # "Decisions and why": one that gives its reason first
        entries.sort(key=lambda at: not _WHY.search(state.doc.sections[at[0]][at[1]]))
    return entries


def _quotas(
    state: _State,
    budget: int,
    tier_pools: list[list[str]],
    queues: Mapping[str, list[tuple[str, int]]],
) -> dict[str, int]:
    """How many of each pool's most important entries are guaranteed (``queues``: every
    entry, none dropped yet, most important first): ``QUOTA_SHARE`` of the room the pools have
    is handed out one entry per pool per round (the last tier's pools first in a round), until
    the first entry that does not fit; so every class keeps some of its facts, and a class with
    a few entries all of them, before any class keeps its extras."""
    pools = [p for tier in reversed(tier_pools) for p in tier]
    spent = sum(state.costs[s][i] for p in pools for s, i in queues[p])
    room = int((budget - (state.total - spent)) * QUOTA_SHARE)
    quotas = dict.fromkeys(pools, 0)
    for depth in range(max((len(queues[p]) for p in pools), default=0)):
        for pool in pools:
            if depth < len(queues[pool]):
                section, index = queues[pool][depth]
                room -= state.costs[section][index]
                if room < 0:
                    return quotas
                quotas[pool] += 1
    return quotas


def fit(
    doc: Doc,
    cap_tokens: int,
    counter: TokenCounter,
    headings: Mapping[str, str],
    label: tuple[str, frozenset[str]],
    *,
    keep: frozenset[str] = frozenset(),
    measure: Callable[[Doc], int] | None = None,
) -> Doc:
    """``doc`` within ``cap_tokens`` of rendered text (see the module docstring); ``doc`` itself
    when it fits already. When even the title does not fit, every entry is dropped but those
    of the pools in ``keep`` (the result is then over the cap). ``headings`` maps section keys
    to their rendered headings; ``label`` is the quoted-data line and the sections whose
    entries make it appear. ``measure(d)`` is ``text_tokens(d.render(), counter)`` (a caller
    that sizes documents incrementally passes its own: the same counts, without rendering and
    splitting the whole text on every check)."""
    if measure is None:
        measure = functools.partial(_rendered_tokens, counter=counter)
    tokens = measure(doc)
    if tokens <= cap_tokens:  # mostly counted while it grew
        return doc
    state = _State(doc, counter, headings, label, tokens)
    steps = _steps(state, cap_tokens, keep)
    budget = cap_tokens
    for _attempt in range(6):
        for _ in steps:
            if state.total <= budget:
                break
        result: Doc = state.build()
        real = measure(result)
        if real <= cap_tokens:
            return result
        budget -= real - cap_tokens + 4  # the estimate drifted: aim lower and go on
        if state.total <= budget:
            continue
    # Out of steps (everything dropped) or the estimates never converged: drop what is left,
    # and when even the per-section counts do not fit, keep only the total in the note.
    for _ in steps:
        pass
    result = state.build()
    if measure(result) > cap_tokens:
        result = replace(result, omitted={})  # type: ignore[type-var,unused-ignore]
    return result


def _rendered_tokens(doc: _Document, counter: TokenCounter) -> int:
    return text_tokens(doc.render(), counter)
