"""Appending the whole SDK response instead of its items is a ``FormatError`` that says which
part to pass (``response.choices[0].message``, ``response.output``), not "unknown role None"."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from compactkit import InMemoryMemory
from compactkit.errors import FormatError

COMPLETION = ChatCompletion.model_validate(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "done"},
            }
        ],
    }
)
RESPONSE = Response.model_validate(
    {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-4o",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "done", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
)


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        (COMPLETION, r"response\.choices\[0\]\.message"),
        (COMPLETION.choices[0], r"choice\.message"),
        (RESPONSE, r"response\.output"),
    ],
    ids=["ChatCompletion", "Choice", "Response"],
)
def test_a_whole_response_says_what_to_pass(value: object, hint: str) -> None:
    memory = InMemoryMemory()
    memory.add_user_input("hi")
    with pytest.raises(FormatError, match=hint):
        memory.add_output_items([value])
    assert len(memory.snapshot().items) == 1  # nothing was stored


def test_the_parts_named_are_accepted() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("hi")
    memory.add_output_items([COMPLETION.choices[0].message])
    memory.add_user_input("again")
    memory.add_output_items(RESPONSE.output)
    assert [getattr(i, "role", None) for i in memory.snapshot().items] == [
        "user", "assistant", "user", "assistant",
    ]  # fmt: skip
