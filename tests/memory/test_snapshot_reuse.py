"""``InMemoryMemory.snapshot`` hands out the same snapshot while nothing was written: after any
sequence of writes and reads, what it hands out is what a snapshot built afresh holds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import DigestCompressor
from compactkit.items import FunctionCall, FunctionCallOutput
from compactkit.items.snapshot import MemorySnapshot
from compactkit.items.view import ItemsView
from compactkit.memory.in_memory import InMemoryMemory, _constructed_snapshot

_OPS = st.lists(
    st.sampled_from(["read", "read", "user", "call", "compact", "pin", "restore", "clear"]),
    max_size=25,
)


def _fresh(memory: InMemoryMemory) -> tuple[str, tuple[object, ...], int | None]:
    """What a snapshot built now holds (the plain version: no reuse)."""
    plain = MemorySnapshot.model_construct(
        summary=memory._summary, items=tuple(memory._active), version=memory._version
    )
    return plain.summary, tuple(plain.items), plain.version


@settings(deadline=None, max_examples=200)
@given(_OPS)
def test_a_reused_snapshot_holds_what_a_fresh_one_would(ops: list[str]) -> None:
    memory = InMemoryMemory()
    calls = 0
    for op in ops:
        if op == "user":
            memory.add_user_input(f"request {calls}")
        elif op == "call":
            calls += 1
            memory.add_output_items([FunctionCall(call_id=f"c{calls}", name="run")])
            memory.add_tool_output(f"c{calls}", f"output {calls}")
        elif op == "compact":
            result = DigestCompressor(keep_last_groups=1).compress(memory.snapshot())
            memory.apply(result)
        elif op == "pin" and memory.snapshot().items:
            seq = memory.snapshot().items[0].seq
            assert seq is not None
            memory.pin(seq)
        elif op == "restore":
            kept = memory.snapshot()
            memory.restore(MemorySnapshot(summary=kept.summary + "x", items=tuple(kept.items)))
        elif op == "clear":
            memory.clear()
        snapshot = memory.snapshot()
        assert (snapshot.summary, tuple(snapshot.items), snapshot.version) == _fresh(memory)
        assert memory.snapshot() is snapshot  # read again with no write between
    assert not any(
        isinstance(i, FunctionCallOutput) and i.seq is None for i in memory.snapshot().items
    )


@settings(deadline=None, max_examples=100)
@given(st.text(max_size=20), st.integers(min_value=0, max_value=10**9), st.integers(0, 3))
def test_a_snapshot_is_built_as_model_construct_builds_it(
    summary: str, version: int, size: int
) -> None:
    items = [FunctionCall(call_id=f"c{k}", name="run", seq=k + 1) for k in range(size)]
    view = ItemsView(items, size)
    plain = MemorySnapshot.model_construct(summary=summary, items=view, version=version)
    fast = _constructed_snapshot(summary, view, version)
    assert type(fast) is MemorySnapshot
    assert fast == plain and fast.__dict__ == plain.__dict__
    assert list(fast.__dict__) == list(plain.__dict__)  # the fields in the model's order
    assert fast.__pydantic_fields_set__ == plain.__pydantic_fields_set__
    assert (fast.__pydantic_extra__, fast.__pydantic_private__) == (None, None)
    assert fast.model_dump() == plain.model_dump()
    assert fast.model_copy(update={"version": 1}).version == 1
