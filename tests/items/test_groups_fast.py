"""``group_items`` reads each item's class by ``type`` (a dict look-up) instead of a chain of
``isinstance`` checks; ``Group`` sets its slots directly. Held here to the plain version they
replace, over arbitrary item sequences (any order, stray outputs, repeated and unanswered ids,
subclasses of the item classes, a start inside the list)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import FrozenInstanceError

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.errors import ConfigError
from compactkit.items import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ProviderCompaction,
    Reasoning,
)
from compactkit.items.groups import Group, group_items
from compactkit.items.view import ItemsView


def plain_group_items(items: Sequence[Item], start: int = 0) -> list[tuple[object, ...]]:
    """The version ``group_items`` replaced (isinstance per check), as tuples."""
    groups: list[tuple[object, ...]] = []
    i, n = start, len(items)
    while i < n:
        item = items[i]
        if isinstance(item, Message) and item.role != "assistant":
            groups.append((i, i + 1, item.role, (), ()))
            i += 1
            continue
        if isinstance(item, FunctionCallOutput):
            groups.append((i, i + 1, "orphan", (), ()))
            i += 1
            continue
        group_start = i
        calls: list[str] = []
        pending: dict[str, None] = {}
        seen_output = False
        while i < n:
            item = items[i]
            if isinstance(item, Message) and item.role != "assistant":
                break
            if isinstance(item, FunctionCallOutput):
                if item.call_id not in pending:
                    break
                del pending[item.call_id]
                seen_output = True
            else:
                if seen_output and not pending:
                    break
                if isinstance(item, FunctionCall):
                    calls.append(item.call_id)
                    pending[item.call_id] = None
                elif not isinstance(item, (Message, Reasoning, ProviderCompaction)):
                    raise ConfigError(f"not an item at {i}")
            i += 1
        groups.append((group_start, i, "assistant", tuple(calls), tuple(pending)))
    return groups


class NotedMessage(Message):
    """A subclass: its class is read by isinstance, not looked up by type."""


class NotedOutput(FunctionCallOutput):
    pass


IDS = st.sampled_from(["a", "b", "c", "d"])
ITEMS = st.one_of(
    st.builds(
        Message,
        role=st.sampled_from(["system", "developer", "user", "assistant"]),
        content=st.just("x"),
    ),
    st.builds(NotedMessage, role=st.sampled_from(["user", "assistant"]), content=st.just("y")),
    st.builds(FunctionCall, call_id=IDS, name=st.just("t"), arguments=st.just("{}")),
    st.builds(FunctionCallOutput, call_id=IDS, output=st.just("ok")),
    st.builds(NotedOutput, call_id=IDS, output=st.just("ok")),
    st.just(Reasoning(format="responses", payload={"type": "reasoning", "summary": []})),
)


def as_tuples(groups: list[Group]) -> list[tuple[object, ...]]:
    return [(g.start, g.stop, g.kind, g.call_ids, g.pending) for g in groups]


@settings(deadline=None, max_examples=300)
@given(st.lists(ITEMS, max_size=30), st.data())
def test_group_items_groups_as_the_plain_version(items: list[Item], data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(items)))
    expected = plain_group_items(items, start)
    assert as_tuples(group_items(items, start)) == expected
    assert as_tuples(group_items(ItemsView(list(items)), start)) == expected
    assert as_tuples(group_items(tuple(items), start)) == expected


@settings(deadline=None, max_examples=100)
@given(st.lists(ITEMS, max_size=12), st.integers(0, 12))
def test_a_non_item_is_refused_where_the_plain_version_refuses_it(
    items: list[Item], at: int
) -> None:
    mixed: list[object] = [*items]
    mixed.insert(min(at, len(mixed)), {"role": "user", "content": "a dict"})
    try:
        plain_group_items(mixed)  # type: ignore[arg-type]
    except ConfigError:
        with pytest.raises(ConfigError, match="convert provider messages first"):
            group_items(mixed)  # type: ignore[arg-type]
    else:  # (the plain version never reads past nothing: it always reaches the dict)
        raise AssertionError("a dict was grouped")


def test_a_group_is_a_frozen_value() -> None:
    group = Group(1, 3, "assistant", ("a",), ())
    assert group == Group(1, 3, "assistant", ("a",))
    assert hash(group) == hash(Group(1, 3, "assistant", ("a",), ()))
    assert group != Group(1, 3, "assistant", ("a",), ("a",))
    assert (len(group), group.kind, group.pending) == (2, "assistant", ())
    assert repr(Group(0, 1, "user")) == (
        "Group(start=0, stop=1, kind='user', call_ids=(), pending=())"
    )
    with pytest.raises(FrozenInstanceError):
        group.start = 0  # type: ignore[misc]
