"""pydantic-ai messages <-> compactkit items: lossless, call and return parts kept together."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from compactkit import FunctionCall, FunctionCallOutput, Message
from compactkit.compressors import mask_output
from compactkit.integrations._pydantic_ai_convert import (
    summary_request,
    to_items,
    to_messages,
)
from compactkit.items import ImagePart, Item, RawPart, group_items, set_summary_key
from compactkit.items.snapshot import summary_message


def items_of(messages: list[ModelMessage], warnings: list[str] | None = None) -> list[Item]:
    out: list[Item] = []
    for message in messages:
        converted = to_items(message, (warnings if warnings is not None else []).append)
        assert not isinstance(converted, str)
        for entry in converted:
            assert not isinstance(entry, str)
            out.append(entry)
    return out


def prompt_items(messages: list[ModelMessage]) -> list[Item]:
    """The items a prompt sends, the summary compactkit holds (``mode="project"``) included."""
    out: list[Item] = []
    for message in messages:
        converted = to_items(message, [].append)
        for entry in [converted] if isinstance(converted, str) else converted:
            out.append(summary_message(entry) if isinstance(entry, str) else entry)
    return out


HISTORY: list[ModelMessage] = [
    ModelRequest(
        parts=[
            SystemPromptPart("You are terse."),
            UserPromptPart(["compare these", ImageUrl(url="https://example.com/a.png")]),
        ],
        instructions="be brief",
        run_id="run-1",
    ),
    ModelResponse(
        parts=[
            ThinkingPart("two reads", signature="sig-1"),
            TextPart("Reading both."),
            ToolCallPart("read", {"path": "a.py"}, tool_call_id="call_a"),
            ToolCallPart("read", '{"path": "b.py"}', tool_call_id="call_b"),
        ],
        model_name="gpt-4o-mini",
        provider_response_id="resp-1",
    ),
    ModelRequest(
        parts=[
            ToolReturnPart("read", {"lines": 3}, tool_call_id="call_a", metadata={"k": 1}),
            ToolReturnPart("read", "no such file", tool_call_id="call_b", outcome="retried"),
            RetryFeedbackPart("answer in JSON", retry=RetryInfo(cause="validation_error")),
            UserPromptPart("and now?"),
        ]
    ),
    ModelResponse(parts=[TextPart("Done.")]),
]


def test_items_follow_the_wire_mapping() -> None:
    items = items_of(HISTORY)
    kinds = [type(item).__name__ for item in items]
    assert kinds == [
        "Message",
        "Message",
        "Message",
        "FunctionCall",
        "FunctionCall",
        "FunctionCallOutput",
        "FunctionCallOutput",
        "Message",
        "Message",
        "Message",
    ]
    user = items[1]
    assert isinstance(user, Message) and user.role == "user"
    assert user.content[1] == ImagePart(url="https://example.com/a.png")  # type: ignore[index]
    assistant = items[2]
    assert isinstance(assistant, Message) and isinstance(assistant.content[0], RawPart)  # type: ignore[index]
    call = items[3]
    assert isinstance(call, FunctionCall) and call.parsed_arguments() == {"path": "a.py"}
    returned = items[5]
    assert isinstance(returned, FunctionCallOutput) and returned.output == '{"lines":3}'
    retry = items[6]
    assert isinstance(retry, FunctionCallOutput) and retry.is_error and retry.call_id == "call_b"
    # The response with both returns is one group; the new user prompt starts the next one.
    assert [(g.start, g.stop) for g in group_items(items)] == [
        (0, 1),
        (1, 2),
        (2, 7),
        (7, 8),
        (8, 9),
        (9, 10),
    ]


def test_round_trip_returns_the_very_same_messages() -> None:
    back = to_messages(items_of(HISTORY))
    assert back == HISTORY
    assert all(a is b for a, b in zip(back, HISTORY, strict=True))


def test_a_request_cut_between_its_parts_keeps_only_the_parts_sent() -> None:
    # A projection that drops the tool round keeps the new user prompt: the request it shared
    # with the tool returns is sent with that part only, never with an orphan return.
    items = items_of(HISTORY)
    back = to_messages([items[0], items[1], items[8], items[9]])
    assert back[0] is HISTORY[0]
    request = back[1]
    assert isinstance(request, ModelRequest) and request is not HISTORY[2]
    assert [type(p).__name__ for p in request.parts] == ["UserPromptPart"]
    assert back[2] is HISTORY[3]


def test_a_masked_return_changes_only_its_content() -> None:
    items = items_of(HISTORY)
    output = items[5]
    assert isinstance(output, FunctionCallOutput)
    items[5] = mask_output(output, tokens=900)
    request = to_messages(items)[2]
    assert isinstance(request, ModelRequest)
    masked = request.parts[0]
    assert isinstance(masked, ToolReturnPart)
    assert masked.content.startswith("[masked output of read (call_id call_a)")
    assert (masked.tool_call_id, masked.metadata) == ("call_a", {"k": 1})
    assert request.parts[1:] == HISTORY[2].parts[1:]  # type: ignore[union-attr]
    assert HISTORY[2].parts[0].content == {"lines": 3}  # type: ignore[union-attr]


def test_the_summary_is_read_back_per_part_even_after_a_merge() -> None:
    summary = summary_request("goal: ship it")
    assert to_items(summary, [].append) == ["goal: ship it"]
    # pydantic-ai merges adjacent requests: the summary part is still found, the prompt kept.
    merged = ModelRequest(parts=[*summary.parts, UserPromptPart("next")], metadata=summary.metadata)
    converted = to_items(merged, [].append)
    assert converted[0] == "goal: ship it"
    assert isinstance(converted[1], Message) and converted[1].text == "next"
    # Another process (another seal key) finds it by the metadata mark...
    set_summary_key("another process")
    try:
        assert to_items(summary, [].append) == ["goal: ship it"]
        # ...but the sealed text alone, without the mark, is an ordinary prompt.
        bare = ModelRequest(parts=list(summary.parts))
        assert isinstance(to_items(bare, [].append)[0], Message)
    finally:
        set_summary_key(None)


def test_unknown_parts_pass_through_with_a_warning() -> None:
    from pydantic_ai.messages import CompactionPart

    warnings: list[str] = []
    odd = ModelRequest(parts=[CompactionPart(content="opaque provider state")])
    empty = ModelRequest(parts=[])
    items = items_of([odd, empty], warnings)
    assert len(warnings) == 2 and "CompactionPart" in warnings[0] and "empty" in warnings[1]
    back = to_messages(items)
    assert back[0] is odd and back[1] is empty


# -- property: any history of turns survives the round trip, and groups never split ---------

texts = st.text(max_size=20)
args = st.dictionaries(st.sampled_from(["a", "b", "path"]), st.integers() | texts, max_size=3)


@st.composite
def histories(draw: Any) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    pending: list[ToolCallPart] = []
    for turn in range(draw(st.integers(0, 5))):
        parts: list[Any] = [
            ToolReturnPart(c.tool_name, draw(texts | args), tool_call_id=c.tool_call_id)
            for c in pending
        ]
        if draw(st.booleans()) or not parts:
            parts.append(UserPromptPart(draw(texts)))
        out.append(ModelRequest(parts=parts))
        pending = [
            ToolCallPart("tool", draw(args), tool_call_id=f"c{turn}_{n}")
            for n in range(draw(st.integers(0, 3)))
        ]
        response: list[Any] = [TextPart(draw(texts))] if draw(st.booleans()) else []
        out.append(ModelResponse(parts=[*response, *pending]))
    return out


@settings(deadline=None, max_examples=60)
@given(histories())
def test_round_trip_is_lossless_for_any_history(messages: list[ModelMessage]) -> None:
    items = items_of(messages)
    assert to_messages(items) == messages
    for group in group_items(items):
        calls = {i.call_id for i in group.slice(items) if isinstance(i, FunctionCall)}
        outputs = {i.call_id for i in group.slice(items) if isinstance(i, FunctionCallOutput)}
        assert outputs <= calls  # a return never sits in a group without its call


@st.composite
def bulky_histories(draw: Any) -> list[ModelMessage]:
    out = draw(histories())
    size = draw(st.sampled_from([0, 50, 600]))
    grown: list[ModelMessage] = []
    for message in out:  # make some tool returns bulky
        if isinstance(message, ModelRequest) and size:
            parts = [
                ToolReturnPart(
                    p.tool_name, f"{p.content} " + "data " * size, tool_call_id=p.tool_call_id
                )
                if isinstance(p, ToolReturnPart)
                else p
                for p in message.parts
            ]
            message = ModelRequest(parts=parts)
        grown.append(message)
    if not grown or not isinstance(grown[-1], ModelRequest):
        grown.append(ModelRequest(parts=[UserPromptPart("next?")]))
    return grown


@settings(deadline=None, max_examples=40)
@given(bulky_histories(), st.integers(150, 2_500))
def test_every_request_fits_keeps_returns_with_calls_and_the_newest_message(
    messages: list[ModelMessage], budget: int
) -> None:
    import asyncio

    from compactkit import BudgetError, counter_for
    from compactkit.integrations.pydantic_ai import CompactkitHistory

    loop = asyncio.new_event_loop()
    try:
        prompt, _, _ = loop.run_until_complete(
            CompactkitHistory("gpt-4o-mini", budget=budget).govern(messages)
        )
    except BudgetError:
        return  # what may never be dropped does not fit: refused, never sent over budget
    finally:
        loop.close()
    assert counter_for("gpt-4o-mini").count(prompt_items(prompt)).tokens <= budget
    calls: set[str] = set()
    for message in prompt:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                calls.add(part.tool_call_id)
            elif isinstance(part, ToolReturnPart):
                assert part.tool_call_id in calls  # pydantic-ai would drop it and loop
    newest, sent = messages[-1].parts[-1], prompt[-1].parts[-1]
    if sent is not newest:  # the newest part is always sent: as given or, too large, cut
        assert isinstance(sent, ToolReturnPart) and isinstance(newest, ToolReturnPart)
        assert sent.tool_call_id == newest.tool_call_id
        assert "[cut by compactkit: " in str(sent.content)
