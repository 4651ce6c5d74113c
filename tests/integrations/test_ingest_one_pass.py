"""``MessageCompactor`` reads a call's new messages in one pass (call19): each message's items,
the flat list the memory stores, and whether every message was a plain dict (whose items the
memory may number in place). Every message is read, in order, whatever its position among the
new ones, and an object the caller still holds is never changed by the call."""

from __future__ import annotations

from compactkit.integrations import MessageCompactor
from compactkit.items import FunctionCallOutput, Message


def test_objects_among_dicts_are_read_in_place_and_left_unchanged() -> None:
    compactor = MessageCompactor("gpt-4o")
    mine = Message(role="user", content="an item object the caller keeps")
    messages: list[object] = [{"role": "user", "content": "start"}]
    compactor(messages)
    for position in range(3):  # the object first, in the middle, last among the new messages
        new: list[object] = [{"role": "assistant", "content": f"reply {position}"}] * 2
        new = [dict(message) for message in new]  # type: ignore[arg-type]
        new.insert(position, mine.model_copy())
        messages = [*messages, *new]
        result = compactor(messages)
        assert all(getattr(m, "seq", None) is None for m in messages if not isinstance(m, dict))
        assert result.send[-3:] == new
    assert mine.seq is None


def test_dict_messages_are_sent_as_given_and_counted_once_each() -> None:
    compactor = MessageCompactor("gpt-4o")
    messages: list[dict[str, object]] = [{"role": "system", "content": "be brief"}]
    for turn in range(6):
        call = {
            "id": f"call_{turn % 2}",
            "type": "function",
            "function": {"name": "f", "arguments": "{}"},
        }
        messages = [
            *messages,
            {"role": "user", "content": f"question {turn}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": f"answer {turn}"},
        ]
        result = compactor(messages)
        again = MessageCompactor("gpt-4o")(messages)  # a compactor reading it all at once
        assert result.send == again.send == messages
        assert result.tokens == again.tokens
        assert result.history is messages


def test_an_output_item_object_keeps_its_fields() -> None:
    compactor = MessageCompactor("gpt-4o")
    output = FunctionCallOutput(call_id="c1", output="done")
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        output,
    ]
    compactor(messages)
    assert output.seq is None and output.call_id == "c1"
