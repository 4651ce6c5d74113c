"""The Anthropic Messages adapter and validator, on payloads shaped like the API's own."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from compactkit.errors import FormatError
from compactkit.formats.anthropic import (
    anthropic_to_items,
    items_to_anthropic,
    tools_from_anthropic,
    tools_to_anthropic,
)
from compactkit.formats.chat import chat_to_items, tools_to_chat
from compactkit.formats.validate import validate_anthropic, validate_items
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
from compactkit.items.snapshot import MemorySnapshot, summary_message

SYSTEM: list[dict[str, Any]] = [
    {"type": "text", "text": "You are an AI assistant tasked with analyzing literary works."},
    {"type": "text", "text": "<Pride and Prejudice>", "cache_control": {"type": "ephemeral"}},
]
THINKING: dict[str, Any] = {
    "type": "thinking",
    "thinking": "The user wants the weather in Paris. I have get_weather.",
    "signature": "BDaL4VrbR2Oj0hO4XpJxT28J5TILnCrrUXoKiiNBZW9P+nr8XSj1zuZzAl4egiCCpQNvfyUuFF",
}
REDACTED: dict[str, Any] = {
    "type": "redacted_thinking",
    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw",
}
TOOL_USE: dict[str, Any] = {
    "type": "tool_use",
    "id": "toolu_01CswdEQBMshySk6Y9DFKrfq",
    "name": "get_weather",
    "input": {"location": "Paris"},
}
PHOTO: dict[str, Any] = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQSkZJRg"},
}
MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "What's the weather in Paris and in Lyon?"},
    {
        "role": "assistant",
        "content": [
            THINKING,
            {"type": "text", "text": "Let me check both."},
            TOOL_USE,
            {
                "type": "tool_use",
                "id": "toolu_02",
                "name": "get_weather",
                "input": {"location": "Lyon"},
            },
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01CswdEQBMshySk6Y9DFKrfq",
                "content": "Current temperature: 88°F",
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_02",
                "content": [{"type": "text", "text": "Station offline"}, PHOTO],
                "is_error": True,
                "cache_control": {"type": "ephemeral"},
            },
            {"type": "text", "text": "Use Celsius please."},
        ],
    },
    {"role": "assistant", "content": [REDACTED, {"type": "text", "text": "Paris: 31°C."}]},
    {"role": "user", "content": [{"type": "text", "text": "Thanks"}, PHOTO]},
]


def test_round_trip_preserves_system_messages_and_blocks_exactly() -> None:
    original = copy.deepcopy(MESSAGES)
    system, messages = items_to_anthropic(anthropic_to_items(MESSAGES, system=SYSTEM))
    assert (system, messages) == (SYSTEM, MESSAGES)
    assert original == MESSAGES
    assert items_to_anthropic(anthropic_to_items(MESSAGES, system="Be terse.")).system == (
        "Be terse."
    )


def test_turns_split_into_calls_results_reasoning_and_messages() -> None:
    items = anthropic_to_items(MESSAGES, system=SYSTEM)
    assert items[0] == Message(
        role="system",
        content=(TextPart(text=SYSTEM[0]["text"]), RawPart(format="anthropic", data=SYSTEM[1])),
    )
    assert [type(i).__name__ for i in items[1:]] == [
        "Message",
        "Reasoning",
        "Message",
        "FunctionCall",
        "FunctionCall",
        "FunctionCallOutput",
        "FunctionCallOutput",
        "Message",
        "Reasoning",
        "Message",
        "Message",
    ]
    assert items[2] == Reasoning(format="anthropic", payload=THINKING)
    assert items[3] == Message(role="assistant", content="Let me check both.")
    assert items[4] == FunctionCall(
        call_id="toolu_01CswdEQBMshySk6Y9DFKrfq",
        name="get_weather",
        arguments='{"location":"Paris"}',
    )
    failed = items[7]
    assert isinstance(failed, FunctionCallOutput)
    assert failed.is_error is True
    assert failed.output == (
        TextPart(text="Station offline"),
        ImagePart(url="data:image/jpeg;base64,/9j/4AAQSkZJRg"),
    )
    assert failed.extra == {"__format__": "anthropic", "cache_control": {"type": "ephemeral"}}
    assert items[8] == Message(role="user", content="Use Celsius please.")


def test_chat_conversation_becomes_alternating_messages_with_results_first() -> None:
    chat: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "developer", "content": "Never push to main."},
        {"role": "user", "content": "Fix the bug"},
        {
            "role": "assistant",
            "content": "Reading both files.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
        {"role": "tool", "tool_call_id": "c2", "content": "b"},
        {"role": "user", "content": "Also check c.py"},
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://x/s.png"}}],
        },
    ]
    system, messages = items_to_anthropic(chat_to_items(chat))
    assert system == [
        {"type": "text", "text": "You are a coding agent."},
        {"type": "text", "text": "Never push to main."},
    ]
    assert messages == [
        {"role": "user", "content": "Fix the bug"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading both files."},
                {"type": "tool_use", "id": "c1", "name": "read", "input": {}},
                {"type": "tool_use", "id": "c2", "name": "read", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "a"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "b"},
                {"type": "text", "text": "Also check c.py"},
                {"type": "image", "source": {"type": "url", "url": "https://x/s.png"}},
            ],
        },
    ]
    assert validate_anthropic(messages)[1] == []


@pytest.mark.parametrize("role", ["system", "user"])
def test_the_summary_is_marked_text_and_reads_back_as_the_summary(role: Any) -> None:
    snapshot = MemorySnapshot.of(
        [Message(role="system", content="Be terse."), Message(role="user", content="Go on")],
        summary="## Goal\nShip v2",
    )
    system, messages = items_to_anthropic(snapshot.render_items(summary_role=role))
    marked = summary_message("## Goal\nShip v2", role).text  # the sealed text, written as is
    if role == "system":
        assert system == f"Be terse.\n\n{marked}"
        assert messages == [{"role": "user", "content": "Go on"}]
    else:
        assert system == "Be terse."
        assert messages == [
            {
                "role": "user",
                "content": [{"type": "text", "text": marked}, {"type": "text", "text": "Go on"}],
            }
        ]
    items = anthropic_to_items(messages, system=system)
    assert summary_message("## Goal\nShip v2", role) in items
    assert MemorySnapshot.from_items(items) == snapshot


def test_openai_reasoning_is_refused_or_dropped_and_reported() -> None:
    reasoning = Reasoning(
        id="rs_1", format="responses", payload={"type": "reasoning", "id": "rs_1", "summary": []}
    )
    items: list[Item] = [
        Message(role="user", content="hi"),
        reasoning,
        Message(role="assistant", content="yo"),
    ]
    with pytest.raises(FormatError, match=r"reasoning item \(from 'responses', id='rs_1'\)"):
        items_to_anthropic(items)
    dropped: list[str] = []
    prompt = items_to_anthropic(items, lossy=True, on_drop=lambda i, why: dropped.append(why))
    assert prompt.messages == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
    ]
    assert dropped == ["anthropic cannot express a reasoning item from 'responses'"]


def test_a_call_whose_arguments_are_not_an_object_goes_with_its_output() -> None:
    items: list[Item] = [
        Message(role="user", content="go"),
        FunctionCall(call_id="c1", name="f", arguments="not json"),
        FunctionCallOutput(call_id="c1", output="?"),
        Message(role="assistant", content="done"),
    ]
    with pytest.raises(FormatError, match=r"call_id='c1'.*not a JSON object"):
        items_to_anthropic(items)
    dropped: list[Any] = []
    prompt = items_to_anthropic(items, lossy=True, on_drop=lambda i, why: dropped.append(i))
    assert dropped == items[1:3]
    assert prompt.messages == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "done"},
    ]


@pytest.mark.parametrize(
    ("item", "fragment"),
    [
        (Message(role="system", content="late rule"), "system message after"),
        (Message(role="user", content="hi", name="alice"), "participant name"),
        (
            Message(role="user", content=(ImagePart(url="https://x/a.png", detail="high"),)),
            "image detail",
        ),
        (
            Message(
                role="user",
                content=(RawPart(format="chat", data={"type": "input_audio", "input_audio": {}}),),
            ),
            "'input_audio' content part",
        ),
        (
            Message(
                role="assistant",
                content="x",
                extra={"__format__": "responses", "phase": "commentary"},
            ),
            "the responses field 'phase'",
        ),
    ],
)
def test_what_anthropic_cannot_express_is_named(item: Message, fragment: str) -> None:
    with pytest.raises(FormatError, match="lossy") as info:
        items_to_anthropic([Message(role="user", content="start"), item])
    assert fragment in str(info.value)


def test_a_foreign_text_part_keeps_its_text_when_lossy() -> None:
    cited = RawPart(
        format="responses", data={"type": "output_text", "text": "42", "annotations": [1]}
    )
    dropped: list[str] = []
    prompt = items_to_anthropic(
        [Message(role="assistant", content=(cited, TextPart(text="!")))],
        lossy=True,
        on_drop=lambda i, why: dropped.append(why),
    )
    assert prompt.messages[0]["content"] == [
        {"type": "text", "text": "42"},
        {"type": "text", "text": "!"},
    ]
    assert dropped == [
        "anthropic cannot express the fields ['annotations'] of a responses text part"
    ]


@pytest.mark.parametrize(
    ("message", "fragment"),
    [
        ({"role": "system", "content": "x"}, "unknown role 'system'"),
        ({"role": "user", "content": [TOOL_USE]}, "'tool_use' block cannot be in a user message"),
        ({"role": "user", "content": "x", "id": "msg_1"}, "only 'role' and 'content'"),
        (
            {"role": "assistant", "content": [{**TOOL_USE, "input": "x"}]},
            "'input' must be an object",
        ),
        ({"role": "user", "content": [{"type": "tool_result"}]}, "tool_use_id"),
    ],
)
def test_malformed_messages_say_what_to_fix(message: dict[str, Any], fragment: str) -> None:
    with pytest.raises(FormatError, match="message 1") as info:
        anthropic_to_items([{"role": "user", "content": "hi"}, message])
    assert fragment in str(info.value)


def test_tools_round_trip_and_cross_formats() -> None:
    tools: list[dict[str, Any]] = [
        {
            "name": "get_weather",
            "description": "Get the current weather in a given location",
            "input_schema": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
            },
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "bash_20250124", "name": "bash"},
    ]
    assert tools_to_anthropic(tools_from_anthropic(tools)) == tools
    with pytest.raises(FormatError, match=r"tool 'get_weather'.*cache_control"):
        tools_to_chat(tools_from_anthropic(tools))
    dropped: list[str] = []
    chat = tools_to_chat(
        tools_from_anthropic(tools), lossy=True, on_drop=lambda t, why: dropped.append(t.name)
    )
    assert chat[0]["function"]["parameters"] == tools[0]["input_schema"]
    assert dropped == ["get_weather", "bash"]
    with pytest.raises(FormatError, match=r"tool 0: 'input_schema' must be a JSON schema object"):
        tools_from_anthropic([{"name": "f", "input_schema": "object"}])
    with pytest.raises(FormatError, match=r"tool 0: 'description' must be a string"):
        tools_from_anthropic([{"name": "f", "description": {"text": "d"}}])


def test_validator_accepts_a_valid_conversation_as_is() -> None:
    assert validate_anthropic(MESSAGES) == (MESSAGES, [])


def test_validator_raises_listing_every_problem() -> None:
    broken: list[dict[str, Any]] = [
        {"role": "user", "content": "weather?"},
        {"role": "user", "content": "hello?"},
        {"role": "assistant", "content": [TOOL_USE]},
        {"role": "user", "content": "no results here"},
        {"role": "assistant", "content": "..."},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "ghost", "content": "?"}],
        },
    ]
    with pytest.raises(FormatError) as info:
        validate_anthropic(broken)
    message = str(info.value)
    assert "message 1: two messages in a row have the same role" in message
    assert "message 2: call has no output" in message
    assert "message 5: tool output answers no call" in message


def test_validator_repairs_into_alternating_messages_with_results_first() -> None:
    late = {"type": "tool_result", "tool_use_id": TOOL_USE["id"], "content": "88°F"}
    broken: list[dict[str, Any]] = [
        {"role": "user", "content": "weather?"},
        {"role": "user", "content": "in Paris"},
        {"role": "assistant", "content": [THINKING, TOOL_USE]},
        {"role": "user", "content": [{"type": "text", "text": "hurry"}, late]},
        {"role": "assistant", "content": [REDACTED]},  # thinking with nothing to belong to
        {"role": "user", "content": "thanks"},
    ]
    repaired, problems = validate_anthropic(broken, mode="repair")
    assert [p.kind for p in problems] == [
        "consecutive_role",
        "result_not_first",
        "detached_reasoning",
    ]
    assert repaired == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "weather?"}, {"type": "text", "text": "in Paris"}],
        },
        {"role": "assistant", "content": [THINKING, TOOL_USE]},
        {
            "role": "user",
            "content": [
                late,
                {"type": "text", "text": "hurry"},
                {"type": "text", "text": "thanks"},
            ],
        },
    ]
    assert validate_anthropic(repaired) == (repaired, [])


def test_validator_moves_a_result_into_the_turn_after_its_call() -> None:
    items: list[Item] = [
        Message(role="user", content="go"),
        FunctionCall(call_id="c1", name="f"),
        Message(role="user", content="status?"),
        Message(role="assistant", content="working"),
        FunctionCallOutput(call_id="c1", output="ok"),
    ]
    repaired, problems = validate_items(items, format="anthropic", mode="repair")
    assert [p.kind for p in problems] == ["missing_output"]
    assert repaired == [items[0], items[1], items[4], items[2], items[3]]


def test_validator_names_a_malformed_message_by_its_index() -> None:
    broken = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": 7}]
    with pytest.raises(FormatError, match=r"^message 1: 'content' must be a string"):
        validate_anthropic(broken)
