"""``compact_messages`` / ``MessageCompactor`` on plain message lists, in all three formats."""

from __future__ import annotations

import json
import logging
import random
from typing import Any

import anthropic.types as anthropic_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

from compactkit import ConfigError, MemorySnapshot, ModelProfile, chat_to_items, counter_for
from compactkit.budget import default_registry
from compactkit.formats import (
    anthropic_to_items,
    responses_to_items,
    to_plain,
    tools_from_chat,
    validate_anthropic,
    validate_chat,
    validate_responses,
)
from compactkit.integrations import CompactedMessages, MessageCompactor, compact_messages
from compactkit.runtime import PassthroughEvent

MODEL = "gpt-4"  # an 8k window: usable input 6,021 tokens
COUNTER = counter_for(MODEL)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


def chat_turn(rng: random.Random, turn: int) -> list[dict[str, Any]]:
    """One user turn of a coding agent: a question, 1-3 tool round trips, an answer."""
    out: list[dict[str, Any]] = [{"role": "user", "content": f"step {turn}: fix test_{turn}.py"}]
    for call in range(rng.randint(1, 3)):
        call_id = f"call_{turn}_{call}"
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": f"src/m{turn}.py"}),
                        },
                    }
                ],
            }
        )
        size = rng.choice([20, 80, 400, 1500])
        out.append({"role": "tool", "tool_call_id": call_id, "content": f"line {turn}\n" * size})
    out.append({"role": "assistant", "content": f"fixed test_{turn}.py"})
    return out


def check_chat_send(turn: CompactedMessages, tools: list[dict[str, Any]] = TOOLS) -> None:
    """What a provider would refuse: over budget, a call without its output or the reverse."""
    plain = [to_plain(m) for m in turn.send]
    validate_chat(plain, mode="raise")
    counted = COUNTER.count(chat_to_items(plain), tools=tools_from_chat(tools)).tokens
    assert counted == turn.tokens <= turn.budget


def test_a_long_chat_loop_fits_every_call_and_keeps_the_summary() -> None:
    rng = random.Random(7)
    compactor = MessageCompactor(MODEL, tools=TOOLS)
    messages: list[Any] = [{"role": "system", "content": "You are a coding agent."}]
    compactions = 0
    for number in range(40):
        for message in chat_turn(rng, number):
            messages.append(message)
            if message["role"] == "assistant" and message.get("tool_calls"):
                continue  # the model is called before each assistant message
            turn = compactor(messages)
            check_chat_send(turn)
            assert turn.send[0] == {"role": "system", "content": "You are a coding agent."}
            latest_user = next(m for m in reversed(messages) if m.get("role") == "user")
            assert any(m is latest_user for m in turn.send)
            if turn.compacted:
                compactions += 1
                summary = MemorySnapshot.from_items(chat_to_items(turn.history)).summary
                assert summary  # the history carries the marked summary
                messages = turn.history
            else:
                assert turn.history is messages
    assert compactions >= 2


def test_the_user_may_keep_the_full_list_instead_of_the_history() -> None:
    rng = random.Random(3)
    compactor = MessageCompactor(MODEL, tools=TOOLS)
    messages: list[Any] = [{"role": "system", "content": "be brief"}]
    summaries = 0
    for number in range(25):
        messages.extend(chat_turn(rng, number))
        turn = compactor(messages)
        check_chat_send(turn)
        summaries += turn.compacted
        # Once compacted, the prompt always starts with the summary after the system prompt.
        if summaries:
            assert MemorySnapshot.from_items(chat_to_items(turn.send)).summary
    assert summaries >= 1


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=30))
def test_incremental_calls_send_what_a_fresh_call_sends(sizes: list[int]) -> None:
    """Projection only: the cached compactor and a stateless call see the same list alike."""
    compactor = MessageCompactor(MODEL, compaction=False)
    messages: list[Any] = [{"role": "system", "content": "be brief"}]
    for number, size in enumerate(sizes):
        rng = random.Random(number * 31 + size)
        messages.extend(chat_turn(rng, number)[: size + 2])
        messages.append({"role": "user", "content": f"next {number}"})
        cached = compactor(messages)
        fresh = compact_messages(messages, model=MODEL, compaction=False)
        assert [to_plain(m) for m in cached.send] == [to_plain(m) for m in fresh.send]
        assert cached.tokens == fresh.tokens
        check_chat_send(cached, tools=[])


def test_messages_that_fit_are_sent_as_given() -> None:
    reply = ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "read_file", "arguments": "{}"},
                            }
                        ],
                    },
                }
            ],
        }
    )
    message = reply.choices[0].message
    messages: list[Any] = [
        {"role": "user", "content": "read it"},
        message,
        {"role": "tool", "tool_call_id": "call_1", "content": "x = 1"},
    ]
    turn = compact_messages(messages, model=MODEL, tools=TOOLS)
    assert turn.format == "chat" and turn.history is messages and not turn.compacted
    assert all(sent is given for sent, given in zip(turn.send, messages, strict=True))
    check_chat_send(turn)


def response_output(*items: dict[str, Any]) -> list[Any]:
    response = Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "model": "gpt-4.1",
            "status": "completed",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": list(items),
        }
    )
    return list(response.output)


def test_responses_items_with_sdk_objects_and_untyped_user_input() -> None:
    compactor = MessageCompactor(MODEL)
    messages: list[Any] = []
    for number in range(30):
        messages.append({"role": "user", "content": f"question {number}"})  # no "type"
        call_id = f"call_{number}"
        messages += response_output(
            {"type": "reasoning", "id": f"rs_{number}", "summary": [], "encrypted_content": "e"},
            {
                "type": "function_call",
                "id": f"fc_{number}",
                "call_id": call_id,
                "name": "read_file",
                "arguments": "{}",
                "status": "completed",
            },
        )
        messages.append(
            {"type": "function_call_output", "call_id": call_id, "output": "data\n" * 300}
        )
        turn = compactor(messages, instructions="Answer in one line.")
        assert turn.format == "responses"
        plain = [to_plain(m) for m in turn.send]
        validate_responses(plain, mode="raise")
        # The instructions are counted but go in the request's own field, not in the input.
        assert not any(m.get("role") == "system" for m in plain)
        instructions = chat_to_items([{"role": "system", "content": "Answer in one line."}])
        counted = COUNTER.count([*instructions, *responses_to_items(plain)]).tokens
        assert counted == turn.tokens <= turn.budget
        if turn.compacted:
            messages = turn.history
    assert MemorySnapshot.from_items(responses_to_items(plain)).summary


def tiny_claude() -> Any:
    registry = default_registry().copy()
    registry.register(
        ModelProfile(
            name="tiny-claude",
            provider="anthropic",
            context_window=6000,
            max_output=1000,
            chars_per_token=3.5,
            source="test: a small Anthropic-style window",
        )
    )
    return registry


def test_anthropic_messages_with_sdk_blocks_and_a_system_prompt() -> None:
    registry = tiny_claude()
    counter = counter_for("tiny-claude", registry=registry)
    compactor = MessageCompactor("tiny-claude", registry=registry)
    messages: list[Any] = []
    summarised = False
    for number in range(30):
        messages.append({"role": "user", "content": f"question {number}"})
        reply = anthropic_types.Message.model_validate(
            {
                "id": f"msg_{number}",
                "type": "message",
                "role": "assistant",
                "model": "tiny-claude",
                "content": [
                    {"type": "text", "text": "reading"},
                    {"type": "tool_use", "id": f"tu_{number}", "name": "read", "input": {}},
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        )
        messages.append({"role": "assistant", "content": reply.content})  # SDK blocks
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"tu_{number}", "content": "x" * 900}
                ],
            }
        )
        turn = compactor(messages, system="You are terse.")
        assert turn.format == "anthropic"
        assert isinstance(turn.system, str) and turn.system.startswith("You are terse.")
        plain = [to_plain(m) for m in turn.send]
        validate_anthropic(plain, mode="raise")
        items = anthropic_to_items(plain, system=turn.system)
        assert counter.count(items, format="anthropic").tokens == turn.tokens <= turn.budget
        if turn.compacted:
            assert turn.compaction is not None
            summary = turn.compaction.snapshot.summary
            summarised = summarised or bool(summary)
            # The history carries the summary in its messages, so the list stands alone.
            history = [to_plain(m) for m in turn.history]
            assert bool(MemorySnapshot.from_items(anthropic_to_items(history)).summary) == bool(
                summary
            )
            messages = turn.history
    assert summarised


def test_unknown_shapes_are_sent_and_kept_untouched_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[Any] = []
    compactor = MessageCompactor(MODEL, on_event=seen.append)
    search = response_output(
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "compactkit"},
        }
    )[0]
    # (an OpenAI compaction item is modelled now: an item reference is the unknown shape)
    compaction = {"type": "item_reference", "id": "msg_0123"}
    messages: list[Any] = [compaction, {"role": "user", "content": "search it"}, search]
    with caplog.at_level(logging.WARNING, logger="compactkit"):
        turn = compactor(messages)
    warnings = [e for e in turn.events if isinstance(e, PassthroughEvent)]
    assert [(w.index, w.format) for w in warnings] == [(0, "responses"), (2, "responses")]
    assert "web_search_call" in warnings[1].reason
    assert seen[: len(warnings)] == warnings
    assert sum("passthrough" in r.message for r in caplog.records) == 2
    assert turn.send[0] is compaction and turn.send[2] is search
    # They survive a long conversation and its compactions: pinned, never folded or omitted.
    for number in range(40):
        messages.append({"role": "user", "content": f"more {number} " + "words " * 200})
        messages.append({"role": "assistant", "content": "ok"})
        turn = compactor(messages)
        assert sum(m is compaction for m in turn.send) == sum(m is search for m in turn.send) == 1
        assert turn.tokens <= turn.budget
        if turn.compacted:
            messages = turn.history
            assert sum(m is compaction for m in messages) == sum(m is search for m in messages) == 1
    assert len([e for e in seen if isinstance(e, PassthroughEvent)]) == 2  # reported once


def test_the_output_of_a_passed_through_call_goes_with_it() -> None:
    custom = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "sh", "input": "ls"}}],
    }
    answer = {"role": "tool", "tool_call_id": "c1", "content": "a.py"}
    messages: list[Any] = [{"role": "user", "content": "list"}, custom, answer]
    turn = compact_messages(messages, model=MODEL)
    assert turn.send[1] is custom and turn.send[2] is answer
    assert [e.index for e in turn.events if isinstance(e, PassthroughEvent)] == [1, 2]


def test_plain_text_messages_wait_for_a_message_that_decides_the_format() -> None:
    compactor = MessageCompactor(MODEL)
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    assert compactor(messages).send == [{"role": "user", "content": "hi"}]
    assert compactor.format is None
    messages += response_output(
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "hello", "annotations": []}],
        }
    )
    turn = compactor(messages)
    assert compactor.format == "responses" == turn.format
    assert turn.send[1] is messages[1]


@pytest.mark.parametrize("compaction", [True, False])
def test_reused_call_ids_do_not_break_the_conversation(compaction: bool) -> None:
    compactor = MessageCompactor(MODEL, compaction=compaction)  # off: old outputs get masked
    messages: list[Any] = []
    masked = 0
    for number in range(12):  # some servers number calls per response: "call_0" again
        call = {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        output = {"role": "tool", "tool_call_id": "call_0", "content": f"r{number}\n" * 400}
        messages += [
            {"role": "user", "content": f"q{number}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            output,
        ]
        turn = compactor(messages)
        if number < 2:
            assert [to_plain(m) for m in turn.send] == messages
        # The latest round trip is sent; masked or converted messages keep the id as given.
        assert turn.send[-1] is output and turn.tokens <= turn.budget
        for sent in (turn.send, turn.history):
            text = json.dumps([to_plain(m) for m in sent], ensure_ascii=False)
            assert "\u2063" not in text and '"call_0"' in text
        masked += turn.report.masked
        if turn.compacted:
            messages = turn.history
    assert masked or compaction


def test_bad_arguments_are_config_errors_naming_the_fix() -> None:
    with pytest.raises(ConfigError, match="list of messages"):
        compact_messages({"role": "user", "content": "hi"}, model=MODEL)  # type: ignore[arg-type]
    chat = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "", "tool_calls": []},
    ]
    with pytest.raises(ConfigError, match="system= is Anthropic"):
        compact_messages(chat, model=MODEL, system="x")
    # Plain text messages read the same in every format: system= makes them Anthropic.
    turn = compact_messages([{"role": "user", "content": "hi"}], model=MODEL, system="x")
    assert turn.format == "anthropic" and turn.system == "x"
    with pytest.raises(ConfigError, match="format must be"):
        compact_messages([], model=MODEL, format="gemini")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown model"):
        compact_messages([], model="no-such-model-xyz")
