"""The OpenAI Responses adapter and validator, on payloads shaped like the API's own."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from compactkit.errors import FormatError
from compactkit.formats.chat import items_to_chat, tools_from_chat, tools_to_chat
from compactkit.formats.responses import (
    items_to_responses,
    responses_to_items,
    tools_from_responses,
    tools_to_responses,
)
from compactkit.formats.validate import validate_items, validate_responses
from compactkit.items import (
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    RawPart,
    Reasoning,
    TextPart,
)
from compactkit.items.snapshot import SUMMARY_NAME, MemorySnapshot, summary_message

REASONING: dict[str, Any] = {
    "type": "reasoning",
    "id": "rs_6820f383d7c08191846711c5df8233bc",
    "summary": [{"type": "summary_text", "text": "**Checking the weather**"}],
    "encrypted_content": "gAAAAABoISQ24OyVRYbkYfukeg...",
}
CALL: dict[str, Any] = {
    "type": "function_call",
    "id": "fc_12345xyz",
    "call_id": "call_12345xyz",
    "name": "get_weather",
    "arguments": '{"location":"Paris, France"}',
    "status": "completed",
}
CONVERSATION: list[dict[str, Any]] = [
    {"type": "message", "role": "developer", "content": "Talk like a pirate."},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is the weather like in Paris today?"},
            {"type": "input_image", "image_url": "https://x.example/paris.jpg", "detail": "low"},
            {"type": "input_file", "file_id": "file-6F2ksmvXxt4VdoqmHRw6kL"},
        ],
    },
    REASONING,
    CALL,
    {"type": "function_call_output", "call_id": "call_12345xyz", "output": "15°C, sunny"},
    {
        "id": "msg_67ccd3acc8d48190a77525dc6de64b4104becb25c95c1d41",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "phase": "final_answer",
        "content": [
            {"type": "output_text", "text": "Arr, 'tis 15°C and sunny!", "annotations": []},
            {"type": "refusal", "refusal": "I won't say more."},
        ],
    },
]


def test_round_trip_preserves_every_item_exactly() -> None:
    original = copy.deepcopy(CONVERSATION)
    assert items_to_responses(responses_to_items(CONVERSATION)) == CONVERSATION
    assert original == CONVERSATION


def test_items_are_what_the_payload_says() -> None:
    developer, user, reasoning, call, output, answer = responses_to_items(CONVERSATION)
    assert developer == Message(role="developer", content="Talk like a pirate.")
    assert isinstance(user, Message)
    assert user.content[:2] == (
        TextPart(text="What is the weather like in Paris today?"),
        ImagePart(url="https://x.example/paris.jpg", detail="low"),
    )
    assert user.content[2] == RawPart(format="responses", data=CONVERSATION[1]["content"][2])
    assert reasoning == Reasoning(id=REASONING["id"], format="responses", payload=REASONING)
    assert reasoning.text == "**Checking the weather**"
    assert isinstance(call, FunctionCall)
    assert (call.id, call.call_id, call.arguments) == (
        "fc_12345xyz",
        "call_12345xyz",
        CALL["arguments"],
    )
    assert output == FunctionCallOutput(call_id="call_12345xyz", output="15°C, sunny")
    assert isinstance(answer, Message)
    assert answer.id == CONVERSATION[5]["id"]
    assert answer.text == "Arr, 'tis 15°C and sunny!"


def test_easy_messages_and_string_input_are_read() -> None:
    assert responses_to_items("Hello!") == [Message(role="user", content="Hello!")]
    items = responses_to_items([{"role": "user", "content": "Hi"}])
    assert items == [Message(role="user", content="Hi")]
    # Written back with the explicit type the API returns.
    assert items_to_responses(items) == [{"type": "message", "role": "user", "content": "Hi"}]


def test_text_parts_follow_the_role_of_their_message() -> None:
    items: list[Item] = [
        Message(role="user", content=(TextPart(text="q"), TextPart(text="r"))),
        Message(role="assistant", content=(TextPart(text="a"),)),
    ]
    user, assistant = items_to_responses(items)
    assert [p["type"] for p in user["content"]] == ["input_text", "input_text"]
    assert assistant["content"] == [{"type": "output_text", "text": "a", "annotations": []}]


def test_text_with_annotations_is_carried_untouched() -> None:
    cited = {
        "type": "output_text",
        "text": "See the docs.",
        "annotations": [
            {
                "type": "url_citation",
                "start_index": 0,
                "end_index": 3,
                "url": "https://x",
                "title": "x",
            }
        ],
    }
    message = {"type": "message", "role": "assistant", "content": [cited]}
    (item,) = responses_to_items([message])
    assert isinstance(item, Message)
    assert item.content == (RawPart(format="responses", data=cited),)
    assert items_to_responses([item]) == [message]


def test_the_summary_is_a_marked_message_and_reads_back_as_the_summary() -> None:
    items = MemorySnapshot.of(
        [Message(role="system", content="Be terse."), Message(role="user", content="Go on")],
        summary="## Goal\nShip v2",
    ).render_items(summary_role="user")
    written = items_to_responses(items)
    sealed = summary_message("## Goal\nShip v2", "user").text
    assert sealed.startswith(f'<{SUMMARY_NAME} sig="') and "\n## Goal\nShip v2\n" in sealed
    assert written[1] == {"type": "message", "role": "user", "content": sealed}
    read = responses_to_items(written)
    assert read[1] == summary_message("## Goal\nShip v2", "user")
    assert MemorySnapshot.from_items(read).summary == "## Goal\nShip v2"


def test_other_item_types_are_rejected_with_their_index() -> None:
    web_search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    with pytest.raises(FormatError, match=r"input item 1: item type 'web_search_call'"):
        responses_to_items([{"role": "user", "content": "hi"}, web_search])


@pytest.mark.parametrize(
    ("item", "fragment"),
    [
        ({"type": "function_call", "name": "f", "arguments": "{}"}, "call_id"),
        ({"type": "function_call", "call_id": "c", "arguments": "{}"}, "'name'"),
        ({"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}, "JSON string"),
        ({"type": "function_call_output", "call_id": "c"}, "'output'"),
        ({"type": "message", "role": "tool", "content": "x"}, "unknown role 'tool'"),
        ({"type": "message", "role": "user"}, "needs 'content'"),
    ],
)
def test_malformed_items_say_what_to_fix(item: dict[str, Any], fragment: str) -> None:
    with pytest.raises(FormatError, match="input item 0") as info:
        responses_to_items([item])
    assert fragment in str(info.value)


def test_anthropic_thinking_is_refused_or_dropped_and_reported() -> None:
    thinking = Reasoning(
        format="anthropic", payload={"type": "thinking", "thinking": "hmm", "signature": "EqQB"}
    )
    items: list[Item] = [
        Message(role="user", content="hi"),
        thinking,
        Message(role="assistant", content="yo"),
    ]
    with pytest.raises(FormatError, match=r"reasoning item .from 'anthropic'.*lossy=True"):
        items_to_responses(items)
    dropped: list[tuple[Any, str]] = []
    written = items_to_responses(items, lossy=True, on_drop=lambda i, why: dropped.append((i, why)))
    assert [m["role"] for m in written] == ["user", "assistant"]
    assert dropped == [(thinking, "responses cannot express a reasoning item from 'anthropic'")]


def test_chat_fields_responses_has_not_are_losses() -> None:
    named = Message(role="user", content="hi", name="alice")
    with pytest.raises(FormatError, match="participant name"):
        items_to_responses([named])
    failed = FunctionCallOutput(call_id="c", output="boom", is_error=True)
    with pytest.raises(FormatError, match="is_error"):
        items_to_responses([failed])
    # Provider bookkeeping (status) and empty chat fields are not losses.
    from_chat = items_to_chat([Message(role="assistant", content="x", extra={"refusal": None})])
    assert from_chat == [{"role": "assistant", "content": "x", "refusal": None}]
    assert items_to_responses([Message(role="assistant", content="x", extra={"refusal": None})])


def test_tools_round_trip_and_keep_their_strictness_across_formats() -> None:
    tools: list[dict[str, Any]] = [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Get current temperature for a given location.",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
                "additionalProperties": False,
            },
            "strict": True,
        },
        {"type": "function", "name": "now", "parameters": None},
    ]
    assert tools_to_responses(tools_from_responses(tools)) == tools
    chat = tools_to_chat(tools_from_responses(tools))
    assert chat[0]["function"]["strict"] is True
    assert "strict" not in chat[1]["function"]  # implicit strict mode is not carried
    # A chat tool is non-strict; Responses would make it strict unless told.
    back = tools_to_responses(tools_from_chat([{"type": "function", "function": {"name": "f"}}]))
    assert back == [{"type": "function", "name": "f", "parameters": None, "strict": False}]
    with pytest.raises(FormatError, match="only function tools"):
        tools_from_responses([{"type": "web_search"}])
    with pytest.raises(FormatError, match=r"tool 0: 'parameters' must be a JSON schema object"):
        tools_from_responses([{"type": "function", "name": "f", "parameters": [1]}])
    with pytest.raises(FormatError, match=r"tool 0: 'description' must be a string"):
        tools_from_responses([{"type": "function", "name": "f", "description": 3}])


@pytest.mark.parametrize("summary", [5, "text", {"text": "x"}, None])
def test_a_reasoning_item_with_a_malformed_summary_stays_opaque(summary: Any) -> None:
    (item,) = responses_to_items([{"type": "reasoning", "id": "rs_1", "summary": summary}])
    assert isinstance(item, Reasoning) and item.text == ""
    assert items_to_responses([item]) == [{"type": "reasoning", "id": "rs_1", "summary": summary}]


def test_validator_accepts_a_valid_prompt_as_is() -> None:
    assert validate_responses(CONVERSATION) == (CONVERSATION, [])


def test_validator_raises_listing_every_problem() -> None:
    broken: list[dict[str, Any]] = [
        {"type": "function_call_output", "call_id": "ghost", "output": "?"},
        REASONING,
        {"role": "user", "content": "wait"},
        CALL,
    ]
    with pytest.raises(FormatError) as info:
        validate_responses(broken)
    message = str(info.value)
    assert "'ghost'" in message
    assert "reasoning" in message
    assert "'call_12345xyz'" in message


def test_validator_repairs_pairs_and_detached_reasoning() -> None:
    output = {"type": "function_call_output", "call_id": "call_12345xyz", "output": "15°C"}
    broken: list[dict[str, Any]] = [
        {"role": "user", "content": "weather?"},
        output,  # before its call
        REASONING,
        {"role": "user", "content": "hello?"},  # separates the reasoning from its call
        CALL,
        output,  # a second answer
        {"type": "function_call_output", "call_id": "ghost", "output": "?"},
        {**CALL, "id": "fc_2", "call_id": "call_2"},  # never answered
    ]
    repaired, problems = validate_responses(broken, mode="repair")
    assert {p.kind for p in problems} == {
        "missing_output",
        "duplicate_output",
        "orphan_output",
        "detached_reasoning",
    }
    assert repaired == [broken[0], broken[3], CALL, broken[5]]
    assert validate_responses(repaired) == (repaired, [])


def test_reasoning_followed_by_its_message_is_valid() -> None:
    items = responses_to_items([REASONING, CONVERSATION[5]])
    assert validate_items(items, format="responses") == (items, [])
    with pytest.raises(FormatError, match=r"not followed by the call"):
        validate_items(items[:1], format="responses")
