"""A fact report counts a summary's entries per trimming pool (``_trim.count_by_section``): the
user's later requests in the goal and constraints are counted in one pass, not entry by entry;
the counts are the ones ``pool_of`` gives entry by entry, for any document."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import SummaryDocument
from compactkit.compressors._forms import EXTRA, LATER, SUPERSEDED
from compactkit.compressors._trim import count_by_section
from compactkit.compressors._trim_state import pool_of

PROPERTY = settings(deadline=None, max_examples=300)

_entries = st.lists(
    st.sampled_from(
        [
            "Later: run the tests",
            "Later:run",
            "later: lower case",
            " Later: indented",
            "Don't push",
            "`a` = 1 (current)",
            "`a` = 0 (superseded)",
            "`a` = 0 (superseded) [#3]",
            "`src/app.py` — read",
            "",
        ]
    ),
    max_size=6,
).map(tuple)


def plain_counts(doc: SummaryDocument) -> dict[str, int]:
    """``count_by_section`` as written before: ``pool_of`` per entry of the mixed sections."""
    counts: dict[str, int] = {}
    for key, values in doc.sections.items():
        if key not in ("values", "goal", "constraints"):
            if values:
                counts[key] = counts.get(key, 0) + len(values)
            continue
        for entry in values:
            name = pool_of(key, entry)
            counts[name] = counts.get(name, 0) + 1
    counts[EXTRA] = sum(len(v) for v in doc.extra.values())
    return counts


@PROPERTY
@given(
    st.dictionaries(
        st.sampled_from(["goal", "constraints", "values", "files_read", "commands"]), _entries
    ),
    st.dictionaries(st.sampled_from(["Notes", "Plan"]), _entries, max_size=2),
)
def test_counts_are_the_plain_counts(
    sections: dict[str, tuple[str, ...]], extra: dict[str, tuple[str, ...]]
) -> None:
    doc = SummaryDocument(sections=sections, extra=extra)  # type: ignore[arg-type]
    assert count_by_section(doc) == plain_counts(doc)


def test_later_requests_count_apart() -> None:
    doc = SummaryDocument(
        sections={
            "goal": ("Fix the bug",),
            "constraints": ("Later: add docs", "Never push", "Later: run tests"),
            "values": ("`a` = 1 (current)", "`a` = 0 (superseded)"),
        }
    )
    assert count_by_section(doc) == {
        "goal": 1,
        "constraints": 1,
        LATER: 2,
        "values": 1,
        SUPERSEDED: 1,
        EXTRA: 0,
    }
