"""Merging references: entries without any (a plain list's mirror writes none) take a short
path, which returns what the full merge returns."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors._refs import MAX_RANGES, merge_spans

SPAN = st.tuples(st.integers(-2, 40), st.integers(-2, 40))
GROUPS = st.lists(st.one_of(st.just(()), st.lists(SPAN, max_size=6).map(tuple)), max_size=4)


def merged_in_full(*groups: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """``merge_spans`` as written before the short path."""
    spans = sorted({(min(a, b), max(a, b)) for group in groups for a, b in group if min(a, b) >= 1})
    merged: list[tuple[int, int]] = []
    for first, last in spans:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
        else:
            merged.append((first, last))
    while len(merged) > MAX_RANGES:
        gap = min(range(len(merged) - 1), key=lambda i: merged[i + 1][0] - merged[i][1])
        merged[gap : gap + 2] = [(merged[gap][0], merged[gap + 1][1])]
    return tuple(merged)


@settings(deadline=None, max_examples=500)
@given(groups=GROUPS)
def test_merging_with_or_without_references_is_the_full_merge(
    groups: list[tuple[tuple[int, int], ...]],
) -> None:
    assert merge_spans(*groups) == merged_in_full(*groups)
    # other iterables (a generator, a list) are read in full
    assert merge_spans(*(list(g) for g in groups)) == merged_in_full(*groups)
    assert merge_spans(s for g in groups for s in g) == merged_in_full(*groups)


def test_no_references_at_all() -> None:
    assert merge_spans() == ()
    assert merge_spans((), ()) == ()
    assert merge_spans(iter(())) == ()
