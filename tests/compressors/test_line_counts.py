"""An entry's trim cost and its rendered line's count are derived from each other when one is
known (``_trim_costs.from_line``/``to_line``): a line break appended to a text changes only the
piece it joins (``line_break_joins``), so the derived counts are the encoded ones; and the
sizer and trimming, sharing them, count what they counted before."""

from __future__ import annotations

from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.budget import LINE_ADDITIVE, TiktokenCounter
from compactkit.compressors import SummaryDocument, _trim_costs
from compactkit.compressors._forms import bullet
from compactkit.compressors._trim_costs import (
    EntryCosts,
    cut_apart,
    entry_cost,
    from_line,
    line_break_joins,
    to_line,
)
from compactkit.compressors.digest import _sizer
from compactkit.compressors.digest._sizer import SummarySizer

PROPERTY = settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
COUNTERS = [TiktokenCounter(name) for name in sorted(LINE_ADDITIVE)]

# Texts whose ends try the split patterns: ASCII punctuation runs after letters, digits, spaces,
# tabs, line breaks, non-ASCII letters, marks, symbols and punctuation; contractions.
_piece = st.sampled_from(
    [
        *("a", "Z", "7", "123", "x1", " ", "  ", "\t", "\n", "\n  ", "é", "\u0301", "ß", "Ⅻ"),
        *("`", "``", ")", ".", "…", "—", "\u00d7", "→", "'", "'s", "'t", "/", "//", "-", "_", "•"),
        *(" `", "`)", ").", "?!", "\"'", "(x3)", "[#3]", "=", "\u00a0", "😀", "¹", "٣"),
    ]
)
_text = st.lists(_piece | st.text(max_size=4), min_size=1, max_size=12).map("".join)


@PROPERTY
@given(_text)
def test_a_line_break_changes_only_the_piece_it_joins(text: str) -> None:
    tail = line_break_joins(text)
    if tail is None:
        return
    assert text.endswith(tail)
    for counter in COUNTERS:
        count = counter.count_text
        assert count(text + "\n") - count(text) == count(tail + "\n") - count(tail)


@PROPERTY
@given(_text)
def test_a_cost_and_a_line_count_derive_from_each_other(entry: str) -> None:
    for counter in COUNTERS:
        line = counter.count_text(bullet(entry) + "\n")
        cost = entry_cost(counter, entry)
        assert from_line(counter, entry, line) in (cost, None)
        assert to_line(counter, entry, cost) in (line, None)
        assert (from_line(counter, entry, line) is None) == (to_line(counter, entry, cost) is None)


def test_most_entries_of_an_agent_session_are_derived() -> None:
    entries = [
        "`cd /testbed && python -m pytest tests/test_x.py -x` → exit 1; `2 failed` (\u00d74)",
        "`./astropy/modeling/separable.py` — read (cat); edited (sed -i) \u00d73; read (grep)",
        "`ValueError: bad value` — resolved",
        "Let me run the tests again.",
        "`sed -n '1,80p' ./astropy/modeling/separable.py | grep -n \"def _cstack\" …`",
        "`TypeError: unsupported operand type(s) for +: 'int' and …` — open",
        "Reading the module: `_separable` calls `_coord_matrix` …",
    ]
    counter = COUNTERS[0]
    for entry in entries:
        assert line_break_joins(bullet(entry)) is not None
        assert from_line(counter, entry, counter.count_text(bullet(entry) + "\n")) == entry_cost(
            counter, entry
        )


_entries = st.lists(_text.map(str.strip).filter(bool), min_size=1, max_size=12)


@PROPERTY
@given(_entries, _entries)
def test_sizer_and_trim_share_their_counts_and_count_as_before(
    first: list[str], second: list[str]
) -> None:
    """A trim costing entries the sizer counted, then a sizer counting entries a trim costed
    (each reading the other's), get the plain counts."""
    counter = COUNTERS[-1]
    with (
        mock.patch.dict(_trim_costs.LINE_COUNTS, clear=True),
        mock.patch.dict(_trim_costs._COSTS, clear=True),
    ):
        doc = SummaryDocument(sections={"decisions": tuple(first)})
        assert SummarySizer(counter)(doc) == counter.count_text(doc.render())
        costs = EntryCosts(counter)
        assert costs.many(first) == [entry_cost(counter, e) for e in first]
        assert [costs(e) for e in second] == [entry_cost(counter, e) for e in second]
        again = SummaryDocument(sections={"errors": tuple(second), "decisions": tuple(first)})
        assert SummarySizer(counter)(again) == counter.count_text(again.render())
        assert _sizer._BULLET_COUNTS is _trim_costs.LINE_COUNTS


@PROPERTY
@given(_text, _text, st.sampled_from(["", " ", " — read (cat)", " → exit 0", " (\u00d73)", " —"]))
def test_an_entry_cut_short_costs_the_entry_less_what_was_cut(
    form: str, more: str, detail: str
) -> None:
    """A rewritten form that is its entry cut short before a space (a bare fact without its
    detail) is costed from the entry's cost and the rest's tokens: the encoded cost, whenever
    ``cut_apart`` says the cut is sure."""
    for entry in (form + detail, form + detail + more, form + more):
        rest = cut_apart(form, entry)
        if rest is None:
            continue
        assert form + rest == entry
        for counter in COUNTERS:
            assert entry_cost(counter, entry) - counter.count_text(rest) == entry_cost(
                counter, form
            )
            with mock.patch.dict(_trim_costs._COSTS, clear=True):
                costs = EntryCosts(counter)
                assert costs.cut(form, entry, costs(entry)) == entry_cost(counter, form)


def test_a_bare_fact_is_costed_from_its_entry() -> None:
    counter = COUNTERS[0]
    for form, entry in [
        ("`./astropy/modeling/separable.py`", "`./astropy/modeling/separable.py` — read (cat)"),
        ("`python -m pytest -x`", "`python -m pytest -x` → exit 1; `2 failed` (\u00d74)"),
        ("edited", "edited \u00d73"),
    ]:
        assert cut_apart(form, entry) == entry[len(form) :]
        with (
            mock.patch.dict(_trim_costs._COSTS, clear=True),
            mock.patch.object(_trim_costs, "entry_cost", side_effect=AssertionError),
        ):
            assert EntryCosts(counter).cut(form, entry, 40) == 40 - counter.count_text(
                entry[len(form) :]
            )
    assert cut_apart("`a` ", "`a`  — read") is None  # (the form ends with a space)
    assert cut_apart("`a`", "`a`\n — read") is None  # (no space after the form)
    assert cut_apart("`a`", "`a` — read\nmore") is None  # (a line break after it)
