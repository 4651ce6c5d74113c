"""What a saved state writes as ``history`` (and a window patch as the archive): the history
items the active items do not hold. ``sessions.session.outside_active`` skips an item's
``__eq__`` where no active item has its seq or the active one is the very same object; it is
held here to the plain ``{seq: item}.get(item.seq) != item`` for any history and active list."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.sessions.journal import _extra
from compactkit.sessions.session import outside_active


def _item(kind: int, seq: int | None, text: str) -> Item:
    if kind == 0:
        return Message(role="user", content=text, seq=seq)
    if kind == 1:
        return FunctionCall(call_id=f"c{seq}", name="read", arguments="{}", seq=seq)
    return FunctionCallOutput(call_id=f"c{seq}", output=text, seq=seq)


ITEMS = st.builds(
    _item, st.integers(0, 2), st.one_of(st.none(), st.integers(1, 12)), st.sampled_from("abc")
)
# How each active item is made from a history item: the same object, an equal copy, a
# different item at the same seq; plus active items of seqs the history does not hold.
HOW = st.sampled_from(["same", "copy", "other"])


@settings(deadline=None)
@given(
    history=st.lists(ITEMS, max_size=20),
    picks=st.lists(st.tuples(st.integers(0, 19), HOW), max_size=20),
    strangers=st.lists(ITEMS, max_size=4),
)
def test_outside_active_is_the_plain_comparison(
    history: list[Item], picks: list[tuple[int, str]], strangers: list[Item]
) -> None:
    active: list[Item] = list(strangers)
    for index, how in picks:
        if not history:
            break
        item = history[index % len(history)]
        if how == "same":
            active.append(item)
        elif how == "copy":
            active.append(item.model_copy())
        else:
            active.append(_item(index % 3, item.seq, "z"))  # never equal: no history text is "z"
    by_seq = {item.seq: item for item in active}
    plain = [item for item in history if by_seq.get(item.seq) != item]
    found = list(outside_active(active, history))
    assert len(found) == len(plain)
    assert all(a is b for a, b in zip(found, plain, strict=True))
    assert _extra(active, history) == {item.seq or 0: item for item in plain}
