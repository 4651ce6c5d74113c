"""The default ladder hands its steps what it measured (tokens, layout) instead of letting each
measure the history again: its results are exactly those of the same steps run one by one."""

from __future__ import annotations

from compressors.test_compressors import COUNTER, PROPERTY, check_contract, histories
from hypothesis import given
from hypothesis import strategies as st

from compactkit import FunctionCall, FunctionCallOutput, Message
from compactkit.budget import EstimateCounter
from compactkit.compressors import (
    DigestCompressor,
    LadderCompressor,
    MaskingCompressor,
    WindowedCompressor,
)
from compactkit.compressors._plan import Layout, tail_cutter
from compactkit.items import Item
from compactkit.items.snapshot import CompactResult, MemorySnapshot


def _explicit(ladder: LadderCompressor) -> LadderCompressor:
    """The same ladder with its steps given: each step measures its input itself."""
    common = {"counter": ladder.counter, "tools": ladder.tools}
    steps = [
        MaskingCompressor(
            keep_last_groups=ladder.keep_last_groups, target_tokens=ladder.target_tokens, **common
        ),
        DigestCompressor(target_tokens=ladder.target_tokens, **common),
        WindowedCompressor(max_tokens=ladder.target_tokens, **common),
    ]
    return LadderCompressor(target_tokens=ladder.target_tokens, steps=steps, **common)


def _same(a: CompactResult, b: CompactResult) -> None:
    assert a.snapshot.summary == b.snapshot.summary
    assert tuple(a.snapshot.items) == tuple(b.snapshot.items)
    assert [i.seq for i in a.folded] == [i.seq for i in b.folded]
    assert a.outcome == b.outcome
    assert a.stats.tokens_before == b.stats.tokens_before
    assert a.stats.tokens_after == b.stats.tokens_after
    assert a.stats.details == b.stats.details


def _session(turns: int, summary: str = "") -> MemorySnapshot:
    """A coding session: requests, file reads with bulky outputs (some failing), answers."""
    items: list[Message | FunctionCall | FunctionCallOutput] = []
    for turn in range(turns):
        items.append(
            Message(role="user", content=f"Turn {turn}: fix module{turn}, don't break the API.")
        )
        for step in range(4):
            cid = f"c{turn}_{step}"
            items.append(
                FunctionCall(
                    call_id=cid, name="read", arguments=f'{{"path": "src/m{turn}_{step}.py"}}'
                )
            )
            body = "".join(f"line {n}: value_{n} = compute({n})\n" for n in range(12 + 8 * step))
            if step == 3:
                body += "Traceback (most recent call last):\n  File \"x.py\"\nKeyError: 'k'\n"
            items.append(FunctionCallOutput(call_id=cid, output=body))
        items.append(
            Message(role="assistant", content=f"Done with module{turn}; next I will run the tests.")
        )
    snapshot = MemorySnapshot.of(items, summary=summary)
    return snapshot.model_copy(
        update={
            "items": tuple(i.model_copy(update={"seq": n}) for n, i in enumerate(snapshot.items))
        }
    )


@PROPERTY
@given(histories(), st.integers(40, 2_000))
def test_the_measured_ladder_matches_its_steps_run_one_by_one(
    snapshot: MemorySnapshot, target: int
) -> None:
    ladder = LadderCompressor(target_tokens=target, counter=COUNTER)
    measured = ladder.compress(snapshot)
    check_contract(snapshot, measured)
    _same(measured, _explicit(ladder).compress(snapshot))


def test_a_long_session_folds_masks_its_tail_and_matches_too() -> None:
    first = _session(40)
    for target in (1_500, 3_000, 6_000):
        ladder = LadderCompressor(target_tokens=target, keep_last_groups=3, counter=COUNTER)
        result = ladder.compress(first)
        assert "digest" in result.stats.compressor
        check_contract(first, result)
        _same(result, _explicit(ladder).compress(first))
        # and again, onto the summary it wrote, with more history
        later = MemorySnapshot.of(
            [*result.snapshot.items, *_session(10).items], summary=result.snapshot.summary
        )
        later = later.model_copy(
            update={
                "items": tuple(i.model_copy(update={"seq": n}) for n, i in enumerate(later.items))
            }
        )
        again = ladder.compress(later)
        check_contract(later, again)
        _same(again, _explicit(ladder).compress(later))


class _ItemByItem:
    """A counter without ``item_counts``: counted item by item."""

    def __init__(self) -> None:
        self.counter = EstimateCounter()

    def count_item(self, item: Item) -> int:
        return self.counter.count_item(item)


@PROPERTY
@given(histories(), st.booleans())
def test_group_tokens_from_one_pass_are_each_groups_tokens(
    snapshot: MemorySnapshot, counted_before: bool
) -> None:
    layout = Layout.of(snapshot.items)
    if counted_before:
        COUNTER.count_items(snapshot.items)
    expected = [layout.tokens(group, COUNTER) for group in layout.groups]
    assert layout.group_tokens(COUNTER) == expected
    plain = _ItemByItem()
    assert layout.group_tokens(plain) == [  # type: ignore[arg-type]
        layout.tokens(group, plain.counter) for group in layout.groups
    ]


def _cut_reference(order: list[int], sizes: list[int], groups: int, budget: int) -> tuple[int, int]:
    """``split_by_need``'s cut as first written: the newest groups walked until one does not fit."""
    left, first, tail = budget, groups, 0
    for index in order:
        if sizes[index] > left:
            break
        left -= sizes[index]
        tail += sizes[index]
        first = index
    else:
        first = 0
    return first, tail


@PROPERTY
@given(st.lists(st.integers(-3, 40), max_size=12), st.data())
def test_tail_cuts_by_bisection_are_the_walked_cuts(sizes: list[int], data: st.DataObject) -> None:
    indices = list(range(len(sizes) - 1, -1, -1))
    order = data.draw(st.lists(st.sampled_from(indices), unique=True)) if indices else []
    order.sort(reverse=True)
    cut = tail_cutter(order, sizes, len(sizes))
    for budget in range(-5, sum(map(abs, sizes)) + 5):
        assert cut(budget) == _cut_reference(order, sizes, len(sizes), budget)
