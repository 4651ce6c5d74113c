"""``PlaceholderCache`` (the placeholders the projection and the masking rung share) hands out
exactly what ``mask_output`` makes for the same output, tool and size; ``made`` never keeps a
placeholder of its own; and the masking rung masks the same way with or without an entry."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import FunctionCall, FunctionCallOutput, Message
from compactkit.compressors import MaskingCompressor
from compactkit.compressors.masking import PlaceholderCache, mask_output, placeholders
from compactkit.items.snapshot import MemorySnapshot

TEXT = st.text(max_size=30)
OUTPUTS = st.builds(
    FunctionCallOutput,
    call_id=st.text(min_size=1, max_size=8),
    output=st.text(max_size=200),
    name=st.none() | TEXT,
)
TOOLS = st.none() | TEXT
SIZES = st.none() | st.integers(min_value=0, max_value=10**6)


@settings(deadline=None, max_examples=200)
@given(OUTPUTS, st.lists(st.tuples(TOOLS, SIZES), min_size=1, max_size=4))
def test_a_placeholder_is_what_mask_output_makes(
    output: FunctionCallOutput, asks: list[tuple[str | None, int | None]]
) -> None:
    cache = PlaceholderCache()
    for tool, tokens in asks:  # the same output asked with other tools and sizes in turn
        expected = mask_output(output, tool=tool, tokens=tokens)
        assert cache(output, tool, tokens) == expected
        assert cache.made(output, tool, tokens) == expected


def test_made_keeps_nothing_and_reuses_what_the_projection_made() -> None:
    cache = PlaceholderCache()
    output = FunctionCallOutput(call_id="c1", output="x " * 400)
    made = cache.made(output, "run", 400)
    assert made == mask_output(output, tool="run", tokens=400)
    assert cache.made(output, "run", 400) is not made  # not kept: made anew
    kept = cache(output, "run", 400)
    assert cache.made(output, "run", 400) is kept  # the projection's, reused
    assert cache.made(output, "other", 400) is not kept  # another tool: another text
    assert cache.made(output, "run", 401) is not kept


def test_a_full_cache_drops_its_oldest_entries() -> None:
    cache = PlaceholderCache(limit=8)
    outputs = [FunctionCallOutput(call_id=f"c{i}", output="y" * 50) for i in range(20)]
    for output in outputs:
        cache(output, None, 50)
    assert len(cache._entries) <= 8
    assert cache(outputs[-1], None, 50) == mask_output(outputs[-1], tool=None, tokens=50)


def _history(n: int) -> list[object]:
    items: list[object] = []
    for i in range(n):
        items += [
            Message(role="user", content=f"step {i}"),
            FunctionCall(call_id=f"call_{i}", name="read_file", arguments="{}"),
            FunctionCallOutput(call_id=f"call_{i}", output=f"line {i}\n" * 300),
            Message(role="assistant", content="ok"),
        ]
    return items


def test_masking_is_the_same_with_the_projections_placeholders() -> None:
    items = _history(14)
    snapshot = MemorySnapshot(items=tuple(items))  # type: ignore[arg-type]
    compressor = MaskingCompressor(keep_last_groups=2)
    placeholders.clear()
    alone = compressor.compress(snapshot)
    counter = compressor.counter
    for item in items:  # as the projection would have masked them before
        if isinstance(item, FunctionCallOutput):
            placeholders(item, "read_file", counter.count_item(item))
    shared = compressor.compress(snapshot)
    assert alone.changed and alone.stats.details["masked"] > 0
    assert shared.snapshot.items == alone.snapshot.items
    assert shared.stats == alone.stats
    placeholders.clear()
