"""A fact repeated item after item (an identifier in every output, a file edited again and
again) is merged into its keyed entry by adding to the last detail's count, the entry it
repeats not read again (``_entries.merge_keyed_into``): the section is exactly what merging
each entry in turn, read back, writes."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from merge_oracle import merge_keyed_reference

from compactkit.compressors import _entries

ENTRIES = [
    "`a` — b",
    "`a` — B",
    "`a` — b \u00d72",
    "`a` — c",
    "`a` — b [#3]",
    "`a` — b; c",
    "`a`",
    "`z` — b",
    "`a` — 1 earlier omitted",
]


@settings(deadline=None, max_examples=800)
@given(
    st.lists(
        st.tuples(st.sampled_from(ENTRIES), st.integers(min_value=1, max_value=4)),
        max_size=12,
    ).map(lambda runs: [entry for entry, times in runs for _ in range(times)])
)
# the same entry again and again, adding one or two each time
@example(["`a` — b"] * 6)
@example(["`a` — b \u00d72"] * 5)
# another entry counting the same detail again, adding another count (read, not repeated)
@example(["`a` — b", "`a` — b", "`a` — b", "`a` — b \u00d73", "`a` — b \u00d73"])
@example(["`a` — b", "`a` — b", "`a` — b", "`a` — B", "`a` — b", "`a` — b"])
# another key, another detail, references and an omission note between the repeats
@example(["`a` — b", "`z` — b", "`a` — b", "`z` — b", "`a` — b", "`a` — b", "`z` — b"])
@example(["`a` — b", "`a` — b", "`a` — b", "`a` — c", "`a` — b", "`a` — b", "`a` — b"])
@example(["`a` — b", "`a` — b", "`a` — b", "`a` — b [#3]", "`a` — b", "`a` — b", "`a` — b"])
@example(["`a` — b"] * 3 + ["`a` — 1 earlier omitted"] + ["`a` — b"] * 3)
def test_repeated_entries_merge_as_merging_each_one(new: list[str]) -> None:
    fast: dict[str, str] = {}
    _entries.merge_keyed_into(fast, new)
    slow: dict[str, str] = {}
    merge_keyed_reference(slow, new)
    assert list(fast.items()) == list(slow.items())


def test_a_file_edited_ten_times_says_so() -> None:
    fast: dict[str, str] = {}
    _entries.merge_keyed_into(fast, ["`src/app.py` — edited"] * 10)
    assert fast == {"src/app.py": "`src/app.py` — edited \u00d710"}
