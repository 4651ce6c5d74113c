"""A compaction's result finds what was folded with loops in C: the same items, in the same
order, and the same count of outputs replaced in place as the comprehensions first written; an
output's error lines, remembered, are those its scan finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _facts as facts
from compactkit.compressors._plan import folded_items
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

PROPERTY = settings(deadline=None, max_examples=300)


def _folded_reference(before: list[Item], after: list[Item]) -> tuple[list[Item], int]:
    """``folded_items`` as first written."""
    present = {id(item) for item in after}
    answered = {i.call_id for i in after if isinstance(i, FunctionCallOutput)}
    folded = [item for item in before if id(item) not in present]
    replaced = sum(1 for i in folded if isinstance(i, FunctionCallOutput) and i.call_id in answered)
    return folded, replaced


def _item(kind: int, call: int) -> Item:
    if kind == 0:
        return Message(role="user", content=f"m{call}")
    if kind == 1:
        return FunctionCall(call_id=f"c{call}", name="read", arguments="{}")
    return FunctionCallOutput(call_id=f"c{call}", output=f"out {call}")


_ITEMS = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5)), max_size=12)


@PROPERTY
@given(_ITEMS, st.lists(st.integers(0, 11), max_size=12), _ITEMS)
def test_folded_items_match_the_comprehensions(
    specs: list[tuple[int, int]], kept: list[int], added: list[tuple[int, int]]
) -> None:
    before = [_item(kind, call) for kind, call in specs]
    before += before[: len(before) // 3]  # the same object twice
    after = [before[k] for k in kept if k < len(before)]
    after += [_item(kind, call) for kind, call in added]  # placeholders: new objects
    assert folded_items(before, after) == _folded_reference(before, after)
    folded, _replaced = folded_items(before, after)
    assert all(a is b for a, b in zip(folded, _folded_reference(before, after)[0], strict=True))


@PROPERTY
@given(
    st.lists(
        st.sampled_from(["x", "Error: bad", "\n", "a.py:3:1: E501 long", "FAILED t", " ok "]),
        max_size=8,
    ).map("".join)
)
def test_remembered_error_lines_are_the_scan_of_the_text(text: str) -> None:
    reference = (
        facts._scan_errors(text)
        if facts._ERROR_HINT.search(text) or facts._LINT_HINT.search(text)
        else []
    )
    first = facts.error_lines(text)
    first.append("changed by a caller")  # each caller gets its own list
    assert facts.error_lines(text) == reference
