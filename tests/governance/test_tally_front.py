"""``ItemsTally``'s front entry (call19): the usual call tallies the history it tallied last,
grown, and only the new items are counted; every other history takes the general search. Each
total is checked against a fresh sum of the items' counts, over interleaved sessions, restored
(not grown) histories and plain tuples."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.governance._incremental import ItemsTally
from compactkit.items import Message
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory.in_memory import InMemoryMemory

COUNTER = TiktokenCounter("o200k_base")


def total(items: object) -> int:
    return sum(TiktokenCounter("o200k_base").count_item(item) for item in items)  # type: ignore[attr-defined]


@settings(deadline=None, max_examples=40)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3)), min_size=1, max_size=40))
@example([(0, 1), (0, 1), (0, 0)])  # one session grown twice, then read again unchanged
@example([(0, 1), (1, 1), (0, 1), (1, 2)])  # two sessions in turn
@example([(0, 2), (2, 0), (0, 1)])  # a session restored shorter, then grown
def test_every_total_is_the_sum_of_the_items_counts(steps: list[tuple[int, int]]) -> None:
    tally = ItemsTally(size=2)
    memories = [InMemoryMemory(), InMemoryMemory()]
    for number, (action, grow) in enumerate(steps):
        memory = memories[action % 2]
        if action == 2:  # rewritten, not grown: the first half of its items again
            items = memory.snapshot().items
            memory.restore(MemorySnapshot(items=tuple(items[: len(items) // 2])))
        for k in range(grow):
            memory.add_user_input(f"message {number}.{k} " + "word " * (number % 7))
        items = memory.snapshot().items
        assert tally(COUNTER, items) == total(items)
        as_tuple = tuple(items)  # not a view: compared item by item
        assert tally(COUNTER, as_tuple) == total(as_tuple)


def test_a_history_that_grew_is_counted_with_its_new_items() -> None:
    tally = ItemsTally()
    memory = InMemoryMemory()
    memory.add_user_input("first")
    first = memory.snapshot().items
    assert tally(COUNTER, first) == total(first)
    memory.add_output_items([Message(role="assistant", content="second " * 30)])
    grown = memory.snapshot().items
    assert tally(COUNTER, grown) == total(grown) > total(first)
    assert tally(COUNTER, first) == total(first)  # an older, shorter read: the general path
