"""The token counter's per-item cache: counts stay right as items come and go.

The cache is keyed by ``id(item)`` and holds each counted item, so an id it knows is that item's.
These tests make the garbage collector reuse ids (items freed and new ones made at once) and the
cache evict (a small limit), and check every count against a counter that never saw the items.
"""

from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message


def make(kind: int, n: int) -> Item:
    words = " ".join(f"w{n % 13}" for _ in range(1 + n % 40))
    if kind == 0:
        return Message(role="user", content=words)
    if kind == 1:
        return FunctionCall(call_id=f"c{n}", name="read_file", arguments='{"path": "a.py"}')
    return FunctionCallOutput(call_id=f"c{n}", output=words)


def fresh_count(item: Item) -> int:
    return TiktokenCounter("o200k_base").count_item(item)


@settings(deadline=None, max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 500)), min_size=1, max_size=80))
def test_counts_are_right_when_ids_are_reused_and_entries_evicted(
    specs: list[tuple[int, int]],
) -> None:
    counter = TiktokenCounter("o200k_base")
    counter._cache_limit = 8  # evict every few items
    for kind, n in specs:
        item = make(kind, n)  # the last one's id is free again: often the same address
        assert counter.count_item(item) == fresh_count(item)
        batch = [make(kind, n + k) for k in range(3)]
        expected = [fresh_count(x) for x in batch]
        assert counter.item_counts(batch) == expected
        assert counter.count_items(batch) == sum(expected)
        del item, batch  # freed at once (no cycles): their ids are free for the next ones


def test_an_evicted_item_freed_gives_its_id_to_a_new_item_counted_anew() -> None:
    counter = TiktokenCounter("o200k_base")
    counter._cache_limit = 8
    short = Message(role="user", content="hi")
    counter.count_item(short)
    for n in range(20):  # evict it
        counter.count_item(make(0, n))
    del short
    other = Message(role="user", content=" ".join(["long"] * 300))  # often at the freed address
    assert counter.count_item(other) == fresh_count(other)


def test_threads_counting_while_the_cache_evicts_get_exact_counts() -> None:
    counter = TiktokenCounter("o200k_base")
    counter._cache_limit = 16
    wrong: list[tuple[int, int]] = []

    def work(seed: int) -> None:
        for n in range(400):
            item = make(n % 3, seed * 1000 + n)
            got = counter.count_item(item)
            if got != fresh_count(item):
                wrong.append((got, fresh_count(item)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong
