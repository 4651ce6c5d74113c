"""The counter's fast paths on the plain call (call19): a tuple of new items is counted item by
item at once (no C loop that fails on the first uncounted item), and items are priced by their
exact class before any ``isinstance``. Each count is checked against a counter that never saw
the items, and item subclasses are priced as their classes are."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message


def make(kind: int, n: int) -> Item:
    words = " ".join(f"w{n % 11}é" for _ in range(1 + n % 30))
    if kind == 0:
        return Message(role="user", content=words, name="ann" if n % 2 else None)
    if kind == 1:
        return FunctionCall(call_id=f"c{n}", name="read_file", arguments=f'{{"path": "{n}.py"}}')
    return FunctionCallOutput(call_id=f"c{n}", output=words, name="read_file" if n % 3 else None)


def fresh_count(item: Item) -> int:
    return TiktokenCounter("o200k_base").count_item(item)


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 400)), min_size=1, max_size=12),
    st.lists(st.booleans(), min_size=12, max_size=12),
)
@example([(0, 1)], [False] * 12)  # one new item
@example([(2, 5), (1, 5)], [True, False] + [False] * 10)  # the last one new
@example([(2, 5), (1, 5)], [False, True] + [False] * 10)  # the last one counted before
@example([(0, 2), (1, 3), (2, 4)], [True] * 12)  # all counted before
def test_count_items_of_a_tuple_is_the_sum_of_each_count(
    specs: list[tuple[int, int]], counted_before: list[bool]
) -> None:
    counter = TiktokenCounter("o200k_base")
    items = tuple(make(kind, n) for kind, n in specs)
    for item, before in zip(items, counted_before, strict=False):
        if before:
            counter.count_item(item)
    expected = [fresh_count(item) for item in items]
    assert counter.count_items(items) == sum(expected)
    assert all(id(item) in counter._tokens for item in items)  # each one remembered
    assert counter.count_items(items) == sum(expected)  # (the C loop, every item cached)
    assert counter.count_items(list(items)) == sum(expected)
    assert counter.count_items(iter(items)) == sum(expected)
    other = TiktokenCounter("o200k_base")  # a list of new items
    assert other.count_items(list(items)) == sum(expected)


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 400)), min_size=1, max_size=8))
@settings(deadline=None, max_examples=30)
@example([(0, 1)])
@example([(2, 3), (1, 4)])
def test_an_iterator_of_new_items_is_counted_whole(specs: list[tuple[int, int]]) -> None:
    """A bug fixed by call19: the C loop over cached counts consumed an iterator up to the
    first new item, and the item-by-item count that followed read only what was left (a
    generator of new items was counted 0)."""
    items = [make(kind, n) for kind, n in specs]
    expected = [fresh_count(item) for item in items]
    counter = TiktokenCounter("o200k_base")
    counter.count_item(items[0])  # the first one cached, the rest new
    assert counter.count_items(iter(items)) == sum(expected)
    assert counter.count_items(item for item in items) == sum(expected)
    other = TiktokenCounter("o200k_base")
    assert other.item_counts(iter(items)) == expected
    assert other.item_counts(item for item in items) == expected


class NamedMessage(Message):
    pass


class NamedCall(FunctionCall):
    pass


class NamedOutput(FunctionCallOutput):
    pass


def test_item_subclasses_are_priced_as_their_classes() -> None:
    counter = TiktokenCounter("o200k_base")
    pairs = [
        (NamedMessage(role="user", content="hello there", name="ann"), Message),
        (NamedMessage(role="assistant", content="ok"), Message),
        (NamedCall(call_id="c1", name="read_file", arguments='{"path": "a.py"}'), FunctionCall),
        (NamedOutput(call_id="c1", output="line\n" * 40, name="read_file"), FunctionCallOutput),
        (NamedOutput(call_id="c2", output="short"), FunctionCallOutput),
    ]
    for item, cls in pairs:
        plain = cls(**item.model_dump())
        assert type(plain) is cls
        assert counter.count_item(item) == counter.count_item(plain) == fresh_count(plain)


def test_the_exact_classes_follow_the_cookbook_rules() -> None:
    counter = TiktokenCounter("o200k_base")
    text = counter.count_text
    per, name = counter.tokens_per_message, counter.tokens_per_name
    message = Message(role="user", content="hello there", name="ann")
    assert (
        counter.count_item(message) == per + text("user") + text("hello there") + text("ann") + name
    )
    call = FunctionCall(call_id="c1", name="read_file", arguments='{"path": "a.py"}')
    assert counter.count_item(call) == per + text("assistant") + text("read_file") + text(
        '{"path": "a.py"}'
    )
    output = FunctionCallOutput(call_id="c1", output="done", name="read_file")
    assert (
        counter.count_item(output) == per + text("tool") + text("done") + text("read_file") + name
    )
