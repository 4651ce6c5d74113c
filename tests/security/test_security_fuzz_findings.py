"""One regression test per failure the fuzz suite (test_security_fuzz.py) found, each the
smallest input hypothesis reported; all are now a typed error or a valid result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors import LadderCompressor, MaskingCompressor
from compactkit.errors import ConfigError, FormatError
from compactkit.formats import (
    anthropic_to_items,
    chat_to_items,
    items_to_chat,
    items_to_responses,
    responses_to_items,
    validate_chat,
    validate_responses,
)
from compactkit.governance.projector import ContextProjector
from compactkit.items import FunctionCallOutput, Message, Reasoning
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory import InMemoryMemory
from compactkit.sessions import AgentSession
from compactkit.sessions.file import FileSessionStore
from compactkit.sql.memory import SQLMemory

COUNTER = TiktokenCounter("o200k_base")


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def test_an_error_about_deeply_nested_input_is_still_a_short_error() -> None:
    # Was RecursionError: the error message itself took the repr of the nested value.
    with pytest.raises(FormatError, match="'system' must be a string or a list of blocks"):
        anthropic_to_items([], system={"deep": nested(3000)})
    with pytest.raises(FormatError, match="content block must be an object") as raised:
        anthropic_to_items([], system=[nested(3000)])
    assert len(str(raised.value)) < 200
    with pytest.raises(FormatError, match="unknown role"):
        chat_to_items([{"role": nested(3000), "content": "x"}])
    with pytest.raises(ConfigError, match="add_user_input takes text"):
        InMemoryMemory().add_user_input(nested(3000))  # type: ignore[arg-type]


def test_reserved_keys_from_the_wire_are_refused_not_lost() -> None:
    # Was a silent loss: '__format__' went into extra and was never written back.
    with pytest.raises(FormatError, match="'__format__' is reserved"):
        chat_to_items([{"role": "user", "content": "hi", "__format__": None}])
    with pytest.raises(FormatError, match="reserved"):
        responses_to_items([{"type": "message", "role": "user", "content": "x", "__seal": 1}])


@pytest.mark.parametrize("calls", [[1], ["c1"], 5, {"id": "c1"}])
def test_validate_chat_refuses_malformed_tool_calls(calls: Any) -> None:
    # Was AttributeError ('str' object has no attribute 'get') / TypeError (int not iterable).
    messages = [{"role": "assistant", "content": None, "tool_calls": calls}]
    for mode in ("raise", "repair"):
        with pytest.raises(FormatError, match="'tool_calls' must be a list of objects"):
            validate_chat(messages, mode=mode)  # type: ignore[arg-type]


def test_a_trailing_reasoning_item_is_not_sent_alone() -> None:
    # Was a Responses prompt the API refuses: reasoning with nothing of its response after it.
    items = [
        Message(role="user", content="user"),
        FunctionCallOutput(call_id="c1", output="orphan"),
        Reasoning(format="responses", payload={"type": "reasoning", "id": "rs"}),
    ]
    projection = ContextProjector(COUNTER, budget=56).project(MemorySnapshot.of(items))
    validate_responses(items_to_responses(projection.items), mode="raise")
    validate_chat(items_to_chat(projection.items, lossy=True), mode="raise")
    assert projection.report.kept + projection.report.omitted == 3
    assert any("reasoning" in note for note in projection.report.notes)
    assert projection.tokens == COUNTER.count(projection.items).tokens
    alone = MemorySnapshot.of([items[0], items[2]])
    with pytest.raises(FormatError, match="reasoning"):
        ContextProjector(COUNTER, budget=56, validate="raise").project(alone)


def test_required_compressor_sizes_refuse_none() -> None:
    # Was TypeError ("'<' not supported between NoneType and int").
    with pytest.raises(ConfigError, match="target_tokens"):
        LadderCompressor(None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="keep_last_groups"):
        MaskingCompressor(keep_last_groups=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [False, 5, 2.5])
def test_add_output_items_refuses_what_is_not_a_list(value: Any) -> None:
    # Was TypeError ("'bool' object is not iterable").
    with pytest.raises(ConfigError, match="add_output_items takes a list"):
        InMemoryMemory().add_output_items(value)


def test_text_that_is_not_unicode_is_refused_by_every_memory(tmp_path: Path) -> None:
    # Was UnicodeEncodeError from the SQLite driver (in-memory stored it, then failed to save).
    for memory in (InMemoryMemory(), SQLMemory(f"sqlite:///{tmp_path}/m.db", "s")):
        with pytest.raises(ConfigError, match="valid Unicode"):
            memory.add_user_input("\ud800")
        with pytest.raises(ConfigError, match="valid Unicode"):
            memory.add_output_items([{"role": "assistant", "content": "a\udc80b"}])
        assert memory.snapshot().items == ()  # nothing stored


def test_session_metadata_that_is_not_unicode_is_refused_before_saving(tmp_path: Path) -> None:
    # Was PydanticSerializationError from FileSessionStore.save.
    with pytest.raises(ConfigError, match=r"metadata\[''\]"):
        AgentSession(session_id="0", metadata={"": "\ud800"})
    session = AgentSession(session_id="0")
    session.metadata["\udfff"] = 1
    with pytest.raises(ConfigError, match="valid Unicode"):
        FileSessionStore(tmp_path).save(session)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), [float("-inf")]])
def test_a_non_finite_provider_field_is_refused_not_changed_by_a_store(value: Any) -> None:
    # Was a silent change: {"id": inf} in a chat message's unmodelled fields was stored, and a
    # session store wrote it as null, so it loaded back as None.
    memory = InMemoryMemory()
    with pytest.raises(ConfigError, match="not a JSON number"):
        memory.add_output_items([{"role": "user", "content": "user", "id": value}])
    assert memory.snapshot().items == ()
