"""A summary merged into part after part by ``Merging`` is the document the plain merges
return, section order and rendering included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors.digest._merging import Merging
from compactkit.compressors.sections import SECTIONS, SummaryDocument

ENTRIES = [
    "`a.py` — read",
    "`a.py` — edited `x` → `y`",
    "`A.py` — read lines 1-2",
    "`b.py` — read; read \N{MULTIPLICATION SIGN}2",
    "`b.py` — deleted",
    "`c.py`",
    "`c.py` — 3 earlier omitted; read",
    "`ls -la` → exit 0",
    "`ls -la` → exit 1 (\N{MULTIPLICATION SIGN}2)",
    "`pytest` → `2 failed`",
    "`pytest` → `1 failed` — earlier: `2 failed` | exit 2 [#4]",
    "`pytest` → exit 0 (\N{MULTIPLICATION SIGN}3) [#5\u20136]",
    "`ls -la` (\N{MULTIPLICATION SIGN}2) → exit 0 (\N{MULTIPLICATION SIGN}2)",
    "make → exit 2 [#7]",
    "make [#7] (\N{MULTIPLICATION SIGN}1)",  # reads back otherwise once rendered
    "`ls -la` → exit 0 (\N{MULTIPLICATION SIGN}0)",
    "Make  → exit 2",
    "`retries` = 3 (current)",
    "`retries` = 5",
    "`retries` = 2 (superseded)",
    "`https://x.io` — url",
    "Don't change the API.",
    "don't  change the api.",
    "Later: next",
    "plain — detail",
    "Plain — other",
    "line one\n  line two",
    "  \n",
    "",
]
SECTION_KEYS = st.sampled_from([spec.key for spec in SECTIONS])
RAW = st.builds(
    SummaryDocument,
    sections=st.dictionaries(
        SECTION_KEYS, st.lists(st.sampled_from(ENTRIES), max_size=5).map(tuple)
    ),
    extra=st.dictionaries(
        st.sampled_from(["Notes", "Other"]),
        st.lists(st.sampled_from(ENTRIES), max_size=3).map(tuple),
        max_size=2,
    ),
    trimmed=st.integers(0, 2),
    omitted=st.dictionaries(st.sampled_from(["files_read", "Other"]), st.integers(0, 2)),
)


@settings(deadline=None, max_examples=500)
@given(RAW, st.booleans(), st.lists(st.tuples(RAW, st.booleans()), max_size=5))
def test_merging_part_after_part_is_the_plain_merges(
    start: SummaryDocument, merged_first: bool, parts: list[tuple[SummaryDocument, bool]]
) -> None:
    doc = SummaryDocument().merge(start) if merged_first else start
    merging = Merging(doc)
    assert merging.document() == doc
    for raw, merged in parts:
        part = SummaryDocument().merge(raw) if merged else raw
        doc = doc.merge(part)
        merging.merge(part)
        got = merging.document()
        assert got == doc
        assert (list(got.sections), list(got.extra), list(got.omitted)) == (
            list(doc.sections),
            list(doc.extra),
            list(doc.omitted),
        )
        assert got.render() == doc.render()


@settings(deadline=None, max_examples=300)
@given(RAW, st.lists(st.lists(RAW, max_size=3), min_size=1, max_size=5))
def test_compaction_after_compaction_merges_as_the_plain_merges(
    start: SummaryDocument, compactions: list[list[SummaryDocument]]
) -> None:
    """Each compaction merges into the summary the one before wrote (an appended section's
    folds read on from the ones read last, ``_merging.folds_of``), or into another summary."""
    doc = SummaryDocument().merge(start)
    for parts in compactions:
        merging = Merging(doc)
        for raw in parts:
            part = SummaryDocument().merge(raw)
            doc = doc.merge(part)
            merging.merge(part)
            assert merging.document() == doc
        doc = merging.document()
        if not parts:  # another summary in between (a session of its own)
            doc = SummaryDocument().merge(start)
