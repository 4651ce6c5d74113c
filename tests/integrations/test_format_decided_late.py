"""A conversation whose format is decided late (plain text messages read the same in every format,
until an Anthropic tool_use block arrives) is written in its format from then on, whole: what
was converted in the format assumed before is not resumed, and each prompt is the one the same
list gets when nothing was converted before."""

from __future__ import annotations

import json
from typing import Any

from compactkit.integrations import MessageCompactor, compact_messages

MODEL = "claude-sonnet-4-5"
TOOL_ROUND = [
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "tu1", "name": "bash", "input": {"command": "ls"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "a.py"}]},
]


def _plain_turns(n: int, size: int = 1) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the bug in src/app.py."}]
    for k in range(n):
        messages += [
            {"role": "assistant", "content": f"looking {k} " + "details " * size},
            {"role": "user", "content": f"ok {k}"},
        ]
    return messages


def test_plain_calls_then_a_tool_use_block_send_the_whole_conversation() -> None:
    compactor = MessageCompactor(MODEL)
    messages = _plain_turns(0)
    for k in range(3):
        turn = compactor(messages)
        assert compactor.format is None  # (plain text: not decided yet)
        messages = [*turn.history, *_plain_turns(k + 1)[-2:]]
    messages = [*messages, *TOOL_ROUND]
    turn = compactor(messages)
    fresh = MessageCompactor(MODEL)(messages)
    assert turn.format == "anthropic"
    assert json.dumps(turn.send) == json.dumps(fresh.send)
    assert turn.send[0]["content"] == "Fix the bug in src/app.py."


def test_the_same_through_compact_messages() -> None:
    messages = _plain_turns(0)
    for k in range(3):
        messages = [*compact_messages(messages, model=MODEL).history, *_plain_turns(k + 1)[-2:]]
    messages = [*messages, *TOOL_ROUND]
    turn = compact_messages(messages, model=MODEL)
    assert json.dumps(turn.send) == json.dumps(MessageCompactor(MODEL)(messages).send)


def _until_compacted(compactor: MessageCompactor) -> list[dict[str, Any]]:
    messages = _plain_turns(0)
    for k in range(60):
        messages = [
            *messages,
            {"role": "assistant", "content": f"done {k} " + "details " * 120},
            {"role": "user", "content": f"next {k}"},
        ]
        turn = compactor(messages)
        messages = list(turn.history)
        if turn.compacted:
            return messages
    raise AssertionError("no compaction")


def test_a_tool_use_block_right_after_a_compaction() -> None:
    compactor, reference = (
        MessageCompactor(MODEL, budget=3000),
        MessageCompactor(MODEL, budget=3000),
    )
    messages = _until_compacted(compactor)
    assert json.dumps(_until_compacted(reference)) == json.dumps(messages)
    # The reference converts the next prompt from nothing (no earlier conversion to resume).
    reference._converter._resumes.clear()
    reference._converter._converted.clear()
    messages = [*messages, *TOOL_ROUND]
    turn, expected = compactor(messages), reference(messages)
    assert turn.format == "anthropic"
    assert json.dumps(turn.send) == json.dumps(expected.send)
    assert "compactkit_summary" in json.dumps(turn.send[0])
