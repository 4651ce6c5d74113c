"""The projection's incremental index finds the groups holding pinned items from their positions
(one pass over the new items): the same groups, pins and latest user input as indexing the
whole history at once, group by group, however the history grew."""

from __future__ import annotations

from compressors.test_compressors import PROPERTY, histories
from hypothesis import given
from hypothesis import strategies as st

from compactkit.governance._projection import ViewCache
from compactkit.items import group_items
from compactkit.items.snapshot import MemorySnapshot, is_summary_message, leading_instructions


@PROPERTY
@given(histories(), st.data())
def test_a_history_indexed_as_it_grew_pins_what_its_groups_hold(
    snapshot: MemorySnapshot, data: st.DataObject
) -> None:
    items = list(snapshot.items)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(items)), max_size=5)))
    cache = ViewCache()
    for cut in [*cuts, len(items)]:
        view = cache.view(tuple(items[:cut]))
    lead = leading_instructions(items)
    groups = group_items(items, lead)
    pinned = [i for i, g in enumerate(groups[:-1]) if any(item.pinned for item in g.slice(items))]
    users = [
        i
        for i, g in enumerate(groups[:-1])
        if g.kind == "user" and not is_summary_message(items[g.start])
    ]
    assert view.closed[: view.n_closed] == groups[:-1]
    assert view.tail == (groups[-1] if groups else None)
    assert view.pinned[: view.n_pinned] == pinned
    tail_pinned = bool(groups) and any(item.pinned for item in groups[-1].slice(items))
    assert view.tail_pinned == tail_pinned
    expected_user = users[-1] if users else -1
    if groups and groups[-1].kind == "user" and not is_summary_message(items[-1]):
        expected_user = len(groups) - 1
    assert view.last_user == expected_user
