"""``add_output_items`` takes the SDK objects as the OpenAI and Anthropic clients return them."""

from __future__ import annotations

import anthropic.types as anthropic_types
import pytest
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from compactkit import ConfigError, FunctionCall, InMemoryMemory, Message, items_to_chat
from compactkit.formats import items_to_anthropic, items_to_responses
from compactkit.items import Reasoning

CHAT = ChatCompletion.model_validate(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "refusal": None,
                    "annotations": [],
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                        }
                    ],
                },
            }
        ],
    }
)

RESPONSE = Response.model_validate(
    {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-4.1",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "adding", "annotations": []}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "add",
                "arguments": '{"a":2,"b":3}',
                "status": "completed",
            },
        ],
    }
)

ANTHROPIC = anthropic_types.Message.model_validate(
    {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "add them", "signature": "sig"},
            {"type": "text", "text": "adding"},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
)


def test_chat_completion_message_is_stored_as_its_calls() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("2+3?")
    memory.add_output_items([CHAT.choices[0].message])
    memory.add_tool_output("call_1", "5")
    calls = [i for i in memory.items if isinstance(i, FunctionCall)]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        ("call_1", "add", '{"a": 2, "b": 3}')
    ]
    # Written back, it is a request the Chat API accepts: no response-only fields.
    chat = items_to_chat(memory.items)
    assert chat[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    }


def test_responses_output_items_round_trip() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("2+3?")
    memory.add_output_items(RESPONSE.output)
    kinds = [type(i).__name__ for i in memory.items]
    assert kinds == ["Message", "Reasoning", "Message", "FunctionCall"]
    reasoning = memory.items[1]
    assert isinstance(reasoning, Reasoning) and reasoning.payload["encrypted_content"] == "opaque"
    sent = items_to_responses(memory.items)
    assert sent[3]["call_id"] == "call_1" and sent[3]["id"] == "fc_1"
    assert sent[2]["content"] == [{"type": "output_text", "text": "adding", "annotations": []}]


@pytest.mark.parametrize("shape", ["blocks", "message", "dict"])
def test_anthropic_blocks_become_one_assistant_turn(shape: str) -> None:
    values: list[object] = {
        "blocks": list(ANTHROPIC.content),
        "message": [ANTHROPIC],
        "dict": [{"role": "assistant", "content": ANTHROPIC.content}],
    }[shape]
    memory = InMemoryMemory()
    memory.add_user_input("2+3?")
    memory.add_output_items(values)
    memory.add_tool_output("toolu_1", "5")
    assert [type(i).__name__ for i in memory.items] == [
        "Message",
        "Reasoning",
        "Message",
        "FunctionCall",
        "FunctionCallOutput",
    ]
    prompt = items_to_anthropic(memory.items)
    assert [m["role"] for m in prompt.messages] == ["user", "assistant", "user"]
    assert prompt.messages[1]["content"][0]["signature"] == "sig"
    assert prompt.messages[1]["content"][2]["input"] == {"a": 2, "b": 3}


def test_plain_text_chat_reply_keeps_its_text() -> None:
    reply = ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "5", "refusal": None},
                }
            ],
        }
    )
    memory = InMemoryMemory()
    memory.add_output_items([reply.choices[0].message])
    assert memory.items == [Message(role="assistant", content="5", seq=1)]


def test_a_single_sdk_object_asks_for_a_list() -> None:
    with pytest.raises(ConfigError, match="wrap it in a list"):
        InMemoryMemory().add_output_items(CHAT.choices[0].message)  # type: ignore[arg-type]


def test_an_sdk_item_compactkit_does_not_model_is_a_config_error_naming_it() -> None:
    search = Response.model_validate(
        {
            **RESPONSE.model_dump(mode="json", exclude_none=True),
            "output": [
                {
                    "type": "web_search_call",
                    "id": "ws_1",
                    "status": "completed",
                    "action": {"type": "search", "query": "x"},
                }
            ],
        }
    )
    memory = InMemoryMemory()
    with pytest.raises(ConfigError, match=r"output item 0 \(responses SDK object\).*web_search"):
        memory.add_output_items(search.output)
    assert memory.items == []
