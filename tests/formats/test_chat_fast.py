"""``plain_chat_message_items`` (how a message compactor reads a plain chat dict, without
pydantic's validation) builds exactly the items ``chat_to_items`` builds, or declines."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit import ConfigError
from compactkit.formats import chat_to_items
from compactkit.formats.chat import plain_chat_message_items
from compactkit.items import Item


class _Str(str):
    """A str subclass: validation may turn it into a plain str, so the fast path declines."""


TEXT = st.text(max_size=12) | st.sampled_from(["", "a\udc80b", "{}", "function"])
ODD = st.one_of(
    st.none(),
    st.integers(),
    TEXT.map(_Str),
    st.just([{"type": "text", "text": "hi"}]),
    st.just([]),
    st.just({"a": 1}),
)
VALUE = TEXT | ODD
ROLE = st.sampled_from(["system", "developer", "user", "assistant", "tool", "function", "bot"])

FUNCTION = st.fixed_dictionaries(
    {},
    optional={"name": TEXT | ODD, "arguments": TEXT | ODD, "description": TEXT},
)
CALL = (
    st.fixed_dictionaries(
        {"id": TEXT | ODD, "function": FUNCTION | ODD},
        optional={"type": st.sampled_from(["function", "custom"]) | ODD, "index": st.integers()},
    )
    | ODD
)
MESSAGE = st.fixed_dictionaries(
    {"role": ROLE | ODD},
    optional={
        "content": VALUE,
        "name": VALUE,
        "tool_calls": st.lists(CALL, max_size=3) | ODD,
        "tool_call_id": VALUE,
        "refusal": TEXT,
    },
)
PLAIN_CALL = st.fixed_dictionaries(
    {"id": st.text(min_size=1, max_size=8), "function": st.fixed_dictionaries({"name": TEXT})},
    optional={"type": st.just("function")},
).map(lambda call: {**call, "function": {**call["function"], "arguments": "{}"}})
PLAIN = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "developer", "user"]), "content": TEXT},
        optional={"name": TEXT | st.none()},
    ),
    st.fixed_dictionaries(
        {"role": st.just("assistant")},
        optional={
            "content": TEXT | st.none(),
            "name": TEXT,
            "tool_calls": st.lists(PLAIN_CALL, max_size=3),
        },
    ),
    st.fixed_dictionaries(
        {"role": st.just("tool"), "tool_call_id": st.text(min_size=1, max_size=8)},
        optional={"content": TEXT | st.none(), "name": TEXT},
    ),
)

FIELDS = ["role", "content", "name", "tool_calls", "tool_call_id", "refusal"]
CALL_FIELDS = ["id", "type", "function", "index", "function.name", "function.arguments"]


def _with(message: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    return {**message, field: value}


def _with_call(message: dict[str, Any], field: str, value: Any) -> dict[str, Any]:
    calls = [
        dict(call) for call in message.get("tool_calls") or [{"id": "c", "function": {"name": "f"}}]
    ]
    if field.startswith("function."):
        calls[-1]["function"] = {**calls[-1]["function"], field.split(".")[1]: value}
    else:
        calls[-1][field] = value
    return {**message, "role": "assistant", "tool_calls": calls}


# A plain message with one field (of the message or of its last call) set to another value.
NEAR = st.one_of(
    st.builds(_with, PLAIN, st.sampled_from(FIELDS), VALUE),
    st.builds(_with_call, PLAIN, st.sampled_from(CALL_FIELDS), VALUE),
)


def _same(ours: list[Item], theirs: list[Item]) -> None:
    assert [type(item) for item in ours] == [type(item) for item in theirs]
    assert ours == theirs
    for mine, general in zip(ours, theirs, strict=True):
        assert list(mine.__dict__) == list(general.__dict__)  # the fields in the same order
        assert mine.model_fields_set == general.model_fields_set
        assert mine.__pydantic_extra__ == general.__pydantic_extra__
        assert mine.__pydantic_private__ == general.__pydantic_private__
        assert mine.model_dump(exclude_unset=True) == general.model_dump(exclude_unset=True)
        assert _json(mine) == _json(general)
        assert hash(mine) == hash(general)


def _json(item: Item) -> str:
    try:
        return item.model_dump_json()
    except ValueError as exc:  # a lone surrogate: neither serialises
        return type(exc).__name__


@settings(deadline=None, max_examples=500)
@given(message=MESSAGE | PLAIN | NEAR)
@example(message={"role": "tool", "tool_call_id": "", "content": "x"})
@example(message={"role": "assistant", "tool_calls": [{"id": "", "function": {"name": "f"}}]})
def test_the_items_chat_to_items_builds_or_none(message: dict[str, Any]) -> None:
    ours = plain_chat_message_items(message)
    if ours is None:
        return  # the general path (which may refuse the message)
    _same(ours, chat_to_items([message]))


@settings(deadline=None, max_examples=300)
@given(message=PLAIN)
def test_plain_messages_take_the_fast_path(message: dict[str, Any]) -> None:
    ours = plain_chat_message_items(message)
    assert ours is not None
    _same(ours, chat_to_items([message]))


def test_built_items_stay_frozen() -> None:
    items = plain_chat_message_items(
        {
            "role": "assistant",
            "content": "x",
            "tool_calls": [{"id": "c", "function": {"name": "f"}}],
        }
    )
    assert items is not None
    for item in items:
        with pytest.raises((ConfigError, ValueError, TypeError)):
            item.seq = 3  # type: ignore[misc]
        copy = item.model_copy(update={"seq": 3})
        assert copy.seq == 3 and item.seq is None and "seq" not in item.model_fields_set


@pytest.mark.parametrize("format", ["chat", "responses", "anthropic"])
def test_only_chat_conversations_read_chat_dicts(format: str) -> None:
    """A chat tool message is read in a chat conversation; in another format it is no message
    of that format, and it is passed through (the fast reader is for chat alone)."""
    from compactkit.integrations import MessageCompactor
    from compactkit.runtime import PassthroughEvent

    compactor = MessageCompactor("gpt-4o", format=format)  # type: ignore[arg-type]
    messages = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c1"}]
    turn = compactor(messages)
    passed = [event for event in turn.events if isinstance(event, PassthroughEvent)]
    assert [event.index for event in passed] == ([] if format == "chat" else [1])
