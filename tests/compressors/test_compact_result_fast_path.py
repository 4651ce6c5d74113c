"""A compaction's result takes its folded items without checking each against the item union
when validation would return them unchanged (``compact_result``): the result is the one
``CompactResult`` builds, with the same objects and the same fields set, and anything
validation would convert or refuse is still converted or refused with the same error."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from compactkit.items import FunctionCall, FunctionCallOutput, Message
from compactkit.items.model import Reasoning
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot, compact_result

PROPERTY = settings(deadline=None, max_examples=300)


class _Note(Message):
    """A subclass of an item model: validation keeps it, but it is not one of the models."""


def _item(kind: int, n: int) -> object:
    if kind == 0:
        return Message(role="user", content=f"m{n}")
    if kind == 1:
        return FunctionCall(call_id=f"c{n}", name="read", arguments="{}")
    if kind == 2:
        return FunctionCallOutput(call_id=f"c{n}", output=f"out {n}")
    if kind == 3:
        return Reasoning(format="responses", payload={"id": f"r{n}"})
    if kind == 4:
        return _Note(role="assistant", content=f"note {n}")
    if kind == 5:  # a message carrying another model's tag (built unvalidated): refused
        return Message.model_construct(role="user", content="x", type="function_call")
    if kind == 6:  # a mapping: validation converts it to the model its tag names
        return {"type": "message", "role": "user", "content": f"d{n}"}
    if kind == 7:
        return f"not an item {n}"
    if kind == 8:
        return Message.model_construct(role="user", content="y", type=None)  # no tag at all
    untagged = Message.model_construct(role="user", content="z")
    del untagged.__dict__["type"]  # an instance without the field itself
    return untagged


_COMMON = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 9)), max_size=10)
_ANY = st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=6)


def _fields(error: str | None) -> dict[str, Any]:
    return {
        "snapshot": MemorySnapshot.of([Message(role="user", content="kept")], summary="s"),
        "outcome": "compacted",
        "error": error,
        "cause": None,
        "stats": CompactStats(compressor="digest", tokens_before=9, tokens_after=3),
    }


def _built(folded: list[object], fields: dict[str, Any]) -> CompactResult | str:
    try:
        return CompactResult(folded=tuple(folded), **fields)
    except ValidationError as exc:
        return str(exc)


@PROPERTY
@given(_COMMON, _ANY, st.integers(0, 10), st.sampled_from([None, "why"]))
def test_folded_items_taken_unchecked_are_what_validation_returns(
    common: list[tuple[int, int]], odd: list[tuple[int, int]], at: int, error: str | None
) -> None:
    folded = [_item(kind, n) for kind, n in common]
    for kind, n in odd:
        folded.insert(min(at, len(folded)), _item(kind, n))
    fields = _fields(error)
    reference = _built(folded, fields)
    if isinstance(reference, str):
        with pytest.raises(ValidationError) as refused:
            compact_result(folded=folded, **fields)
        assert str(refused.value) == reference
        return
    fast = compact_result(folded=folded, **fields)
    assert fast == reference
    assert fast.model_fields_set == reference.model_fields_set
    assert type(fast.folded) is tuple
    assert [type(i) for i in fast.folded] == [type(i) for i in reference.folded]
    if all(type(i) is not dict for i in folded):  # validation kept every object itself
        assert all(a is b for a, b in zip(fast.folded, folded, strict=True))


def test_bad_fields_are_refused_as_the_model_refuses_them() -> None:
    fields = _fields(None) | {"outcome": "shrunk"}
    with pytest.raises(ValidationError) as refused:
        compact_result(folded=[Message(role="user", content="x")], **fields)
    with pytest.raises(ValidationError) as reference:
        CompactResult(folded=(Message(role="user", content="x"),), **fields)
    assert str(refused.value) == str(reference.value)
