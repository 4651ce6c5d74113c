"""A trim's rewriting passes find what they change section by section: a pool made of whole
sections is looked up in C and only the entries a pass changes are walked (``_trim._changes``).
What they find, and in what order, is what walking every entry of every pool finds; and a
pool's whole sections (``TrimState.runs``) are its entries, in order. The entries of a section
split between pools (``MIXED``) are sorted into them in C, as one by one."""

from __future__ import annotations

from itertools import chain

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.budget import TiktokenCounter
from compactkit.compressors import SummaryDocument
from compactkit.compressors._forms import EXTRA
from compactkit.compressors._summary_format import HEADINGS, QUOTED_NOTE, QUOTING
from compactkit.compressors._trim import TIERS, _changes
from compactkit.compressors._trim_costs import form_changes
from compactkit.compressors._trim_state import MIXED, TrimState, pool_of

COUNTER = TiktokenCounter("o200k_base")
PROPERTY = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
KEYS = ["goal", "constraints", "decisions", "files_read", "commands", "errors", "values"]

_entry = st.sampled_from(
    [
        "`src/a.py` — read (cat); read (grep) [#3]",
        "`src/a.py`",
        "`pytest -x` → exit 1; `2 failed` (\N{MULTIPLICATION SIGN}3) [#4\u20136]",
        "`a` = 1 (superseded)",
        "`a` = 2 (current) [#9]",
        "Later: also log it [#2]",
        "Don't push to main.",
        "Use plan B because it is faster than plan A and the other plans, by far [#7]",
        "a line\nand its continuation",
        "short",
        "A note long enough that every form clips it: " + "words of a long unknown section " * 6,
    ]
) | st.text(min_size=1, max_size=12)


@st.composite
def documents(draw: st.DrawFn) -> SummaryDocument:
    """Sections of repeated and new entries, MIXED ones among them, and unknown headings (one
    pool of several sections)."""
    entries = st.lists(_entry, max_size=12).map(tuple)
    sections = draw(st.fixed_dictionaries({}, optional=dict.fromkeys(KEYS, entries)))
    extra = draw(st.dictionaries(st.sampled_from(["Notes", "Plan", "Risks"]), entries))
    return SummaryDocument(sections=sections, extra=extra)


def _plain(state: TrimState) -> list[tuple[str, int, tuple[tuple[int, str], ...]]]:
    """Every entry of every pool walked, its changes computed anew."""
    found = []
    for tier in TIERS:
        for pool in tier:
            for section, index in state.pools.get(pool, ()):
                changes = form_changes(pool, state.entries[section][index])  # type: ignore[arg-type]
                if changes:
                    found.append((section, index, changes))
    return found


@PROPERTY
@given(documents(), st.booleans())
def test_the_changes_found_by_section_are_those_of_every_entry_walked(
    doc: SummaryDocument, warm: bool
) -> None:
    state = TrimState(doc, COUNTER, HEADINGS, (QUOTED_NOTE, QUOTING), 100)
    tiers = [[p for p in tier if p in state.pools] for tier in TIERS]
    if warm:  # the entries' changes remembered already (the next compaction's trim)
        list(_changes(state, tiers))
    assert list(_changes(state, tiers)) == _plain(state)


@PROPERTY
@given(documents())
def test_a_pool_of_whole_sections_is_their_entries_in_order(doc: SummaryDocument) -> None:
    state = TrimState(doc, COUNTER, HEADINGS, (QUOTED_NOTE, QUOTING), 100)
    for pool, sections in state.runs.items():
        if sections is not None:
            whole = chain.from_iterable(
                ((section, i) for i in range(len(state.entries[section]))) for section in sections
            )
            assert state.pools[pool] == list(whole)


def _plain_pools(doc: SummaryDocument) -> tuple[dict[str, list[tuple[str, int]]], dict[str, str]]:
    """Every entry's pool, entry by entry (``pool_of``): the pools' positions, and each
    entry's pool by position."""
    pools: dict[str, list[tuple[str, int]]] = {}
    of: dict[str, str] = {}
    for key, values in doc.sections.items():
        for index, entry in enumerate(values):
            name = pool_of(key, entry) if key in MIXED else key
            pools.setdefault(name, []).append((key, index))
            of[f"{key} {index}"] = name
    for heading, values in doc.extra.items():
        if not values:
            continue
        pools.setdefault(EXTRA, []).extend((f"extra:{heading}", i) for i in range(len(values)))
        of.update((f"extra:{heading} {i}", EXTRA) for i in range(len(values)))
    return pools, of


@PROPERTY
@given(documents())
def test_entries_go_to_the_pools_they_go_to_one_by_one(doc: SummaryDocument) -> None:
    """A MIXED section's entries are sorted into pools in C (``TrimState._add_mixed``): the
    same pools, in the same order, of the same sizes, and each entry's pool the same."""
    state = TrimState(doc, COUNTER, HEADINGS, (QUOTED_NOTE, QUOTING), 100)
    pools, of = _plain_pools(doc)
    assert list(state.pools.items()) == list(pools.items())
    for name, positions in pools.items():
        assert state.sizes[name] == sum(state.costs[s][i] for s, i in positions)
    assert {f"{s} {i}": state.pool(s, i) for p in pools.values() for s, i in p} == of
