"""A commands section merged on from what the merges before left (``_entries.Commands``, which
``Merging`` keeps open between merges) is what ``merge_commands`` returns merging the whole
section again: as long as every entry it rendered reads back as its own command (``exact``);
else ``Merging`` starts again from the section's entries."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors._entries import (
    MAX_EARLIER,
    MAX_EARLIER_MEASURED,
    Commands,
    _with_earlier,
    fold,
    key_of,
    merge_commands,
    runs,
)
from compactkit.compressors._refs import Spans, merge_spans, split_refs, with_refs


def plain_merge(existing: list[str], new: list[str], *, earlier: int = MAX_EARLIER) -> list[str]:
    """``merge_commands`` as written before ``Commands`` (the oracle)."""
    entries: dict[str, tuple[str, int, Spans]] = {}
    for entry in [*existing, *new]:
        plain, refs = split_refs(entry)
        text, n = runs(plain)
        key = key_of(text) or fold(text)
        if key in entries:
            old_text, old_n, old_refs = entries.pop(key)
            entries[key] = (
                _with_earlier(text, old_text, earlier),
                old_n + n,
                merge_spans(old_refs, refs),
            )
        else:
            entries[key] = (text, n, refs)
    return [
        with_refs(f"{text} (\N{MULTIPLICATION SIGN}{n})" if n > 1 else text, refs)
        for text, n, refs in entries.values()
    ]


_command = st.sampled_from(["`ls`", "`LS`", "`pytest -x`", "make", "Make ", "`a` `b`", "x"])
_outcome = st.sampled_from(["", " → exit 0", " → exit 1", " → `2 failed`", " → `1 ms` (x2)"])
_earlier = st.sampled_from(["", " — earlier: exit 1", " — earlier: `3 failed` | exit 2"])
_runs = st.sampled_from(["", *(f" (\N{MULTIPLICATION SIGN}{n})" for n in (0, 1, 2, 5))])
_refs = st.sampled_from(["", " [#3]", " [#4\u20136]", " [#1, #9]"])
_entry = st.tuples(_command, _outcome, _earlier, _runs, _runs, _refs).map("".join)
_turns = st.lists(st.lists(_entry, max_size=6), max_size=6)


@settings(deadline=None, max_examples=500)
@given(st.lists(_entry, max_size=8), _turns, st.sampled_from([MAX_EARLIER, MAX_EARLIER_MEASURED]))
def test_merging_on_is_merging_the_whole_section_again(
    start: list[str], turns: list[list[str]], earlier: int
) -> None:
    held = list(start)
    commands = Commands(earlier)
    commands.add(held)
    for new in turns:
        plain = plain_merge(held, new, earlier=earlier)
        commands.add(new)
        assert commands.render() == plain
        held = plain
        if not commands.exact:  # what Merging does then: start again from the entries
            commands = Commands(earlier)
            commands.add(held)


@settings(deadline=None, max_examples=200)
@given(st.lists(_entry, max_size=8), st.lists(_entry, max_size=8))
def test_merge_commands_is_one_turn_of_all_entries(existing: list[str], new: list[str]) -> None:
    assert merge_commands(existing, new) == plain_merge(existing, new)
