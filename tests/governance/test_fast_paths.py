"""Each performance trick of the projection (governance/_fast.py) equals its plain version."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.governance._fast import (
    extended,
    extended_plainly,
    masked_outputs,
    masked_outputs_plainly,
    swap_map,
    swapped,
    swapped_plainly,
    with_cached_prefix,
    with_cached_prefix_plainly,
)
from compactkit.governance._projection import Mask
from compactkit.governance._sums import Sums
from compactkit.governance.projector import Projection, ProjectionReport
from compactkit.items import FunctionCallOutput, Item, Message


def _mask(k: int, saving: int) -> Mask:
    original = FunctionCallOutput(call_id=f"call_{k}", output="x" * 40)
    return Mask(original, FunctionCallOutput(call_id=f"call_{k}", output="[masked]"), saving)


@st.composite
def windows(
    draw: st.DrawFn,
) -> tuple[Sums, int, int, list[tuple[int, int]], list[Mask], list[Mask]]:
    savings = draw(st.lists(st.integers(1, 500), max_size=40))
    sums = Sums()
    for k, saving in enumerate(savings):
        mask = _mask(k, saving)
        sums.masks.append(mask)
        sums.mask_ids.append(mask.original.call_id)
        sums.saved.append(sums.saved[-1] + saving)
    n = len(savings)
    low = draw(st.integers(0, n))
    high = draw(st.integers(low, n))
    cuts = sorted(draw(st.sets(st.integers(low, high), max_size=8)))
    bounds = [low, *cuts, high]
    pairs = list(pairwise(bounds))
    whole = [(a, b) for a, b in pairs if a < b and draw(st.booleans())]
    ahead = [_mask(1000 + k, s) for k, s in enumerate(draw(st.lists(st.integers(1, 99))))]
    tail = [_mask(2000 + k, s) for k, s in enumerate(draw(st.lists(st.integers(1, 99))))]
    return sums, low, high, whole, ahead, tail


@settings(deadline=None, max_examples=200)
@given(windows())
def test_masked_outputs_by_running_totals_equal_the_walk(
    case: tuple[Sums, int, int, list[tuple[int, int]], list[Mask], list[Mask]],
) -> None:
    assert masked_outputs(*case) == masked_outputs_plainly(*case)


@settings(deadline=None, max_examples=100)
@given(st.lists(st.booleans(), max_size=30))
def test_swapping_by_identity_equals_comparing_each_item(replace: list[bool]) -> None:
    items: list[Item] = [Message(role="user", content="same text") for _ in replace]
    pairs: list[tuple[Item, Item]] = [
        (item, Message(role="user", content=f"replacement {k}"))
        for k, (item, chosen) in enumerate(zip(items, replace, strict=True))
        if chosen
    ]
    # equal by value, distinct by identity: only the chosen objects are replaced
    assert swapped(items, swap_map(pairs)) == swapped_plainly(items, pairs)


@settings(deadline=None, max_examples=100)
@given(
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.lists(st.text(max_size=20), max_size=3),
    st.integers(0, 50),
)
def test_a_hand_built_projection_equals_dataclasses_replace(
    tokens: int, shared: int, notes: list[str], kept: int
) -> None:
    report = ProjectionReport(kept=kept, masked=1, omitted=2, notes=tuple(notes))
    projection = Projection((Message(role="user", content="hi"),), tokens, tokens + 10, report)
    assert with_cached_prefix(projection, shared) == with_cached_prefix_plainly(projection, shared)


@settings(deadline=None, max_examples=100)
@given(
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.lists(st.text(max_size=20), max_size=3),
    st.lists(st.text(max_size=20), max_size=3),
    st.integers(0, 50),
    st.integers(0, 5),
    st.integers(0, 10_000),
)
def test_an_extended_projection_equals_dataclasses_replace(
    tokens: int,
    budget: int,
    notes: list[str],
    new_notes: list[str],
    kept: int,
    added: int,
    shared: int,
) -> None:
    report = ProjectionReport(
        kept=kept,
        masked=1,
        omitted=2,
        notes=tuple(notes),
        masked_call_ids=("c1",),
        cached_prefix_tokens=shared,
    )
    prompt = Projection((Message(role="user", content="hi"),), tokens, tokens + 10, report)
    items = (Message(role="user", content="hi"), Message(role="user", content="more"))
    ours = extended(prompt, items, tokens + 7, budget, added, tuple(new_notes))
    assert ours == extended_plainly(prompt, items, tokens + 7, budget, added, tuple(new_notes))
    assert ours.items is items and prompt.report == report  # (the prompt is left as it was)
