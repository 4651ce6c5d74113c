"""Items, snapshots and the one serialiser."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from compactkit.errors import FormatError
from compactkit.items import (
    ITEMS_ADAPTER,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Message,
    Reasoning,
    TextPart,
    dump_items,
    load_items,
)
from compactkit.items.snapshot import (
    SUMMARY_NAME,
    CompactResult,
    CompactStats,
    MemorySnapshot,
    is_summary_message,
)

ITEMS = [
    Message(role="system", content="Be terse."),
    Message(
        role="user", content=(TextPart(text="What is this?"), ImagePart(url="https://x/a.png"))
    ),
    Reasoning(format="responses", payload={"type": "reasoning", "id": "rs_1", "summary": []}),
    FunctionCall(call_id="c1", name="read_file", arguments='{"path": "a.py"}', id="fc_1"),
    FunctionCallOutput(call_id="c1", output="print('hi')", seq=7),
    Message(role="assistant", content="It prints hi.", pinned=True),
]


def test_items_round_trip_through_the_one_serialiser() -> None:
    assert load_items(dump_items(ITEMS)) == ITEMS
    assert ITEMS_ADAPTER.validate_json(ITEMS_ADAPTER.dump_json(ITEMS)) == ITEMS


def test_items_are_immutable() -> None:
    with pytest.raises(ValidationError):
        ITEMS[0].content = "changed"  # type: ignore[misc]


def test_unknown_item_type_is_rejected_with_the_field() -> None:
    with pytest.raises(FormatError, match=r"item 0 is not an item.*telepathy"):
        load_items([{"type": "telepathy", "content": "?"}])


def test_function_call_arguments_are_kept_verbatim() -> None:
    call = FunctionCall(call_id="c", name="f", arguments='{"b": 1,  "a": 2}')
    assert call.arguments == '{"b": 1,  "a": 2}'
    assert call.parsed_arguments() == {"b": 1, "a": 2}
    assert FunctionCall(call_id="c", name="f", arguments="not json").parsed_arguments() == {}


def test_snapshot_renders_summary_after_instructions_and_reads_it_back() -> None:
    snapshot = MemorySnapshot.of(ITEMS, summary="## Goal\nShip it")
    rendered = snapshot.render_items(summary_role="user")
    assert rendered[0] == ITEMS[0]
    assert isinstance(rendered[1], Message)
    assert is_summary_message(rendered[1]) and rendered[1].text.startswith(f"<{SUMMARY_NAME} ")
    assert rendered[1].role == "user"
    assert MemorySnapshot.from_items(rendered) == snapshot


def test_snapshot_without_summary_renders_items_unchanged() -> None:
    assert MemorySnapshot.of(ITEMS).render_items() == ITEMS


def test_compact_result_serialises_without_the_exception() -> None:
    result = CompactResult(
        snapshot=MemorySnapshot(),
        outcome="failed",
        stats=CompactStats(compressor="summary"),
        error="summarizer unreachable",
        cause=ConnectionError("boom"),
    )
    assert "cause" not in result.model_dump()
    assert not result.changed
