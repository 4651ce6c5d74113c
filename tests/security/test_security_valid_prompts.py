"""Valid histories give valid prompts (issue 17, regression tests).

A Responses history may put assistant text (or a user message, or another call) between a
``function_call`` and its ``function_call_output``; Chat Completions may not. Converting such a
history, or projecting it and converting the projection, must give a prompt the chat API takes.
``validate_chat(mode="repair")`` must leave a prompt that passes ``mode="raise"``.
"""

from __future__ import annotations

from typing import Any

import pytest

from compactkit.budget.tokens import TiktokenCounter
from compactkit.formats import (
    chat_to_items,
    items_to_anthropic,
    items_to_chat,
    items_to_responses,
    responses_to_items,
    validate_anthropic,
    validate_chat,
    validate_responses,
)
from compactkit.governance.projector import ContextProjector
from compactkit.items.snapshot import MemorySnapshot

COUNTER = TiktokenCounter("o200k_base")


def call(call_id: str, name: str = "run") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}


def output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": f"out {call_id}"}


def say(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": text}


RESPONSES_HISTORIES = {
    "text between call and output": [
        say("user", "go"),
        call("c1"),
        say("assistant", "While that runs: the plan."),
        output("c1"),
        say("user", "next"),
    ],
    "text and a second call before both outputs": [
        say("user", "go"),
        call("c1"),
        say("assistant", "Also checking the logs."),
        call("c2"),
        output("c1"),
        output("c2"),
        say("user", "next"),
    ],
    "outputs out of order, text between": [
        say("user", "go"),
        call("c1"),
        call("c2"),
        output("c2"),
        say("assistant", "One is back."),
        output("c1"),
    ],
    "a user message between call and output": [
        say("user", "go"),
        call("c1"),
        say("user", "and hurry"),
        output("c1"),
        say("assistant", "Done."),
    ],
}


def assert_valid_everywhere(items: Any) -> None:
    validate_chat(items_to_chat(items), mode="raise")
    validate_responses(items_to_responses(items), mode="raise")
    validate_anthropic(items_to_anthropic(items).messages, mode="raise")


@pytest.mark.parametrize("history", sorted(RESPONSES_HISTORIES))
def test_a_valid_responses_history_converts_to_a_valid_chat_prompt(history: str) -> None:
    wire = RESPONSES_HISTORIES[history]
    validate_responses(wire, mode="raise")  # valid where it came from
    items = responses_to_items(wire)
    chat = items_to_chat(items)
    validate_chat(chat, mode="raise")
    # Nothing is lost: every message and call is still there, once.
    back = chat_to_items(chat)
    assert sorted(i.model_dump_json() for i in back) == sorted(i.model_dump_json() for i in items)


@pytest.mark.parametrize("history", sorted(RESPONSES_HISTORIES))
def test_its_projection_is_valid_in_every_format(history: str) -> None:
    items = responses_to_items(RESPONSES_HISTORIES[history])
    for budget in (60, 120, 4000):
        try:
            projection = ContextProjector(COUNTER, budget=budget).project(MemorySnapshot.of(items))
        except Exception as exc:  # a budget too small for the irreducible part
            assert type(exc).__name__ == "BudgetError"
            continue
        assert_valid_everywhere(projection.items)


def chat_call(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "run", "arguments": "{}"}}
            for i in ids
        ],
    }


def tool(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": f"out {call_id}"}


BROKEN_CHAT = {
    "text between calls and replies": [
        {"role": "user", "content": "go"},
        chat_call("c1", "c2"),
        {"role": "assistant", "content": "waiting"},
        tool("c1"),
        {"role": "user", "content": "hm"},
        tool("c2"),
    ],
    "duplicate call ids": [
        {"role": "user", "content": "go"},
        chat_call("c1", "c1"),
        tool("c1"),
        chat_call("c1"),
        tool("c1"),
        tool("c1"),
    ],
    "reply before its call": [
        {"role": "user", "content": "go"},
        tool("c1"),
        chat_call("c1"),
        {"role": "assistant", "content": "x"},
    ],
}


@pytest.mark.parametrize("case", sorted(BROKEN_CHAT))
def test_chat_repair_is_complete(case: str) -> None:
    repaired, problems = validate_chat(BROKEN_CHAT[case], mode="repair")
    assert problems  # the input was broken, and said so
    again, left = validate_chat(repaired, mode="raise")  # the repair passes the validator
    assert left == [] and again == repaired
    ids = [c["id"] for m in repaired for c in m.get("tool_calls") or []]
    assert len(ids) == len(set(ids))  # no duplicate tool-call id survives


@pytest.mark.parametrize("case", ["text between calls and replies", "duplicate call ids"])
def test_projecting_a_broken_chat_history_gives_a_valid_prompt(case: str) -> None:
    items = chat_to_items(BROKEN_CHAT[case])
    projection = ContextProjector(COUNTER, budget=4000).project(MemorySnapshot.of(items))
    assert_valid_everywhere(projection.items)
    sent_ids = [c["id"] for m in items_to_chat(projection.items) for c in m.get("tool_calls") or []]
    assert len(sent_ids) == len(set(sent_ids))
