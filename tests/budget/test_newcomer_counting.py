"""What a newcomer hands a counter first — chat dicts, one message, a string, OpenAI tool
schemas — is a ``ConfigError`` that says how to convert it, never a raw ``AttributeError``."""

from __future__ import annotations

from typing import Any

import pytest

from compactkit import ConfigError, Message, chat_to_items, counter_for
from compactkit.budget import EstimateCounter, TiktokenCounter, TokenCounter
from compactkit.formats import tools_from_chat

CHAT = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]


@pytest.fixture(params=["tiktoken", "estimate"])
def counter(request: pytest.FixtureRequest) -> TokenCounter:
    if request.param == "tiktoken":
        return TiktokenCounter("o200k_base")
    return EstimateCounter(3.5)


@pytest.mark.parametrize(
    ("call", "fix"),
    [
        (lambda c: c.count(CHAT), "chat_to_items"),
        (lambda c: c.count_item(CHAT[0]), "chat_to_items"),
        (lambda c: c.count(Message(role="user", content="hi")), "wrap it in a list"),
        (lambda c: c.count("hello"), "count_text"),
        (lambda c: c.count([], tools=TOOLS), "tools_from_chat"),
        (lambda c: c.count_overhead(TOOLS), "tools_from_chat"),
        (lambda c: c.count_text(5), "count(items)"),
    ],
)
def test_wrong_shapes_say_how_to_convert(counter: TokenCounter, call: Any, fix: str) -> None:
    with pytest.raises(ConfigError, match=fix.replace("(", r"\(").replace(")", r"\)")):
        call(counter)


def test_the_converted_shapes_count() -> None:
    counter = counter_for("gpt-4o")
    converted = counter.count(chat_to_items(CHAT), tools=tools_from_chat(TOOLS))
    bare = counter.count(chat_to_items(CHAT))
    assert converted.tokens > bare.tokens > 0
