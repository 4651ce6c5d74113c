"""A call no output answers keeps the history's order in the Chat and Anthropic writers.

Real agents leave calls unanswered mid-session: mini-SWE-agent's last ``submit`` call of each
run gets no tool message, and the next run's task follows it (the bundled real session holds 20
such calls in its first 3,000 messages). ``items_to_chat`` and ``items_to_anthropic`` waited for
that call's output forever: every later call was merged into its assistant message (turn), every
later output and user message gathered behind them, and the next task moved to the very end (in
the bundled session: one assistant turn of 114 calls). Found by inv19's sweep (session 19).
"""

from __future__ import annotations

import json
from typing import Any

from compactkit.formats.anthropic import items_to_anthropic
from compactkit.formats.chat import chat_to_items, items_to_chat


def call(n: int, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": command})
    return {
        "role": "assistant",
        "content": f"step {n}",
        "tool_calls": [
            {
                "id": f"c{n}",
                "type": "function",
                "function": {"name": "bash", "arguments": arguments},
            }
        ],
    }


def output(n: int, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"c{n}", "content": text}


SESSION: list[dict[str, Any]] = [
    {"role": "user", "content": "Task 1"},
    call(1, "ls"),
    output(1, "a.py"),
    call(2, "submit"),  # never answered: the run ended with it
    {"role": "user", "content": "Task 2"},
    call(3, "cat a.py"),
    output(3, "print(1)"),
    call(4, "pwd"),
    output(4, "/testbed"),
    {"role": "assistant", "content": "done"},
]


def shape(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each message as (role, what it says or which calls it makes / answers)."""
    out = []
    for message in messages:
        if message.get("tool_calls"):
            out.append((message["role"], ",".join(c["id"] for c in message["tool_calls"])))
        elif message["role"] == "tool":
            out.append(("tool", message["tool_call_id"]))
        else:
            out.append((message["role"], message["content"]))
    return out


def test_chat_keeps_the_order_after_an_unanswered_call() -> None:
    written = items_to_chat(chat_to_items(SESSION))
    assert shape(written) == shape(SESSION)  # was: step 2 with c2,c3,c4; Task 2 after the outputs
    assert [m.get("content") for m in written if m["role"] == "assistant"] == [
        "step 1",
        "step 2",
        "step 3",
        "step 4",
        "done",
    ]


def test_anthropic_keeps_the_order_after_an_unanswered_call() -> None:
    messages = items_to_anthropic(chat_to_items(SESSION)).messages

    def blocks(message: dict[str, Any]) -> list[str]:
        content = message["content"]
        if isinstance(content, str):
            return [content]
        return [b.get("text") or b.get("id") or b["tool_use_id"] for b in content]

    assert [(m["role"], blocks(m)) for m in messages] == [
        ("user", ["Task 1"]),
        ("assistant", ["step 1", "c1"]),
        ("user", ["c1"]),
        ("assistant", ["step 2", "c2"]),
        ("user", ["Task 2"]),
        ("assistant", ["step 3", "c3"]),
        ("user", ["c3"]),
        ("assistant", ["step 4", "c4"]),
        ("user", ["c4"]),
        ("assistant", ["done"]),
    ]


def test_a_parallel_call_left_unanswered_does_not_hold_back_the_next_task() -> None:
    both = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            *call(5, "ls")["tool_calls"],
            *call(6, "submit")["tool_calls"],
        ],
    }
    session = [
        {"role": "user", "content": "Task 1"},
        both,
        output(5, "a.py"),  # c6 never answered
        {"role": "user", "content": "Task 2"},
        call(7, "pwd"),
        output(7, "/testbed"),
    ]
    assert shape(items_to_chat(chat_to_items(session))) == shape(session)


def test_a_call_whose_output_comes_later_still_waits_for_it() -> None:
    """The reordering the writers exist for is unchanged: a user message between a call and
    its output (legal in Responses) still waits until the output is in."""
    session = [
        {"role": "user", "content": "Task 1"},
        call(8, "ls"),
        {"role": "user", "content": "(typed while ls ran)"},
        output(8, "a.py"),
    ]
    assert shape(items_to_chat(chat_to_items(session))) == [
        ("user", "Task 1"),
        ("assistant", "c8"),
        ("tool", "c8"),
        ("user", "(typed while ls ran)"),
    ]


def test_a_reused_id_answered_once_waits_only_where_it_is_answered() -> None:
    """SWE-agent's replayed trajectories reuse a call id across steps: the second, unanswered
    use of the id must not wait for the first use's output."""
    session = [
        {"role": "user", "content": "Task 1"},
        call(9, "ls"),
        output(9, "a.py"),
        call(9, "submit"),  # the same id again, never answered
        {"role": "user", "content": "Task 2"},
        call(10, "pwd"),
        output(10, "/testbed"),
    ]
    assert shape(items_to_chat(chat_to_items(session))) == shape(session)
