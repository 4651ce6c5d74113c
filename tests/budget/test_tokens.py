"""Token counts against the API-reported counts of the OpenAI cookbook, offline."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from compactkit.budget.profiles import ToolSchemaRules
from compactkit.budget.tokens import (
    EstimateCounter,
    TiktokenCounter,
    counter_for,
    get_encoding,
    image_tokens,
)
from compactkit.errors import ConfigError
from compactkit.formats.chat import chat_to_items, tools_from_chat
from compactkit.items import FunctionCall, FunctionCallOutput, ImagePart, Message, TextPart, Tool

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "openai-token-counts.json"
COOKBOOK: dict[str, Any] = json.loads(REFERENCE.read_text())


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty tiktoken cache and no network: any download attempt fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a token count tried to use the network")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    get_encoding.cache_clear()


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize(
    ("encoding", "expected"),
    [("cl100k_base", 129), ("o200k_base", 124)],  # gpt-3.5-turbo/gpt-4; gpt-4o/gpt-4o-mini
)
def test_cookbook_chat_example_matches_the_api(encoding: str, expected: int) -> None:
    counter = TiktokenCounter(encoding)
    count = counter.count(chat_to_items(COOKBOOK["chat_example"]["messages"]))
    assert count.tokens == expected
    assert count.exact


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize(
    ("encoding", "func_init", "expected"),
    [("cl100k_base", 10, 105), ("o200k_base", 7, 101)],  # gpt-4; gpt-4o
)
def test_cookbook_tools_example_matches_the_api(
    encoding: str, func_init: int, expected: int
) -> None:
    example = COOKBOOK["tools_example"]
    counter = TiktokenCounter(encoding, tool_rules=ToolSchemaRules(func_init=func_init))
    count = counter.count(
        chat_to_items(example["messages"]), tools=tools_from_chat(example["tools"])
    )
    assert count.tokens == expected
    assert count.exact


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_bundled_encodings_reproduce_published_token_ids(encoding: str) -> None:
    enc = get_encoding(encoding)
    for text, ids in COOKBOOK["encoding_examples"].items():
        if encoding in ids:
            assert enc.encode(text) == ids[encoding], text


def test_counts_are_additive_over_items() -> None:
    counter = TiktokenCounter("o200k_base")
    items = chat_to_items(COOKBOOK["chat_example"]["messages"])
    tools = tools_from_chat(COOKBOOK["tools_example"]["tools"])
    total = counter.count(items, tools=tools).tokens
    assert total == sum(counter.count_item(i) for i in items) + counter.count_overhead(tools)


def test_tool_traffic_and_images_are_labelled_approximate() -> None:
    counter = TiktokenCounter("o200k_base")
    items = [
        Message(role="user", content=(TextPart(text="look"), ImagePart(url="https://x/y.png"))),
        FunctionCall(call_id="c1", name="read_file", arguments='{"path": "a.py"}'),
        FunctionCallOutput(call_id="c1", output="print(1)"),
    ]
    count = counter.count(items)
    assert not count.exact
    assert count.notes
    # Larger content never costs fewer tokens.
    assert counter.count_item(FunctionCallOutput(call_id="c1", output="print(1)" * 50)) > (
        counter.count_item(items[2])
    )


def test_nested_tool_schemas_are_labelled_approximate() -> None:
    nested = Tool(
        name="edit",
        parameters={
            "type": "object",
            "properties": {"ops": {"type": "array", "items": {"type": "object"}}},
        },
    )
    assert not TiktokenCounter("o200k_base").count([], tools=[nested]).exact


@pytest.mark.parametrize(
    "parameters",
    [
        {"type": "object", "properties": ["path", "mode"]},
        {"type": "object", "properties": "path"},
        {"type": "object", "properties": {"mode": {"type": "string", "enum": "fast"}}},
    ],
)
def test_a_malformed_tool_schema_is_counted_not_a_crash(parameters: dict[str, Any]) -> None:
    counter = TiktokenCounter("o200k_base")
    bare = counter.count([], tools=[Tool(name="f")]).tokens
    count = counter.count([], tools=[Tool(name="f", parameters=parameters)])
    assert count.tokens > bare  # what the schema says is priced, not ignored


def test_image_estimate_follows_openai_tiling() -> None:
    assert image_tokens(ImagePart(url="u", detail="low")) == 85
    # 2048x4096 scales to 1024x2048 then 768x1536: 2x3 tiles.
    assert image_tokens(ImagePart(url="u", detail="high", width=2048, height=4096)) == 85 + 170 * 6


def test_estimate_counter_is_never_exact() -> None:
    count = EstimateCounter(3.5).count([Message(role="user", content="hello there")])
    assert not count.exact
    assert count.encoding is None
    assert count.tokens > 0


def test_cache_makes_recount_cost_only_new_items() -> None:
    counter = TiktokenCounter("o200k_base")
    items = [Message(role="user", content=f"message {i}") for i in range(100)]
    counter.count(items)
    priced: list[object] = []
    original = counter._price

    def spy(item: Any) -> int:
        priced.append(item)
        return original(item)

    counter._price = spy  # type: ignore[method-assign]
    items.append(Message(role="assistant", content="new"))
    counter.count(items)
    assert priced == [items[-1]]


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize(
    ("model", "chat", "tools"),
    [
        ("gpt-3.5-turbo", 129, 105),
        ("gpt-4", 129, 105),
        ("gpt-4o", 124, 101),
        ("gpt-4o-mini", 124, 101),
    ],
)
def test_counter_for_model_reproduces_the_api(model: str, chat: int, tools: int) -> None:
    counter = counter_for(model)
    assert counter.count(chat_to_items(COOKBOOK["chat_example"]["messages"])).tokens == chat
    example = COOKBOOK["tools_example"]
    count = counter.count(
        chat_to_items(example["messages"]), tools=tools_from_chat(example["tools"])
    )
    assert (count.tokens, count.exact) == (tools, True)


def test_models_without_verified_rules_are_labelled() -> None:
    items = chat_to_items(COOKBOOK["chat_example"]["messages"])
    assert not counter_for("gpt-5").count(items).exact
    estimate = counter_for("claude-sonnet-4-5").count(items)
    assert not estimate.exact
    assert estimate.encoding is None


@pytest.mark.parametrize("thing", [{"role": "user", "content": "hi"}, "hi", 42])
def test_counting_what_is_not_an_item_says_how_to_convert_it(thing: object) -> None:
    counter = TiktokenCounter("o200k_base")
    for count in (counter.count_item, lambda x: counter.count([x])):
        with pytest.raises(ConfigError, match="convert provider messages first"):
            count(thing)  # type: ignore[arg-type]
