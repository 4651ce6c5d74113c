"""The Chat Completions adapter and validator."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.errors import FormatError
from compactkit.formats.chat import (
    chat_to_items,
    items_to_chat,
    tools_from_chat,
    tools_to_chat,
    validate_chat,
)
from compactkit.items import Reasoning


def tool_call(cid: str, name: str = "read_file", args: str = '{"path": "a.py"}') -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the bug", "name": "alice"},
    {"role": "assistant", "content": None, "tool_calls": [tool_call("c1"), tool_call("c2")]},
    {"role": "tool", "tool_call_id": "c1", "content": "print(1)", "name": "read_file"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "ok"}]},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "see screenshot"},
            {"type": "image_url", "image_url": {"url": "https://x/s.png", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}},
        ],
    },
    {"role": "assistant", "content": "Done.", "refusal": None, "annotations": []},
]


def test_round_trip_preserves_everything_a_message_carries() -> None:
    original = copy.deepcopy(CONVERSATION)
    assert items_to_chat(chat_to_items(CONVERSATION)) == CONVERSATION
    assert original == CONVERSATION  # input untouched


def test_tools_round_trip() -> None:
    tools = [
        {
            "type": "function",
            "function": {"name": "f", "description": "d", "parameters": {}, "strict": True},
        }
    ]
    assert tools_to_chat(tools_from_chat(tools)) == tools


@pytest.mark.parametrize(
    ("tool", "fragment"),
    [
        (5, "expected {'type': 'function'"),
        ({"type": "function", "function": {"name": "f", "parameters": 5}}, "'parameters'"),
        ({"type": "function", "function": {"name": "f", "description": ["d"]}}, "'description'"),
    ],
)
def test_bad_tools_are_a_format_error_naming_the_tool(tool: Any, fragment: str) -> None:
    with pytest.raises(FormatError, match="tool 1") as info:
        tools_from_chat([{"type": "function", "function": {"name": "ok"}}, tool])
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"role": "wizard", "content": "x"}, "unknown role 'wizard'"),
        ({"role": "tool", "content": "x"}, "tool_call_id"),
        ({"role": "function", "name": "f", "content": "x"}, "legacy 'function'"),
        ({"role": "user"}, "needs 'content'"),
        ({"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}, "function.name"),
    ],
)
def test_bad_messages_are_rejected_with_what_to_fix(message: dict[str, Any], fragment: str) -> None:
    with pytest.raises(FormatError, match="message 1") as info:
        chat_to_items([{"role": "user", "content": "hi"}, message])
    assert fragment in str(info.value)


def test_reasoning_is_an_error_unless_lossy_and_then_reported() -> None:
    items = [Reasoning(id="rs_9", format="responses", payload={"type": "reasoning", "id": "rs_9"})]
    with pytest.raises(FormatError, match="rs_9"):
        items_to_chat(items)
    dropped: list[str] = []
    assert items_to_chat(items, lossy=True, on_drop=lambda item, why: dropped.append(why)) == []
    assert len(dropped) == 1


def test_validator_raises_on_orphans_and_missing_outputs() -> None:
    broken = [CONVERSATION[0], CONVERSATION[1], CONVERSATION[2], CONVERSATION[3]]
    broken.append({"role": "tool", "tool_call_id": "ghost", "content": "?"})
    with pytest.raises(FormatError) as info:
        validate_chat(broken)
    assert "'c2'" in str(info.value)
    assert "'ghost'" in str(info.value)


def test_validator_repair_drops_unanswered_calls_and_orphans() -> None:
    broken = [*CONVERSATION[:4], {"role": "tool", "tool_call_id": "ghost", "content": "?"}]
    repaired, problems = validate_chat(broken, mode="repair")
    assert {p.kind for p in problems} == {"missing_output", "orphan_output"}
    assert repaired[2]["tool_calls"] == [tool_call("c1")]
    assert [m.get("tool_call_id") for m in repaired if m["role"] == "tool"] == ["c1"]
    assert validate_chat(repaired)[1] == []


def test_validator_repair_moves_a_late_answer_next_to_its_call() -> None:
    late = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [tool_call("c1")]},
        {"role": "assistant", "content": "thinking out loud"},
        {"role": "tool", "tool_call_id": "c1", "content": "result"},
    ]
    repaired, problems = validate_chat(late, mode="repair")
    assert [m["role"] for m in repaired] == ["user", "assistant", "tool", "assistant"]
    assert problems


def test_valid_prompt_is_returned_as_is() -> None:
    messages, problems = validate_chat(CONVERSATION)
    assert problems == []
    assert messages == CONVERSATION


@st.composite
def chat_conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    text = st.text(max_size=20)
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(text)})
    next_id = 0
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["user", "assistant", "tools"]))
        if kind == "user":
            messages.append({"role": "user", "content": draw(text)})
        elif kind == "assistant":
            messages.append({"role": "assistant", "content": draw(text)})
        else:
            ids = [f"call_{next_id + i}" for i in range(draw(st.integers(1, 3)))]
            next_id += len(ids)
            # An assistant text message directly followed by a content-less tool-call message
            # reads back as one message with both: the documented normalisation.
            after_text = bool(messages) and messages[-1]["role"] == "assistant"
            content = draw(text if after_text else st.one_of(st.none(), text))
            messages.append(
                {"role": "assistant", "content": content, "tool_calls": [tool_call(i) for i in ids]}
            )
            messages.extend({"role": "tool", "tool_call_id": i, "content": draw(text)} for i in ids)
    return messages


@settings(deadline=None, max_examples=200)
@given(chat_conversations())
def test_any_valid_conversation_round_trips_and_validates(messages: list[dict[str, Any]]) -> None:
    assert items_to_chat(chat_to_items(messages)) == messages
    assert validate_chat(messages)[1] == []
