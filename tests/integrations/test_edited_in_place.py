"""A message object edited in place between two calls (the same dict or SDK object, its content
changed) is noticed when it is the first message or one of the eight most recent ones: the
request is governed from the text as it is now (it fits the budget and carries the new text),
as a compactor that never saw the earlier version governs it.

The patterns: a system message rewritten every turn (a date, retrieved memories), text appended
to the last user message, an assistant message filled as it streams, a tool output replaced, an
Anthropic block edited, ``msg.content = ...`` on an SDK message object."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from openai import OpenAI
from openai.types.chat import ChatCompletionMessage

from compactkit.integrations import CompactedMessages, MessageCompactor, compact_messages

MODEL = "gpt-4"
BUDGET = 2000
Call = Callable[[list[Any]], CompactedMessages]


def entry(stateless: bool, budget: int = BUDGET, **options: Any) -> Call:
    """One conversation's governing call: a ``MessageCompactor`` or ``compact_messages``."""
    if stateless:
        return lambda messages: compact_messages(messages, model=MODEL, budget=budget, **options)
    return MessageCompactor(MODEL, budget=budget, **options)


def fresh(messages: list[Any], budget: int = BUDGET, **options: Any) -> CompactedMessages:
    """What a compactor that never saw the list sends for it (new objects, nothing shared)."""
    return MessageCompactor(MODEL, budget=budget, **options)(copy.deepcopy(messages))


def call(call_id: str, name: str = "run", arguments: str = "{}") -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def start() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test in src/app.py."},
        call("c1", arguments='{"cmd": "pytest"}'),
        {"role": "tool", "tool_call_id": "c1", "content": "1 failed"},
    ]


def assert_governed_as_fresh(turn: CompactedMessages, messages: list[Any]) -> None:
    expected = fresh(messages)
    assert turn.tokens <= turn.budget
    assert turn.tokens == expected.tokens
    assert turn.send == expected.send


stateless = pytest.mark.parametrize("stateless", [False, True], ids=["stateful", "stateless"])


@stateless
def test_a_tool_output_grown_in_place_is_masked_not_sent_over_the_budget(stateless: bool) -> None:
    # int20's repro: the output grown from 2 to 5,000 words kept the count of its first read
    # (turn.tokens 39 while about 5,000 tokens went out).
    govern = entry(stateless)
    messages = start()
    turn = govern(messages)
    messages[3]["content"] = "word " * 5000
    messages = [
        *turn.history,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "go"},
    ]
    turn = govern(messages)
    assert_governed_as_fresh(turn, messages)
    assert "word " * 5000 not in json.dumps(turn.send)  # masked: it cannot fit


@stateless
def test_a_system_message_rewritten_every_turn_is_sent_as_it_is_now(stateless: bool) -> None:
    govern = entry(stateless)
    messages = start()
    for day in range(1, 6):
        memories = " ".join(
            f"memory {day}.{k}: the user prefers small diffs." for k in range(day * 20)
        )
        messages[0]["content"] = f"You are a coding agent. Day {day}. {memories}"
        turn = govern(messages)
        assert turn.send[0]["content"] == messages[0]["content"]
        assert_governed_as_fresh(turn, messages)
        messages = [
            *turn.history,
            call(f"c{day + 1}"),
            {"role": "tool", "tool_call_id": f"c{day + 1}", "content": f"step {day} done"},
        ]


@stateless
def test_text_appended_to_the_last_user_message_is_counted(stateless: bool) -> None:
    govern = entry(stateless)
    messages = [*start(), {"role": "user", "content": "Now the docs."}]
    turn = govern(messages)
    messages[-1]["content"] += " Here is the whole file:\n" + "doc line\n" * 400
    turn = govern(messages)
    assert turn.send[-1]["content"] == messages[-1]["content"]  # the newest input, whole
    assert_governed_as_fresh(turn, messages)
    assert turn.tokens > 1000


@stateless
def test_an_assistant_message_filled_as_it_streams_is_read_again(stateless: bool) -> None:
    govern = entry(stateless)
    reply: dict[str, Any] = {"role": "assistant", "content": ""}
    messages = [*start(), reply]
    govern(messages)
    reply["content"] = "I ran the tests; the fix is in parse(). " * 40
    reply["tool_calls"] = call("c2", "edit", '{"path": "src/app.py"}')["tool_calls"]
    messages = [*messages, {"role": "tool", "tool_call_id": "c2", "content": "edited"}]
    turn = govern(messages)
    assert_governed_as_fresh(turn, messages)
    assert turn.send[-2]["tool_calls"][0]["id"] == "c2"  # the call and its output, paired


@stateless
def test_an_anthropic_block_edited_in_place_is_read_again(stateless: bool) -> None:
    model = "claude-sonnet-4-5"
    govern = (
        (lambda m: compact_messages(m, model=model, budget=BUDGET))
        if stateless
        else MessageCompactor(model, budget=BUDGET)
    )
    result = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "ok"}],
    }
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Fix the bug."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}}
            ],
        },
        {"role": "user", "content": [result]},
    ]
    govern(messages)
    result["content"][0]["text"] = "source line\n" * 3000  # four levels under the message
    messages = [
        *messages,
        {"role": "assistant", "content": "reading"},
        {"role": "user", "content": "go on"},
    ]
    turn = govern(messages)
    expected = MessageCompactor(model, budget=BUDGET)(copy.deepcopy(messages))
    assert turn.tokens == expected.tokens <= turn.budget
    assert turn.send == expected.send


@stateless
def test_an_sdk_message_object_edited_in_place_is_read_again(stateless: bool) -> None:
    govern = entry(stateless)
    answer = ChatCompletionMessage(role="assistant", content="short answer")
    messages: list[Any] = [*start(), answer, {"role": "user", "content": "more"}]
    govern(messages)
    answer.content = "a long answer. " * 3000  # msg.content = ... on the pydantic object
    messages = [
        *messages,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "go"},
    ]
    turn = govern(messages)
    expected = fresh(messages)
    assert turn.tokens == expected.tokens <= turn.budget
    assert "a long answer. " * 3000 not in json.dumps(turn.send, default=str)


@stateless
def test_an_edit_is_noticed_in_a_long_list_too(stateless: bool) -> None:
    # Past 1,024 messages the list is sampled, not compared whole: the first and the eight most
    # recent messages are among what every call checks.
    govern = entry(stateless, budget=8000, compaction=False)
    messages: list[Any] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(600):
        messages += [
            call(f"c{n}"),
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"out {n}"},
        ]
    govern(messages)
    messages[0]["content"] = "You are a coding agent. " + "Rule: keep diffs small. " * 300
    messages[-5]["content"] = "out 598 " + "trace line\n" * 2000
    turn = govern(messages)
    expected = fresh(messages, budget=8000, compaction=False)
    assert turn.send[0]["content"] == messages[0]["content"]
    assert turn.tokens == expected.tokens <= turn.budget
    assert turn.send == expected.send


def test_the_request_on_the_wire_carries_the_edited_system_message() -> None:
    sent: list[dict[str, Any]] = []

    def server(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": MODEL,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "noted"},
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
            },
        )

    client = OpenAI(
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
    )
    compactor = MessageCompactor(MODEL, budget=BUDGET)
    messages: list[Any] = [
        {"role": "system", "content": "Today is Monday."},
        {"role": "user", "content": "hi"},
    ]
    for day in ("Tuesday", "Wednesday"):
        turn = compactor(messages)
        reply = client.chat.completions.create(model=MODEL, messages=turn.send)
        messages = [
            *turn.history,
            reply.choices[0].message,
            {"role": "user", "content": "and now?"},
        ]
        messages[0]["content"] = f"Today is {day}. Memories: " + "the user likes tests. " * 200
    turn = compactor(messages)
    client.chat.completions.create(model=MODEL, messages=turn.send)
    assert sent[-1]["messages"][0]["content"] == messages[0]["content"]
    assert turn.tokens == fresh(messages).tokens <= BUDGET


# -- property -------------------------------------------------------------------------------

STEP = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 200)),
    st.tuples(st.just("tool"), st.integers(1, 400)),
)
EDIT = st.tuples(
    st.sampled_from(["first", "recent"]),
    st.integers(1, 8),  # which recent message, from the end
    st.integers(0, 300),  # the new text's length in words
)
PROPERTY_BUDGET = 4000  # what is never dropped (system, newest input, call, output) fits


def grow(messages: list[Any], step: tuple[str, int], n: int) -> list[Any]:
    kind, size = step
    if kind == "user":
        return [*messages, {"role": "user", "content": f"request {n}: " + "detail " * size}]
    output = "\n".join(f"line {j}" for j in range(size))
    return [*messages, call(f"c{n}"), {"role": "tool", "tool_call_id": f"c{n}", "content": output}]


def edit(messages: list[Any], change: tuple[str, int, int]) -> None:
    where, back, words = change
    position = 0 if where == "first" else max(0, len(messages) - back)
    message = messages[position]
    text = "edited " * words
    if message.get("tool_calls"):
        message["tool_calls"][0]["function"]["arguments"] = json.dumps({"cmd": text})
    else:
        message["content"] = text


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(st.tuples(st.lists(EDIT, max_size=2), STEP), min_size=1, max_size=14),
    stateless=st.booleans(),
)
@example(steps=[([], ("tool", 1)), ([("recent", 1, 300)], ("user", 1))], stateless=False)
@example(steps=[([("first", 1, 300)], ("user", 1))], stateless=True)
@example(steps=[([], ("tool", 5)), ([("recent", 2, 0)], ("tool", 1))], stateless=False)
def test_in_place_edits_of_the_first_and_recent_messages_are_governed_as_fresh(
    steps: list[tuple[list[tuple[str, int, int]], tuple[str, int]]], stateless: bool
) -> None:
    # Edits between calls of the first message or one of the eight most recent (its text, or a
    # call's arguments); every request fits, and while nothing compacted it is the request a
    # compactor that never saw the earlier versions sends.
    govern = entry(stateless, budget=PROPERTY_BUDGET)
    messages: list[Any] = [{"role": "system", "content": "You are a coding agent."}]
    turn = govern(messages)
    compacted = False
    for n, (changes, step) in enumerate(steps):
        for change in changes:
            edit(messages, change)
        messages = grow(messages, step, n)
        turn = govern(messages)
        compacted = compacted or turn.compacted
        assert turn.tokens <= turn.budget
        if not compacted:
            expected = fresh(messages, budget=PROPERTY_BUDGET)
            assert turn.tokens == expected.tokens
            assert turn.send == expected.send
        messages = list(turn.history)


def tool_session(steps: int) -> list[list[dict[str, Any]]]:
    """``steps`` tool round trips (each ~400 tokens), one per model call."""
    return [
        [call(f"c{n}"), {"role": "tool", "tool_call_id": f"c{n}", "content": f"f{n}\n" * 200}]
        for n in range(steps)
    ]


@pytest.mark.parametrize("keep_history", [False, True], ids=["own list", "history"])
def test_a_system_message_rewritten_every_turn_compacts_no_more_than_one_left_alone(
    keep_history: bool,
) -> None:
    # A plain message edited in place is read again alone (its items replaced, the summary and
    # the other items kept): a caller keeping its own list is not compacted again on every
    # call, as it would be if the whole list were read again, and the archive keeps what the
    # compactions folded.
    counts = []
    for edit in (False, True):
        compactor = MessageCompactor(MODEL, budget=BUDGET)
        messages: list[Any] = start()
        compactions = 0
        for n, trip in enumerate(tool_session(30)):
            if edit:
                messages[0]["content"] = f"You are a coding agent. Turn {n}. " + "memo " * n
            messages = [*messages, *trip]
            turn = compactor(messages)
            compactions += turn.compacted
            assert turn.tokens <= turn.budget
            assert turn.send[0]["content"] == messages[0]["content"]
            if keep_history:
                messages = list(turn.history)
        archived = compactor.governed_memory().history()  # type: ignore[attr-defined]
        assert sum(item.type == "function_call_output" for item in archived) == 31  # (+ start's)
        counts.append(compactions)
    assert counts[0] > 0  # (the session does compact)
    assert counts[1] == counts[0]


@stateless
def test_one_message_object_at_two_recent_places_edited_is_counted_at_both(
    stateless: bool,
) -> None:
    govern = entry(stateless)
    nudge = {"role": "user", "content": "continue"}  # the same dict appended twice
    messages: list[Any] = [*start(), nudge, {"role": "assistant", "content": "b"}, nudge]
    govern(messages)
    nudge["content"] = "continue, and here is the log:\n" + "log line\n" * 300
    turn = govern(messages)
    assert_governed_as_fresh(turn, messages)
