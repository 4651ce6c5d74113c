"""``ItemsView``: a memory's snapshot items, read in O(1), behave like the tuple they stand for."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import (
    CompactResult,
    FunctionCall,
    FunctionCallOutput,
    InMemoryMemory,
    MemorySnapshot,
    Message,
)
from compactkit.items import CompactStats, ItemsChain, ItemsView
from compactkit.items.groups import group_items


def _items(n: int) -> list[Message]:
    return [Message(role="user" if k % 2 == 0 else "assistant", content=f"m{k}") for k in range(n)]


def test_a_view_is_the_tuple_it_stands_for() -> None:
    source = _items(6)
    view = ItemsView(source, 4)
    expected = tuple(source[:4])
    source.append(Message(role="user", content="appended later"))  # the owner only appends

    assert len(view) == 4
    assert tuple(view) == expected and list(view) == list(expected)
    assert view == expected and expected == view
    assert not view != expected  # noqa: SIM202 - the != operator is what is tested
    assert hash(view) == hash(expected)
    assert view[0] is source[0] and view[-1] is source[3]
    assert list(reversed(view)) == list(reversed(expected))
    assert source[2] in view and source[4] not in view
    assert view.index(source[1]) == 1 and view.count(source[1]) == 1
    assert view + (source[5],) == (*expected, source[5])  # noqa: RUF005 - tests +
    assert (source[5],) + view == (source[5], *expected)  # noqa: RUF005 - tests +
    assert repr(view) == repr(expected)
    assert view != list(expected)  # like a tuple: never equal to a list
    with pytest.raises(IndexError):
        view[4]
    with pytest.raises(IndexError):
        view[-5]


@settings(deadline=None, max_examples=200)
@given(
    n=st.integers(0, 12),
    start=st.none() | st.integers(-15, 15),
    stop=st.none() | st.integers(-15, 15),
    step=st.none() | st.integers(-4, 4).filter(lambda k: k != 0),
)
def test_slices_agree_with_tuple_slices(
    n: int, start: int | None, stop: int | None, step: int | None
) -> None:
    source = _items(n + 3)
    view, expected = ItemsView(source, n), tuple(source[:n])
    got = view[start:stop:step]
    assert type(got) is tuple
    assert got == expected[start:stop:step]


def test_views_copy_and_pickle_as_tuples() -> None:
    source = _items(3)
    view = ItemsView(source)
    for copied in (pickle.loads(pickle.dumps(view)), copy.deepcopy(view), copy.copy(view)):
        assert copied == tuple(source)
        assert type(copied) is tuple


def test_a_snapshot_of_a_view_serialises_and_compares_like_one_of_a_tuple() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("hello")
    memory.add_output_items([Message(role="assistant", content="hi")])
    snapshot = memory.snapshot()
    assert isinstance(snapshot.items, ItemsView)
    plain = MemorySnapshot(
        summary=snapshot.summary, items=tuple(snapshot.items), version=snapshot.version
    )

    assert snapshot.model_dump() == plain.model_dump()
    assert json.loads(snapshot.model_dump_json()) == json.loads(plain.model_dump_json())
    assert snapshot == plain and hash(snapshot) == hash(plain)
    assert MemorySnapshot.model_validate_json(snapshot.model_dump_json()) == plain
    rebuilt = MemorySnapshot(items=snapshot.items)  # validating a view keeps the items
    assert rebuilt.items == snapshot.items


def test_items_given_as_a_list_are_frozen_into_a_tuple() -> None:
    items = _items(2)
    snapshot = MemorySnapshot(items=items)
    items.append(Message(role="user", content="later"))
    assert type(snapshot.items) is tuple and len(snapshot.items) == 2


_ops = st.lists(
    st.sampled_from(["append", "tool", "pin", "unpin", "compact", "clear", "restore"]),
    min_size=1,
    max_size=25,
)


@settings(deadline=None, max_examples=120)
@given(ops=_ops)
def test_a_snapshot_never_changes_after_it_was_read(ops: list[str]) -> None:
    """Whatever the memory does after a read (appends, pins, compactions, clears, restores),
    every snapshot read earlier still holds exactly the items it had."""
    memory = InMemoryMemory()
    memory.add_user_input("start")
    reads: list[tuple[MemorySnapshot, tuple[object, ...]]] = []
    for step, op in enumerate(ops):
        snapshot = memory.snapshot()
        reads.append((snapshot, tuple(snapshot.items)))
        active = snapshot.items
        if op == "append":
            memory.add_user_input(f"input {step}")
        elif op == "tool":
            call_id = f"call_{step}"
            memory.add_output_items(
                [
                    FunctionCall(call_id=call_id, name="read", arguments="{}"),
                    FunctionCallOutput(call_id=call_id, output=f"out {step}"),
                ]
            )
        elif op in ("pin", "unpin") and active:
            seq = active[step % len(active)].seq
            assert seq is not None
            (memory.pin if op == "pin" else memory.unpin)(seq)
        elif op == "compact" and len(active) > 1:
            # whole groups (a call with its output): the ones holding a pin, and the newest
            groups = group_items(active)
            keep = [
                item
                for number, group in enumerate(groups)
                if number == len(groups) - 1 or any(i.pinned for i in group.slice(active))
                for item in group.slice(active)
            ]
            kept = MemorySnapshot(
                summary=f"summary {step}", items=tuple(keep), version=snapshot.version
            )
            memory.apply(
                CompactResult(
                    snapshot=kept,
                    folded=tuple(item for item in active if item not in keep),
                    outcome="compacted",
                    stats=CompactStats(compressor="test"),
                )
            )
        elif op == "clear":
            memory.clear()
        elif op == "restore":
            first = group_items(active)[0] if active else None  # a whole group, never half a pair
            restored = tuple(first.slice(active)) if first is not None else ()
            memory.restore(MemorySnapshot(summary="restored", items=restored))
        for earlier, frozen in reads:
            assert tuple(earlier.items) == frozen
            assert len(earlier.items) == len(frozen)


@st.composite
def chains(draw: st.DrawFn) -> tuple[list[tuple[list[Message], int, int]], tuple[Message, ...]]:
    """Runs over a few shared lists (some empty, some overlapping) and the tuple they join."""
    sources = [_items(draw(st.integers(0, 8))) for _ in range(draw(st.integers(1, 3)))]
    runs = []
    for _ in range(draw(st.integers(0, 6))):
        source = draw(st.sampled_from(sources))
        start = draw(st.integers(0, len(source)))
        runs.append((source, start, draw(st.integers(start, len(source)))))
    return runs, tuple(item for source, start, stop in runs for item in source[start:stop])


@settings(deadline=None, max_examples=300)
@given(
    chain=chains(),
    start=st.none() | st.integers(-12, 12),
    stop=st.none() | st.integers(-12, 12),
    step=st.none() | st.integers(-3, 3).filter(lambda k: k != 0),
)
def test_a_chain_of_runs_is_the_tuple_of_their_items(
    chain: tuple[list[tuple[list[Message], int, int]], tuple[Message, ...]],
    start: int | None,
    stop: int | None,
    step: int | None,
) -> None:
    runs, expected = chain
    joined = ItemsChain.joined(runs)
    assert len(joined) == len(expected)
    assert tuple(joined) == expected and list(reversed(joined)) == list(reversed(expected))
    assert joined == expected and expected == joined and hash(joined) == hash(expected)
    assert joined[start:stop:step] == expected[start:stop:step]
    assert isinstance(joined[start:stop], tuple)
    for index in range(-len(expected), len(expected)):
        assert joined[index] is expected[index]
    for index in (len(expected), -len(expected) - 1):
        with pytest.raises(IndexError):
            joined[index]
    assert pickle.loads(pickle.dumps(joined)) == expected
    assert joined + () == expected and () + joined == expected  # noqa: RUF005 - tests +
    assert ItemsView(list(expected)) == joined and joined == ItemsView(list(expected))
    assert joined != list(expected)  # like a tuple: never equal to a list


def test_a_chain_is_built_from_items_as_a_tuple_is_and_validates_into_a_snapshot() -> None:
    source = _items(5)
    joined = ItemsChain.joined([(source, 0, 2), (source, 3, 5)])
    assert ItemsChain(source) == tuple(source) and ItemsChain() == ()
    snapshot = MemorySnapshot(summary="", items=joined)  # a projection's items, validated
    assert snapshot.items == (source[0], source[1], source[3], source[4])
    assert isinstance(snapshot.items, tuple)
    assert MemorySnapshot.model_validate_json(snapshot.model_dump_json()) == snapshot
