"""``group_slice(items[k:], k)`` is ``group_items(items, k)``: the cache-aware extension groups
the new items of a call from the slice it already holds (call19), with the same groups, kinds,
call ids, pending calls and absolute indices."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.groups import Group, group_items, group_slice

KIND = st.sampled_from(["user", "assistant", "call", "output", "stray"])


def build(kinds: list[str]) -> list[Item]:
    items: list[Item] = []
    calls = 0
    for number, kind in enumerate(kinds):
        if kind == "user":
            items.append(Message(role="user", content=f"u{number}"))
        elif kind == "assistant":
            items.append(Message(role="assistant", content=f"a{number}"))
        elif kind == "call":
            calls += 1
            items.append(FunctionCall(call_id=f"c{calls}", name="f"))
        elif kind == "output":
            items.append(FunctionCallOutput(call_id=f"c{calls}", output=f"o{number}"))
        else:
            items.append(FunctionCallOutput(call_id=f"x{number}", output="stray"))
    return items


@settings(deadline=None, max_examples=80)
@given(st.lists(KIND, max_size=30), st.integers(0, 35))
@example(["user", "call", "output", "call"], 2)  # a cut inside a response
@example(["call", "output", "user"], 3)  # nothing after the cut
@example([], 0)
def test_group_slice_is_group_items_from_the_offset(kinds: list[str], start: int) -> None:
    items = build(kinds)
    start = min(start, len(items))
    expected = group_items(items, start)
    shifted = [  # the slice grouped on its own, every index moved by the offset
        Group(g.start + start, g.stop + start, g.kind, g.call_ids, g.pending)
        for g in group_items(items[start:])
    ]
    assert expected == shifted
    assert group_slice(items[start:], start) == expected
    assert group_slice(tuple(items[start:]), start) == expected
