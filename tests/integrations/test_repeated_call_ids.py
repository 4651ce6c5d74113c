"""Two tool calls sharing one id before any output answers them (two calls of one assistant
message, or of one Responses response): ``MessageCompactor`` and ``compact_messages`` refuse
the list with a ``FormatError`` that names the id as written and where it is, and store
nothing; a corrected list then governs as if the bad one never came. Ids reused one round trip
after another (call c, output c, call c, output c) go out as given, as before."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from compactkit.errors import ConfigError, FormatError
from compactkit.formats import to_plain
from compactkit.integrations import CompactedMessages, MessageCompactor, compact_messages
from compactkit.memory import InMemoryMemory

MODEL = "gpt-4o"
FORMATS = ("chat", "responses", "anthropic")
ENTRIES = ("stateful", "stateless")
Govern = Callable[[list[Any]], CompactedMessages]


def head(format: str) -> list[Any]:
    if format == "chat":
        return [{"role": "system", "content": "You are an agent."}, user("Do the task.")]
    return [user("Do the task.")]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def then_user(format: str, messages: list[Any], text: str) -> list[Any]:
    """``messages`` and a user message (Anthropic: the text joins the tool results' turn,
    turns alternate)."""
    last = messages[-1]
    if format == "anthropic" and last["role"] == "user" and isinstance(last["content"], list):
        return [
            *messages[:-1],
            {**last, "content": [*last["content"], {"type": "text", "text": text}]},
        ]
    return [*messages, user(text)]


def round_trip(format: str, ids: list[str], tag: str) -> list[Any]:
    """One assistant message (Responses: one response) calling ``ids``, then their outputs."""
    outputs = [f"{tag} output {k}: " + "x " * 40 for k in range(len(ids))]
    if format == "chat":
        calls = [
            {
                "id": i,
                "type": "function",
                "function": {"name": "bash", "arguments": f'{{"n": {k}}}'},
            }
            for k, i in enumerate(ids)
        ]
        return [
            {"role": "assistant", "content": None, "tool_calls": calls},
            *(
                {"role": "tool", "tool_call_id": i, "content": o}
                for i, o in zip(ids, outputs, strict=True)
            ),
        ]
    if format == "responses":
        return [
            *(
                {
                    "type": "function_call",
                    "call_id": i,
                    "name": "bash",
                    "arguments": f'{{"n": {k}}}',
                }
                for k, i in enumerate(ids)
            ),
            *(
                {"type": "function_call_output", "call_id": i, "output": o}
                for i, o in zip(ids, outputs, strict=True)
            ),
        ]
    uses = [
        {"type": "tool_use", "id": i, "name": "bash", "input": {"n": k}} for k, i in enumerate(ids)
    ]
    results = [
        {"type": "tool_result", "tool_use_id": i, "content": o}
        for i, o in zip(ids, outputs, strict=True)
    ]
    return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]


def governor(format: str, entry: str) -> Govern:
    system = {"system": "You are an agent."} if format == "anthropic" else {}
    if entry == "stateful":
        compactor = MessageCompactor(MODEL, format=format)  # type: ignore[arg-type]
        return lambda messages: compactor(messages, **system)
    return lambda messages: compact_messages(messages, model=MODEL, **system)


def fresh(format: str, messages: list[Any]) -> CompactedMessages:
    return governor(format, "stateful")(messages)


def sent(turn: CompactedMessages) -> list[Any]:
    return [to_plain(message) for message in turn.send]


# Where the second call of each format's list is named (chat: after the system message).
WHERE = {
    "chat": "message 2: tool_calls[0] and tool_calls[1]",
    "responses": "input items 1 and 2",
    "anthropic": "message 1: content[0] and content[1]",
}


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("format", FORMATS)
def test_two_calls_sharing_an_id_are_a_format_error_then_a_corrected_list_works(
    format: str, entry: str
) -> None:
    govern = governor(format, entry)
    bad = [*head(format), *round_trip(format, ["call_0", "call_0"], "first")]
    with pytest.raises(FormatError) as raised:
        govern(bad)
    message = str(raised.value)
    assert WHERE[format] in message and "'call_0'" in message and "its own" in message
    assert "\u2063" not in message  # the id as the user wrote it, never compactkit's inner one
    assert isinstance(raised.value, ConfigError)  # misuse, like the memory's refusal below

    corrected = [*head(format), *round_trip(format, ["call_0", "call_1"], "first")]
    turn = govern(corrected)
    assert sent(turn) == corrected  # both calls, each with its own output, as given
    again = fresh(format, corrected)
    assert (turn.tokens, turn.history) == (again.tokens, again.history)


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("format", FORMATS)
def test_a_repeated_id_in_a_later_call_stores_nothing_and_the_conversation_goes_on(
    format: str, entry: str
) -> None:
    govern = governor(format, entry)
    first = then_user(format, [*head(format), *round_trip(format, ["call_0"], "one")], "Next.")
    kept = govern(first).history
    with pytest.raises(FormatError, match="'call_9'"):
        govern([*kept, *round_trip(format, ["call_9", "call_9"], "two")])
    # The same conversation, corrected: read as if the refused list never came (its first
    # call, read before the error, does not make this one a reuse).
    corrected = then_user(format, [*kept, *round_trip(format, ["call_9", "call_8"], "two")], "On.")
    turn = govern(corrected)
    again = fresh(format, corrected)
    assert sent(turn) == sent(again) == corrected
    assert turn.tokens == again.tokens


@pytest.mark.parametrize("format", FORMATS)
def test_a_refused_list_leaves_the_compactors_memory_as_it_was(format: str) -> None:
    compactor = MessageCompactor(MODEL, format=format)  # type: ignore[arg-type]
    system = {"system": "You are an agent."} if format == "anthropic" else {}
    first = then_user(format, [*head(format), *round_trip(format, ["call_0"], "one")], "Next.")
    compactor(first, **system)
    before = compactor.governed_memory().snapshot()
    with pytest.raises(FormatError):
        compactor([*first, *round_trip(format, ["call_1", "call_2", "call_1"], "x")], **system)
    assert compactor.governed_memory().snapshot() == before


def test_two_chat_messages_calling_one_id_before_any_output_are_refused_naming_both() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    messages = [
        *head("chat"),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": "1"},
        {"role": "tool", "tool_call_id": "c", "content": "2"},
    ]
    for govern in (governor("chat", "stateful"), governor("chat", "stateless")):
        with pytest.raises(FormatError, match=r"messages 2 and 3: .* id 'c'"):
            govern(messages)


@pytest.mark.parametrize("between", ["a user message", "nothing"])
@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("format", FORMATS)
def test_ids_reused_round_trip_after_round_trip_go_out_as_given(
    format: str, entry: str, between: str
) -> None:
    # SWE-agent's replayed trajectories ("call_0" every round trip, a user message between),
    # and a server numbering calls per response in one tool loop (nothing between: the output
    # answering a call closes it, so the next response may reuse its id).
    govern = governor(format, entry)
    messages = head(format)
    for number in range(4):
        messages = [*messages, *round_trip(format, ["call_0"], f"r{number}")]
        if between == "a user message":
            messages = then_user(format, messages, f"q{number}")
        turn = govern(messages)
        assert sent(turn) == messages
        assert "\u2063" not in json.dumps(sent(turn), ensure_ascii=False)
        messages = turn.history
    # ... and the whole list read in one call, likewise
    assert sent(governor(format, entry)(messages)) == messages


@pytest.mark.parametrize("format", FORMATS)
def test_a_call_left_unanswered_then_reused_after_a_user_message_is_no_error(format: str) -> None:
    pending = round_trip(format, ["call_0"], "lost")[:1]  # the call, never its output
    messages = [*head(format), *pending, user("Start over."), *round_trip(format, ["call_0"], "b")]
    turn = governor(format, "stateful")(messages)
    # The call nobody answered is left out of the prompt; the later round trip goes as given.
    assert sent(turn)[-2:] == messages[-2:]


def test_the_memory_refuses_the_same_input_with_a_config_error_and_keeps_what_it_held() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("Do the task.")
    before = memory.snapshot()
    assistant = round_trip("chat", ["call_0", "call_0"], "m")[0]
    with pytest.raises(ConfigError, match="'call_0'"):
        memory.add_output_items([assistant])
    assert memory.snapshot() == before


@pytest.mark.parametrize("at", ["early", "late"])
def test_a_long_list_read_from_its_reachable_end_refuses_a_repeated_id_anywhere(at: str) -> None:
    # Compaction off and a budget: a long list is read from the end a prompt can reach
    # (_cold.py); a repeated id among the messages it would leave unread is refused as well.
    def trips(bad: int) -> list[Any]:
        messages = head("chat")
        for number in range(200):
            ids = ["a", "a"] if number == bad else [f"c{number}", f"d{number}"]
            messages = [*messages, *round_trip("chat", ids, f"r{number}"), user(f"q{number}")]
        return messages

    bad = 3 if at == "early" else 198  # early: among the messages no prompt could reach
    compactor = MessageCompactor(MODEL, compaction=False, budget=1500)
    with pytest.raises(FormatError, match=rf"message {2 + 4 * bad}: .* 'a'"):
        compactor(trips(bad))
    assert not compactor.governed_memory().snapshot().items
    turn = compactor(trips(-1))
    assert sent(turn)[-4:] == trips(-1)[-4:] and turn.tokens <= 1500


def answered_twice(format: str) -> list[Any]:
    """One call, its output, and the same output again (a retry appended it twice)."""
    trip = round_trip(format, ["call_0"], "once")
    if format == "anthropic":
        results = trip[1]["content"]
        return [*head(format), trip[0], {"role": "user", "content": [*results, *results]}]
    return [*head(format), *trip, trip[-1]]


ANSWERED_WHERE = {
    "chat": "messages 3 and 4: two tool outputs answer the call 'call_0'",
    "responses": "input items 2 and 3: two function_call_output items answer the call_id 'call_0'",
    "anthropic": "message 2: content[0] and content[1] answer the call 'call_0'",
}


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("format", FORMATS)
def test_a_call_answered_twice_is_a_format_error_naming_both_outputs(
    format: str, entry: str
) -> None:
    govern = governor(format, entry)
    with pytest.raises(FormatError) as raised:
        govern(answered_twice(format))
    assert ANSWERED_WHERE[format] in str(raised.value)
    assert "keep one output per call" in str(raised.value)
    corrected = [*head(format), *round_trip(format, ["call_0"], "once")]
    turn = govern(corrected)
    assert sent(turn) == corrected
    assert turn.tokens == fresh(format, corrected).tokens


@pytest.mark.parametrize("format", FORMATS)
def test_an_output_repeated_in_a_later_call_is_refused_and_nothing_is_stored(format: str) -> None:
    compactor = MessageCompactor(MODEL, format=format)  # type: ignore[arg-type]
    system = {"system": "You are an agent."} if format == "anthropic" else {}
    first = [*head(format), *round_trip(format, ["call_0", "call_1"], "one")]
    compactor(first, **system)
    before = compactor.governed_memory().snapshot()
    again = first[-1]  # the last output once more
    with pytest.raises(FormatError, match="answer"):
        compactor([*first, again], **system)
    assert compactor.governed_memory().snapshot() == before
    follow = then_user(format, first, "Next.")
    assert sent(compactor(follow, **system)) == follow


@pytest.mark.parametrize("format", FORMATS)
def test_the_preview_and_the_async_call_refuse_the_same_list(format: str) -> None:
    system = {"system": "You are an agent."} if format == "anthropic" else {}
    bad = [*head(format), *round_trip(format, ["call_0", "call_0"], "first")]
    with pytest.raises(FormatError, match=re.escape(WHERE[format])):
        compact_messages(bad, model=MODEL, dry_run=True, **system)
    compactor = MessageCompactor(MODEL, format=format)  # type: ignore[arg-type]
    with pytest.raises(FormatError, match=re.escape(WHERE[format])):
        asyncio.run(compactor.acall(bad, **system))
    corrected = [*head(format), *round_trip(format, ["call_0", "call_1"], "first")]
    assert sent(asyncio.run(compactor.acall(corrected, **system))) == corrected


# -- an output repeated after a later call or user message ------------------------------------


def output_again(format: str, messages: list[Any], call_id: str) -> list[Any]:
    """``messages`` and the output of ``call_id`` once more (Anthropic: in a user message of
    its own), as a retry that appends an output twice leaves them."""
    for message in reversed(messages):
        plain = to_plain(message)
        if format == "chat" and plain.get("tool_call_id") == call_id:
            return [*messages, dict(plain)]
        output = plain.get("type") == "function_call_output"
        if format == "responses" and output and plain["call_id"] == call_id:
            return [*messages, dict(plain)]
        if format == "anthropic" and isinstance(plain.get("content"), list):
            blocks = [b for b in plain["content"] if b.get("tool_use_id") == call_id]
            if blocks:
                return [*messages, {"role": "user", "content": blocks}]
    raise AssertionError(call_id)


def before_repeat(format: str, between: str) -> list[Any]:
    """A round trip of ``call_0``, then ``between``: what an output of ``call_0`` repeats after."""
    messages = [*head(format), *round_trip(format, ["call_0"], "one")]
    if between == "a user message":
        return then_user(format, messages, "Next.")
    if between == "a later call":
        return [*messages, *round_trip(format, ["call_1"], "two")[:1]]
    if between == "a later round trip":
        return [*messages, *round_trip(format, ["call_1"], "two")]
    # the same id called again after its output (a legitimate reuse), answered, then an input
    return then_user(format, [*messages, *round_trip(format, ["call_0"], "two")], "Next.")


REPEATED_AT = {"chat": "message 6", "responses": "input item 5", "anthropic": "message 5"}
BETWEEN = ("a user message", "a later call", "a later round trip", "the id reused")


@pytest.mark.parametrize("between", BETWEEN)
@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("format", FORMATS)
def test_an_output_repeated_after_a_later_call_or_input_is_a_format_error(
    format: str, entry: str, between: str
) -> None:
    # It ended in restore()'s ConfigError naming an internal seq (and, after a reuse, the
    # renamed id with an invisible U+2063).
    govern = governor(format, entry)
    messages = before_repeat(format, between)
    bad = output_again(format, messages, "call_0")
    with pytest.raises(FormatError) as raised:
        govern(bad)
    message = str(raised.value)
    assert "'call_0'" in message and "answered already" in message
    assert "\u2063" not in message and "seq" not in message and "restore" not in message
    if between == "a later round trip":  # (the other lists end with a message of their own)
        assert message.startswith(REPEATED_AT[format])
    # The list without the repeat governs as a fresh compactor governs it.
    turn = govern(messages)
    assert sent(turn) == sent(fresh(format, messages))
    assert turn.tokens == fresh(format, messages).tokens


@pytest.mark.parametrize("format", FORMATS)
def test_a_refused_repeat_leaves_the_call_it_answered_unanswered(format: str) -> None:
    # The refused list answered call_1 before the repeat: the corrected list answers it again
    # (the reader rolled the answer back, as it rolls back the calls it read).
    compactor = MessageCompactor(MODEL, format=format)  # type: ignore[arg-type]
    system = {"system": "You are an agent."} if format == "anthropic" else {}
    messages = [*head(format), *round_trip(format, ["call_0"], "one")]
    pending = round_trip(format, ["call_1"], "two")
    compactor([*messages, pending[0]], **system)
    before = compactor.governed_memory().snapshot()
    answered = then_user(format, [*messages, *pending], "Next.")
    with pytest.raises(FormatError, match="'call_1'"):
        compactor(output_again(format, answered, "call_1"), **system)
    assert compactor.governed_memory().snapshot() == before
    turn = compactor(answered, **system)
    assert sent(turn) == answered


def test_a_repeat_after_a_long_list_read_from_its_reachable_end_is_a_format_error() -> None:
    # Compaction off: the first call reads only the end a prompt can reach (_cold.py); an
    # output of one of its calls repeated on the next call is refused like any other.
    messages = head("chat")
    for number in range(200):
        trip = round_trip("chat", [f"c{number}"], f"r{number}")
        messages = [*messages, *trip, user(f"q{number}")]
    compactor = MessageCompactor(MODEL, compaction=False, budget=1500)
    compactor(messages)
    with pytest.raises(FormatError, match=r"message 602: .* 'c199', which an earlier output"):
        compactor(output_again("chat", messages, "c199"))
    turn = compactor([*messages, user("go on")])
    assert sent(turn)[-4:] == [*messages[-3:], user("go on")]


def test_the_memory_names_where_in_the_write_the_calls_sharing_an_id_are() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("Do the task.")
    assistant = round_trip("chat", ["call_0", "call_0"], "m")[0]
    with pytest.raises(ConfigError) as raised:
        memory.add_output_items([assistant])
    assert str(raised.value).endswith(
        'this write\'s item 1 (a call to bash({"n": 1})) and its item 0 '
        '(a call to bash({"n": 0})) share the id'
    )
    # ... and which stored call or output a later write collides with
    memory.add_output_items(round_trip("chat", ["call_1"], "m"))
    before = memory.snapshot()
    with pytest.raises(
        ConfigError, match=r"item 0 \(a call to bash\(\{\"n\": 0\}\)\) and the stored item seq 2 "
    ):
        memory.add_output_items([round_trip("chat", ["call_1"], "again")[0]])
    with pytest.raises(
        ConfigError,
        match=r"already has an output.*: this write's item 0 \(an output for 'call_1'\) and the stored item seq 3",
    ):
        memory.add_tool_output("call_1", "again")
    assert memory.snapshot() == before
