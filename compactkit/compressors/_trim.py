"""Fitting a summary into its token cap in linear time: shorten context first, then drop by class.

Each entry is counted once; every change subtracts its own difference from a running total, and
the real text is counted again only to confirm the result (a few times at most), so trimming a
20,000-entry summarizer answer costs about as much as rendering it (the document being changed,
its costs and running total: ``_trim_state``). Costs and rewritten forms are remembered per entry
across trims (``_trim_costs``): the next compaction trims mostly the same entries again.

The order (see ``TIERS``; the forms are ``_forms``'): every entry's context is shortened first
(the fact itself stays verbatim: a path, an error line, a command, an identifier); then every
entry loses its context altogether (its status stays: resolved, created, deleted); then its
provenance references (a fact is worth more than the way back to its items, which ``recall``
still finds); under heavy pressure (the bare facts need more than ``BAREST`` times the cap)
entries get barer still (a measurement keeps its newest runs, the state loses what the next
steps say). Only then are entries dropped, and the room is shared
inside classes, not between them:

1. every class is guaranteed its most important entries (the newest; an open error before a
   resolved one; a measured quantity before a test run's counts, then the measurement taken over
   the most runs; a decision with its reason), handed out one entry per class per
   round within ``QUOTA_SHARE`` of the room (``_quotas``); every class but the commands (and
   superseded values) keeps at least its first (``UNGUARANTEED``); under heavy pressure (the
   bare facts need more than ``HEAVY`` times the cap) files read and decisions keep their
   newest ``FLOORS`` share too;
2. the entries beyond those quotas go first, least important first, from the class holding the
   most tokens for its tier's weight (``WEIGHTS``: an error outweighs a command ten to one), so a
   large class shrinks toward the others instead of a small class vanishing;
3. the quotas go last, tier by tier, and the goal, constraints and current values last of all.

Dropped entries are counted per section, and the count is rendered in the trimming note
("…; not listed: 12 files read, 3 commands._").
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import replace
from itertools import compress, repeat
from operator import is_
from typing import Any, TypeVar

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._entries import runs
from compactkit.compressors._forms import EXTRA, LATER, SUPERSEDED, barer
from compactkit.compressors._plan import text_tokens
from compactkit.compressors._refs import strip_refs
from compactkit.compressors._trim_costs import Changes, form_chains, form_changes, remembered
from compactkit.compressors._trim_state import LATER_PREFIX, TrimmedDocument, TrimState, pool_of

Doc = TypeVar("Doc", bound=TrimmedDocument)

TIERS: tuple[tuple[str, ...], ...] = (
    ("measurements", "files_read", EXTRA, SUPERSEDED, "commands"),
    ("decisions",),
    ("identifiers", "errors", "files_modified", "state", "next_steps", LATER),
    ("values",),
    ("goal", "constraints"),
)
"""The classes by how much they weigh, lightest first: measurements, files only read, unknown
sections, superseded values and commands; then decisions; then identifiers, errors, files
modified and where the work stands, and later user requests; then the current values (must-keep
facts, but a class like the others: a long list of settings shrinks to its newest instead of
crowding out every error); the user's goal and constraints, dropped only when nothing else is
left. Within a tier the order is the order quotas are handed out in a round (the first tier's:
a measured value before a command)."""

WEIGHTS = (1.0, 4.0, 10.0, 12.0)
"""How much an entry of each tier but the last weighs when extras are dropped: a class gives
while its tokens divided by its weight are the largest. Measured on bench_digest_truth (24
sessions, and the 12 of ``--seeds 1``): errors at 20x 0.85/0.84 with 1/3/6/10, 0.88/0.86 with
1/4/10/12; the other classes met their targets with either."""
QUOTA_SHARE = 0.3
"""The share of the room the entries have that is guaranteed to every class alike, entry by
entry (``_quotas``); the rest goes by weight. At 0.5 measurements at 20x rose from 0.87 to 1.0
but errors fell to 0.81; at 0.3 every class meets its 20x target on bench_digest_truth."""
FLOORS: dict[str, float] = {"files_read": 0.6, "decisions": 0.6}
"""Under heavy pressure (``HEAVY``), the share of a pool's newest entries its quota is raised
to: cheap classes with few entries keep most of them (files read at 40x on
bench_digest_truth: 0.37 without, 0.64 with; decisions 0.48 and 0.58)."""
HEAVY = 2.3
"""Pressure counted heavy: the bare facts need more than this many times the cap."""
BAREST = 1.9
"""Pressure at which entries get barer than bare (``_Barest``): the bare facts need nearly
twice the cap. On bench_digest_truth every 40x compaction is above it (1.97-4.7) and every 20x
one below (1.09-1.78)."""
UNGUARANTEED = frozenset({"commands", SUPERSEDED})
"""The pools whose most important entry is not kept before every other class's extras go
(every other class keeps at least its first entry until only guaranteed entries are left):
a command's outcome is what the errors and measurements hold, and a superseded value is
history. Measured on bench_digest_truth at 40x: measurements 0.41 -> 0.70 (the entry holding
a measured quantity and its runs was the first extra to go, being the lightest tier's), at
0.02-0.05 off files modified, identifiers and errors; with commands guaranteed too,
identifiers fell to 0.585."""


class _Keeping:
    """Whether the steps taken so far are those the steps without ``keep`` take
    (``fit_keeping``). ``keep`` changes the steps in two ways only: through the drops' quotas
    (its pools, not dropped, take none of the room ``_quotas`` hands out), and by dropping its
    pools once every other pool is empty. A pool's quota is read only as ``len(queue) >
    quota``, and its queue only shrinks: where both quotas give the same answer for every
    length the queue had, the drops are the same."""

    def __init__(self) -> None:
        self.ran_out = False  # the steps ran out: without keep, its pools would go next
        # the pools whose quotas differ: (queue, its length then, quota, quota without keep)
        self.quotas: list[tuple[list[tuple[str, int]], int, int, int]] = []

    def alike(self) -> bool:
        if self.ran_out:
            return False
        for queue, length, mine, theirs in self.quotas:
            low, high = min(mine, theirs), max(mine, theirs)
            if len(queue) <= high and length > low:  # a length in (low, high]: answers differ
                return False
        return True


def _steps(
    state: TrimState, budget: int, keep: frozenset[str], keeping: _Keeping | None = None
) -> Iterator[None]:
    """Every change trimming may make, in order; the caller stops as soon as the text fits.
    The pools in ``keep`` are shortened like the others but never dropped. ``keeping`` is
    told the drops' quotas without ``keep`` (``fit_keeping``)."""
    pools = state.pools
    tier_pools = [[p for p in tier if p in pools] for tier in TIERS]
    # 1. context shortened, 2. every fact alone, 3. the references go
    if not state.rewritten:
        paused = yield from _reworded(state, tier_pools)
        if not paused:  # (the text did not fit on the way: the next trim may start from here)
            _REWRITTEN[0] = (state.doc, budget, state.counter, state.headings, state.copy())
    if state.total > budget * BAREST:  # 3b. under heavy pressure, barer still
        yield from _rewrite(state, tier_pools, _barer(state))
    # 4. the entries beyond each pool's quota dropped, tier by tier (least important first,
    # from the pool holding the most tokens): every class keeps its most important entries
    # while a later tier still has extras to give; then 5. the quotas, tier by tier.
    every = tier_pools
    tier_pools = [[p for p in tier if p not in keep] for tier in every]
    queues = {p: _by_importance(state, p) for tier in tier_pools for p in tier}
    weights = {p: WEIGHTS[t] for t, tier in enumerate(tier_pools[:-1]) for p in tier}
    quotas = _floored_quotas(state, budget, tier_pools, queues)
    if keeping is not None and tier_pools != every:  # the quotas the steps without keep use
        kept = {p: _by_importance(state, p) for tier in every for p in tier if p in keep}
        alike = _floored_quotas(state, budget, every, {**queues, **kept})
        keeping.quotas = [
            (queues[p], len(queues[p]), quotas[p], alike[p])
            for p in weights
            if alike[p] != quotas[p]
        ]
    yield from _drop_weighted(state, weights, queues, quotas)
    for tier in tier_pools:  # (every pool of a tier alike, none kept)
        yield from _drop_weighted(state, dict.fromkeys(tier, 1), queues, dict.fromkeys(tier, 0))


def _floored_quotas(
    state: TrimState,
    budget: int,
    tier_pools: list[list[str]],
    queues: Mapping[str, list[tuple[str, int]]],
) -> dict[str, int]:
    """``_quotas``, raised to the floors: under heavy pressure the small classes' ``FLOORS``,
    and every class but ``UNGUARANTEED`` its most important entry."""
    quotas = _quotas(state, budget, tier_pools, queues)
    if state.total > budget * HEAVY:  # small classes keep their floors too
        for pool, share in FLOORS.items():
            if pool in quotas:
                quotas[pool] = max(quotas[pool], math.ceil(len(queues[pool]) * share))
    for pool in quotas.keys() - UNGUARANTEED:  # every class its most important entry
        quotas[pool] = max(quotas[pool], min(1, len(queues[pool])))
    return quotas


def _drop_weighted(
    state: TrimState,
    weights: Mapping[str, float],
    queues: dict[str, list[tuple[str, int]]],
    quotas: Mapping[str, int],
) -> Iterator[None]:
    """Drop entries — superseded values first, then the least important entry of the pool
    whose tokens are largest for its weight — until the caller stops.

    A pool chosen goes on giving while it stays the one chosen: a drop changes only its own
    size, so it is compared with the runner-up alone (the first pool, in ``weights``' order,
    of the largest tokens for its weight among the others), not every pool again."""
    sizes = state.sizes  # (kept by state.drop)
    order = {p: at for at, p in enumerate(weights)}
    while True:
        live = [p for p in weights if len(queues[p]) > quotas[p]]
        if not live:
            return
        share = _share(sizes, weights)
        pool = SUPERSEDED if SUPERSEDED in live else max(live, key=share)
        others = [p for p in live if p != pool]
        rival = None if pool == SUPERSEDED or not others else max(others, key=share)
        queue, quota, weight = queues[pool], quotas[pool], weights[pool]
        bar = 0.0 if rival is None else share(rival)
        before = rival is not None and order[pool] < order[rival]  # (a tie goes to the first)
        while len(queue) > quota:
            section, index = queue.pop()
            if state.entries[section][index] is None:
                continue
            state.drop(section, index)
            yield
            if rival is not None:
                mine = sizes[pool] / weight
                if mine < bar or (mine == bar and not before):
                    break


def _share(sizes: Mapping[str, int], weights: Mapping[str, float]) -> Callable[[str], float]:
    """A pool's tokens for its weight (what ``_drop_weighted`` takes from the largest of)."""
    return lambda p: sizes[p] / weights[p]


def _rewrite(
    state: TrimState, tier_pools: list[list[str]], change: Callable[[str, str], str]
) -> Iterator[None]:
    """Rewrite entries one at a time with ``change(pool, entry)``, tier by tier."""
    for tier in tier_pools:
        for pool in tier:
            for section, index in state.pools[pool]:
                entry = state.entries[section][index]
                if entry is not None and (changed := change(pool, entry)) != entry:
                    state.replace(section, index, changed)
                    yield


def _reworded(state: TrimState, tier_pools: list[list[str]]) -> Generator[None, None, bool]:
    """``_rewrite`` with ``shorten``, then ``bare``, then ``no_refs``, from entries none of
    which was changed or dropped yet: each entry's three forms are remembered together
    (``_trim_costs.form_chains``), so one look-up per entry finds what the three passes change
    (``_changes``), and the changes are applied in the passes' order, pausing only where the
    text fits."""
    passes: tuple[list[tuple[str, int, str]], ...] = ([], [], [])
    for section, index, changes in _changes(state, tier_pools):
        for step, form in changes:
            passes[step].append((section, index, form))
    paused = False
    for moves in passes:
        for section, index, form in moves:
            state.replace(section, index, form)
            if state.total <= state.budget:
                paused = True
                yield
    return paused  # whether the caller was given the chance to stop on the way


def _changes(state: TrimState, tier_pools: list[list[str]]) -> Iterator[tuple[str, int, Changes]]:
    """``(section, index, form_changes(pool, entry))`` for every entry that a pass changes, pool
    by pool in ``tier_pools``' order, each pool's oldest first. A pool made of whole sections
    (``TrimState.runs``) is looked up section by section in C, and only the entries a pass
    changes are walked: a trim's summary is mostly the entries the trim before left, which no
    pass changes again. The plain version walks every entry of ``state.pools[pool]``
    (tests/compressors/test_trim_rewording.py holds them equal)."""
    table = form_chains()
    entries = state.entries
    for tier in tier_pools:
        for pool in tier:
            sections = state.runs.get(pool)
            if sections is None:  # entry by entry (a MIXED section's pools)
                for section, index in state.pools[pool]:
                    key = (pool, entries[section][index])
                    forms = table.get(key)  # type: ignore[arg-type]
                    if forms is None:
                        forms = table[key] = form_changes(*key)  # type: ignore[arg-type,index]
                    if forms:
                        yield section, index, forms
                continue
            for section in sections:
                values = entries[section]
                found = list(map(table.get, zip(repeat(pool), values)))  # type: ignore[arg-type]
                for index in compress(range(len(found)), map(is_, found, repeat(None))):
                    key = (pool, values[index])
                    found[index] = table[key] = form_changes(*key)  # type: ignore[arg-type,index]
                for index in compress(range(len(found)), found):  # (a change: not empty)
                    yield section, index, found[index]  # type: ignore[misc]


def _barer(state: TrimState) -> Callable[[str, str], str]:
    """``barer`` for the entries of ``state`` (the next steps it keeps, its untrimmed state)."""
    steps = [e for e in state.entries.get("next_steps", ()) if e is not None]
    return functools.partial(barer, next_steps=steps, state=state.doc.sections.get("state", ()))


_TEST_COUNTS = re.compile(r"\b\d+ (?:passed|failed|errors?|skipped|tests?)\b")
_WHY = re.compile(r"\b(?:because|since|instead|rather than|but|so that)\b", re.IGNORECASE)


def _by_importance(state: TrimState, pool: str) -> list[tuple[str, int]]:
    """A pool's entries, most important first: the newest first; an open error before a
    resolved one; a measured quantity (a latency, a size, a rate) before a test run's counts
    (whether tests passed the commands and errors tell), then one taken over more runs before
    one taken once (a value tracked run after run is what the work is tuning); a decision that
    says why (or what it replaced) before one that does not."""
    entries = list(reversed(state.pools[pool]))
    if pool == "errors":
        entries.sort(key=lambda at: "resolved" in (state.entries[at[0]][at[1]] or ""))
    elif pool in ("measurements", "decisions"):  # by each entry as first given
        rank, given = remembered(_rank), state.doc.sections
        entries.sort(key=lambda at: rank(pool, given[at[0]][at[1]]))
    return entries


def _rank(pool: str, entry: str) -> tuple[bool, int]:
    """The sort key of a measurements or decisions entry (lowest first): a measurement's
    whether it holds a test run's counts, then its runs, most first; a decision's whether it
    gives no reason ("Decisions and why": one that gives its reason first)."""
    if pool == "measurements":
        return bool(_TEST_COUNTS.search(entry.partition(" — ")[0])), -runs(strip_refs(entry))[1]
    return not _WHY.search(entry), 0


def _quotas(
    state: TrimState,
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
    spent = sum(state.sizes[p] for p in pools)  # (``queues``: every entry of the pools)
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


def fit_keeping(
    doc: Doc,
    cap_tokens: int,
    counter: TokenCounter,
    headings: Mapping[str, str],
    label: tuple[str, frozenset[str]],
    *,
    keep: frozenset[str] = frozenset(),
    measure: Callable[[Doc], int] | None = None,
) -> tuple[Doc, bool]:
    """``doc`` within ``cap_tokens`` of rendered text (see the module docstring); ``doc`` itself
    when it fits already. When even the title does not fit, every entry is dropped but those
    of the pools in ``keep`` (the result is then over the cap). ``headings`` maps section keys
    to their rendered headings; ``label`` is the quoted-data line and the sections whose
    entries make it appear. ``measure(d)`` is ``text_tokens(d.render(), counter)`` (a caller
    that sizes documents incrementally passes its own: the same counts, without rendering and
    splitting the whole text on every check).

    Also returned: whether the trim without ``keep`` returns the same document (``True``
    without ``keep``). It does when the text fit before the steps ran out and every quota
    read gave the answer the quotas without ``keep`` give (``_Keeping``): every step up to
    there is the same, and so is every check of the text against the cap.
    ``DigestCompressor._fit`` trims without the user's words kept when the summary kept with
    them is over its own ceiling: then it need not trim again
    (tests/compressors/test_trim_keep_free.py)."""
    if measure is None:
        measure = functools.partial(_rendered_tokens, counter=counter)
    tokens = measure(doc)
    if tokens <= cap_tokens:  # mostly counted while it grew
        return doc, True
    state = _rewritten(doc, cap_tokens, counter, headings, label)
    if state is None:
        state = TrimState(doc, counter, headings, label, tokens)
    keeping = _Keeping()
    steps = _steps(state, cap_tokens, keep, keeping)
    budget = cap_tokens
    for _attempt in range(6):
        state.budget = budget
        for _ in steps:
            if state.total <= budget:
                break
        else:
            keeping.ran_out = True
        result: Doc = state.build()
        real = measure(result)
        if real <= cap_tokens:
            return result, not keep or keeping.alike()
        budget -= real - cap_tokens + 4  # the estimate drifted: aim lower and go on
        if state.total <= budget:
            continue
    # Out of steps (everything dropped) or the estimates never converged: drop what is left,
    # and when even the per-section counts do not fit, keep only the total in the note.
    state.budget = budget
    for _ in steps:
        pass
    result = state.build()
    if measure(result) > cap_tokens:
        result = replace(result, omitted={})  # type: ignore[type-var,unused-ignore]
    return result, not keep


# The last trim's state when its rewriting passes were done (none of its steps had paused):
# ``(doc, cap, counter, headings, state)``. ``DigestCompressor._fit`` trims the same document
# to the same cap twice (its user words kept, then not), and the passes do not depend on what
# is kept: the second trim starts where the first one's passes ended.
_REWRITTEN: list[tuple[Any, int, TokenCounter, Mapping[str, str], TrimState] | None] = [None]


def _rewritten(
    doc: TrimmedDocument,
    cap: int,
    counter: TokenCounter,
    headings: Mapping[str, str],
    label: tuple[str, frozenset[str]],
) -> TrimState | None:
    """A copy of the state ``_REWRITTEN`` holds, when it is this trim's (else ``None``)."""
    held = _REWRITTEN[0]
    if held is None or held[0] is not doc or held[1] != cap or held[2] is not counter:
        return None
    state = held[4]
    if held[3] is not headings or (state.label, state.quoting) != label:
        return None
    _REWRITTEN[0] = None  # used once (the second trim): the process holds no summary for long
    return state.copy()


def forget_rewritten() -> None:
    """Drop the state ``_REWRITTEN`` holds (a caller that will not trim the same document
    again: the process holds no summary for long)."""
    _REWRITTEN[0] = None


def _rendered_tokens(doc: TrimmedDocument, counter: TokenCounter) -> int:
    return text_tokens(doc.render(), counter)


def count_by_section(doc: TrimmedDocument) -> Mapping[str, int]:
    """Entries per section key (``values`` split into current and superseded, the user's
    later requests apart from the goal and constraints): ``pool_of`` counted entry by entry,
    but for the goal and constraints, whose later requests are counted in one pass in C (a
    long session's summary holds hundreds; tests/compressors/test_fact_report_counts.py)."""
    counts: dict[str, int] = {}
    for key, values in doc.sections.items():
        if key not in ("values", "goal", "constraints"):  # one pool: the section's own
            if values:
                counts[key] = counts.get(key, 0) + len(values)
            continue
        if key != "values":  # ``pool_of``: LATER for a later request, else the key
            later = sum(map(str.startswith, values, repeat(LATER_PREFIX)))
            for name, count in ((LATER, later), (key, len(values) - later)):
                if count:
                    counts[name] = counts.get(name, 0) + count
            continue
        for entry in values:
            name = pool_of(key, entry)
            counts[name] = counts.get(name, 0) + 1
    counts[EXTRA] = sum(len(v) for v in doc.extra.values())
    return counts
