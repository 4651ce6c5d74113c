"""``MaskingCompressor`` masks exactly what its plain per-item loop masks: oldest first, every
bulky unmasked output of the unprotected groups before the newest ones, stopping as soon as the
request fits the target (the loop stops at a group's first item once the total is under the
target, and right after the output that brought it under)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import FunctionCall, FunctionCallOutput, Message
from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors import MaskingCompressor
from compactkit.compressors._plan import Layout, request_tokens
from compactkit.compressors.masking import is_masked, mask_output
from compactkit.items import Item
from compactkit.items.snapshot import MemorySnapshot

COUNTER = TiktokenCounter("o200k_base")
WORDS = ["alpha", "beta", "gamma\n", "Error: boom\n", "x = 1\n", "ok"]


def _history(outputs: list[tuple[int, bool, str]], parallel: list[int]) -> list[Item]:
    """A user message, then turns of ``parallel[t]`` calls (1 to 3) and their outputs."""
    items: list[Item] = [Message(role="user", content="start")]
    turn = 0
    k = 0
    while k < len(outputs):
        width = parallel[turn % len(parallel)] if parallel else 1
        calls: list[Item] = []
        answers: list[Item] = []
        for size, premasked, tool in outputs[k : k + width]:
            call_id = f"call_{k}"
            text = " ".join(WORDS[(k + j) % len(WORDS)] for j in range(size))
            output = FunctionCallOutput(call_id=call_id, output=text)
            if premasked:
                output = mask_output(output, tool=tool, tokens=COUNTER.count_item(output))
            calls.append(FunctionCall(call_id=call_id, name=tool, arguments="{}"))
            answers.append(output)
            k += 1
        items += [*calls, *answers]
        turn += 1
    return items


def _plainly(
    snapshot: MemorySnapshot, keep: int, floor: int, target: int | None
) -> tuple[list[Item], list[str]]:
    """The masking loop as first written: every check per item."""
    layout = Layout.of(snapshot.items)
    newest_unmasked = layout.cut(lambda position, _group: position < keep)
    items = list(layout.items)
    names = {i.call_id: i.name for i in items if isinstance(i, FunctionCall)}
    total = request_tokens(snapshot, COUNTER)
    masked: list[str] = []
    for index, group in enumerate(layout.groups[:newest_unmasked]):
        if layout.protected[index] is not None:
            continue
        for position in range(group.start, group.stop):
            if target is not None and total <= target:
                break
            item = items[position]
            if not isinstance(item, FunctionCallOutput) or is_masked(item):
                continue
            tokens = COUNTER.count_item(item)
            if tokens <= floor:
                continue
            placeholder = mask_output(item, tool=names.get(item.call_id), tokens=tokens)
            saving = tokens - COUNTER.count_item(placeholder)
            if saving <= 0:
                continue
            items[position] = placeholder
            total -= saving
            masked.append(item.call_id)
    return items, masked


OUTPUTS = st.lists(
    st.tuples(
        st.integers(0, 120),
        st.booleans(),
        st.sampled_from(["run", "read_file", "a_tool_with_a_rather_long_name_" * 3]),
    ),
    max_size=10,
)


@settings(deadline=None, max_examples=150)
@given(
    outputs=OUTPUTS,
    parallel=st.lists(st.integers(1, 3), max_size=4),
    keep=st.integers(0, 3),
    floor=st.sampled_from([0, 5, 30, 100]) | st.integers(0, 7).map(lambda k: -1 - k),
    target_share=st.none() | st.floats(0.3, 1.1),
)
def test_masks_what_the_plain_loop_masks(
    outputs: list[tuple[int, bool, str]],
    parallel: list[int],
    keep: int,
    floor: int,
    target_share: float | None,
) -> None:
    items = _history(outputs, parallel)
    if floor < 0:  # exactly the size of one of the outputs (the bound is inclusive)
        sizes = [COUNTER.count_item(i) for i in items if isinstance(i, FunctionCallOutput)]
        floor = sizes[(-1 - floor) % len(sizes)] if sizes else 0
    snapshot = MemorySnapshot.from_items(items)
    before = request_tokens(snapshot, COUNTER)
    target = None if target_share is None else max(1, int(before * target_share))
    compressor = MaskingCompressor(
        keep_last_groups=keep, min_tokens=floor, target_tokens=target, counter=COUNTER
    )
    result = compressor.compress(snapshot)
    items, masked = _plainly(snapshot, keep, floor, target)
    assert list(result.snapshot.items) == items
    assert result.stats.details["masked_call_ids"] == masked
    assert result.stats.tokens_after == request_tokens(result.snapshot, COUNTER)
