"""A fact repeated item after item (an identifier in every output, a file edited again and
again) is merged into its keyed entry by adding to the last detail's count, the entry it
repeats not read again (``_entries.merge_keyed_into``): the section is exactly what merging
each entry in turn, read back, writes."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit.compressors import _entries
from compactkit.compressors._refs import merge_spans, split_refs, with_refs


def _merged_one_by_one(new: list[str]) -> dict[str, str]:
    """Every entry read back and merged (``merge_keyed_into`` as first written)."""
    entries: dict[str, str] = {}
    for entry in new:
        key = _entries.entry_key(entry)
        old = entries.get(key)
        if old is None:
            entries[key] = entry
            continue
        old_text, old_refs = split_refs(old)
        new_text, new_refs = split_refs(entry)
        head, details = _entries.split_details(old_text)
        _, more = _entries.split_details(new_text)
        details, changed = _entries.add_details(details, more)
        refs = merge_spans(old_refs, new_refs) if new_refs else old_refs
        if changed:
            del entries[key]
            entries[key] = with_refs(_entries.join_details(head, details), refs)
        elif refs != old_refs:
            entries[key] = with_refs(old_text, refs)
    return entries


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
    assert list(fast.items()) == list(_merged_one_by_one(new).items())


def test_a_file_edited_ten_times_says_so() -> None:
    fast: dict[str, str] = {}
    _entries.merge_keyed_into(fast, ["`src/app.py` — edited"] * 10)
    assert fast == {"src/app.py": "`src/app.py` — edited \u00d710"}
