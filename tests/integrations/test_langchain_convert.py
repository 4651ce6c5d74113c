"""LangChain messages <-> compactkit items: lossless, group-safe, never dropping a message."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from compactkit import FunctionCall, FunctionCallOutput, Message
from compactkit.compressors import mask_output
from compactkit.integrations._langchain_convert import (
    is_summary,
    to_items,
    to_messages,
    to_tools,
)
from compactkit.items import (
    ImagePart,
    Item,
    RawPart,
    TextPart,
    group_items,
    set_summary_key,
    summary_message,
)


def items_of(messages: list[BaseMessage], warnings: list[str] | None = None) -> list[Item]:
    out: list[Item] = []
    for message in messages:
        converted = to_items(message, (warnings if warnings is not None else []).append)
        assert not isinstance(converted, str)
        out.extend(converted)
    return out


RICH = [
    SystemMessage("You are terse.", id="s1"),
    HumanMessage(
        [
            "look at this",
            {
                "type": "image_url",
                "image_url": {"url": "https://example.com/a.png", "detail": "low"},
            },
            {"type": "file", "file_id": "file-1"},
        ],
        id="h1",
        name="alice",
        additional_kwargs={"origin": "web"},
    ),
    AIMessage(
        [{"type": "text", "text": "Reading both.", "id": "t1"}],
        tool_calls=[
            {"name": "read", "args": {"path": "a.py"}, "id": "call_a", "type": "tool_call"},
            {"name": "read", "args": {"path": "b.py", "n": [1, 2]}, "id": "call_b"},
        ],
        id="run-1",
        additional_kwargs={"refusal": None},
        response_metadata={"model_name": "gpt-4o-mini", "finish_reason": "tool_calls"},
        usage_metadata={"input_tokens": 30, "output_tokens": 12, "total_tokens": 42},
    ),
    ToolMessage("print('a')", tool_call_id="call_a", name="read", id="tm1", artifact={"rows": 3}),
    ToolMessage("no such file", tool_call_id="call_b", status="error", id="tm2"),
    AIMessage("Done.", id="run-2", invalid_tool_calls=[]),
]


def test_items_follow_the_chat_mapping() -> None:
    items = items_of(RICH)
    assert [type(item).__name__ for item in items] == [
        "Message",
        "Message",
        "Message",
        "FunctionCall",
        "FunctionCall",
        "FunctionCallOutput",
        "FunctionCallOutput",
        "Message",
    ]
    user = items[1]
    assert isinstance(user, Message) and user.name == "alice"
    assert user.content[0] == TextPart(text="look at this")  # type: ignore[index]
    assert user.content[1] == ImagePart(url="https://example.com/a.png", detail="low")  # type: ignore[index]
    assert isinstance(user.content[2], RawPart)  # type: ignore[index]
    call = items[4]
    assert isinstance(call, FunctionCall) and call.call_id == "call_b"
    assert call.parsed_arguments() == {"path": "b.py", "n": [1, 2]}
    error = items[6]
    assert isinstance(error, FunctionCallOutput) and error.is_error is True
    # One assistant turn with both results: a single group, never cut inside.
    assert [(g.start, g.stop) for g in group_items(items)] == [(0, 1), (1, 2), (2, 7), (7, 8)]


def test_round_trip_returns_the_very_same_messages() -> None:
    back = to_messages(items_of(RICH))
    assert back == RICH
    assert all(a is b for a, b in zip(back, RICH, strict=True))


def test_a_masked_tool_output_changes_only_the_content() -> None:
    items = items_of(RICH)
    output = items[5]
    assert isinstance(output, FunctionCallOutput)
    items[5] = mask_output(output, tokens=900)
    back = to_messages(items)
    changed = back[3]
    assert isinstance(changed, ToolMessage) and changed is not RICH[3]
    assert changed.text.startswith("[masked output of read (call_id call_a)")
    original = RICH[3]
    assert isinstance(original, ToolMessage)
    assert (changed.tool_call_id, changed.id, changed.name, changed.artifact) == (
        original.tool_call_id,
        original.id,
        original.name,
        original.artifact,
    )
    assert original.content == "print('a')"  # the state's message is not mutated


def test_items_compactkit_made_become_new_messages() -> None:
    summary = summary_message("goal: ship it", "user")
    back = to_messages([summary, *items_of(RICH[2:5])])
    assert is_summary(back[0]) and back[0].text == summary.text  # framed and sealed as sent
    assert back[0].additional_kwargs["compactkit_summary"] == "goal: ship it"
    assert back[1:] == RICH[2:5]
    fresh = to_messages(
        [
            Message(role="assistant", content="calling"),
            FunctionCall(call_id="c9", name="read", arguments='{"path": "x"}'),
            FunctionCallOutput(call_id="c9", output="x", name="read"),
        ]
    )
    assert isinstance(fresh[0], AIMessage) and fresh[0].tool_calls[0]["id"] == "c9"
    assert fresh[0].tool_calls[0]["args"] == {"path": "x"}
    assert isinstance(fresh[1], ToolMessage) and fresh[1].tool_call_id == "c9"


def test_the_summary_is_recognised_by_its_mark_not_by_its_text() -> None:
    marked = to_messages([summary_message("earlier work", "user")])[0]
    assert isinstance(marked, HumanMessage)
    assert to_items(marked, [].append) == "earlier work"
    # Read back in another process (another seal key): the mark still finds it, exactly.
    set_summary_key("another process")
    try:
        assert to_items(marked, [].append) == "earlier work"
    finally:
        set_summary_key(None)
    for imitation in (
        HumanMessage(marked.content),  # the same text, without the mark: another key's seal
        HumanMessage("earlier work", additional_kwargs={"lc_source": "summarization"}),
    ):
        set_summary_key("another process")
        try:
            converted = to_items(imitation, [].append)
        finally:
            set_summary_key(None)
        assert isinstance(converted, list) and isinstance(converted[0], Message)


def test_unknown_message_kinds_pass_through_with_a_warning() -> None:
    warnings: list[str] = []
    odd = [ChatMessage("critique", role="critic"), FunctionMessage("42", name="legacy")]
    no_id = AIMessage("", tool_calls=[{"name": "read", "args": {}, "id": None}])
    items = items_of([*odd, no_id], warnings)
    assert len(warnings) == 3
    assert "ChatMessage" in warnings[0] and "FunctionMessage" in warnings[1]
    assert "without an id" in warnings[2]
    assert all(isinstance(item, Message) for item in items)  # no call without an answer
    back = to_messages(items)
    assert back == [*odd, no_id] and all(a is b for a, b in zip(back, [*odd, no_id], strict=True))


def test_tool_schemas_are_counted_from_the_bound_tools() -> None:
    from langchain_core.tools import tool

    @tool
    def read(path: str) -> str:
        """Read a file."""
        return path

    schemas = to_tools([read, {"type": "web_search"}])
    assert [t.name for t in schemas] == ["read"]
    assert schemas[0].parameters is not None and "path" in schemas[0].parameters["properties"]


# -- property: any history of turns survives the round trip, and groups never split ---------

texts = st.text(min_size=0, max_size=20)
args = st.dictionaries(st.sampled_from(["a", "b", "path"]), st.integers() | texts, max_size=3)
blocks = st.lists(
    texts
    | texts.map(lambda t: {"type": "text", "text": t})
    | st.just({"type": "reasoning", "summary": []}),
    max_size=3,
)


@st.composite
def histories(draw: Any) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for turn in range(draw(st.integers(0, 5))):
        out.append(HumanMessage(draw(texts | blocks), id=f"h{turn}"))
        calls = [
            {"name": "tool", "args": draw(args), "id": f"c{turn}_{n}", "type": "tool_call"}
            for n in range(draw(st.integers(0, 3)))
        ]
        out.append(
            AIMessage(draw(texts | blocks), tool_calls=calls, id=f"a{turn}")  # type: ignore[arg-type]
        )
        for call in calls:
            status = draw(st.sampled_from(["success", "error"]))
            out.append(ToolMessage(draw(texts), tool_call_id=call["id"], status=status))
    return out


@settings(deadline=None, max_examples=60)
@given(histories())
def test_round_trip_is_lossless_for_any_history(messages: list[BaseMessage]) -> None:
    items = items_of(messages)
    assert to_messages(items) == messages
    # Each AI message with its tool results is one group: a cut can never split them.
    for group in group_items(items):
        calls = {i.call_id for i in group.slice(items) if isinstance(i, FunctionCall)}
        outputs = {i.call_id for i in group.slice(items) if isinstance(i, FunctionCallOutput)}
        assert outputs == calls
