"""pydantic-ai messages <-> compactkit items, losslessly, tool calls kept with their returns.

Mapping (one item per part the model reads as a message, as the OpenAI adapter sends them):

* ``ModelRequest`` parts: ``SystemPromptPart`` -> ``Message(system)``, ``UserPromptPart`` ->
  ``Message(user)`` (text, image URLs and images as parts, other media as ``RawPart``),
  ``ToolReturnPart`` -> ``FunctionCallOutput`` (the text the model reads,
  ``model_response_str()``; failed and retried outcomes are errors), ``RetryPromptPart`` with a
  tool -> an error ``FunctionCallOutput``, ``RetryFeedbackPart`` (and a tool-less retry prompt)
  -> ``Message(user)``;
* a ``ModelResponse`` -> one ``Message(assistant)`` holding its text, thinking and other parts
  (when there are any, or no tool calls), then one ``FunctionCall`` per ``ToolCallPart``
  (``args_as_json_str()``). Calls and returns pair by ``tool_call_id``, so the groups compactkit
  cuts at keep every call with its return: a ``ToolReturnPart`` is never left without its call
  (pydantic-ai would silently drop it and the run could loop).

Every item keeps the message it came from (and which parts) in ``extra["__pydantic_ai__"]``, in
process only. Going back, unchanged items return the very same ``ModelRequest``/``ModelResponse``
objects; a request of which only some parts are sent (a cut between a turn's tool returns and a
new user prompt, a masked tool return) is a copy holding those parts. A part kind compactkit
does not model is passed through untouched (counted by size) and reported through ``warn``.
compactkit's summary is a ``ModelRequest`` whose part is the sealed rendering and whose ``metadata``
(never sent to a model) carries the text. pydantic-ai merges it into the next request at the
start of a run and drops the metadata, so the seal is what finds it then (across processes,
with a shared ``COMPACTKIT_SUMMARY_KEY``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition

from compactkit.integrations._mirror import Converted, Warn
from compactkit.items import (
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    RawPart,
    Tool,
)
from compactkit.items import TextPart as Text
from compactkit.items.snapshot import (
    DEFAULT_SUMMARY_ROLE,
    SUMMARY_NAME,
    SummaryRole,
    unseal_summary,
)
from compactkit.items.snapshot import summary_message as render_summary

__all__ = ["SUMMARY_KEY", "is_summary", "summary_request", "to_items", "to_messages", "to_tools"]

SOURCE_KEY = "__pydantic_ai__"  # extra: (the message, the indices of its parts this item is)
_VIEW_KEY = "__pydantic_ai_view__"  # extra: the output text as converted (unchanged check)

SEAL_OPEN = f"<{SUMMARY_NAME} sig="
SUMMARY_KEY = "compactkit_summary"
"""The ``ModelRequest.metadata`` key holding compactkit's summary (metadata is never sent)."""

_ERRORS = ("failed", "retried")


def summary_request(text: str, role: SummaryRole = DEFAULT_SUMMARY_ROLE) -> ModelRequest:
    """The request carrying compactkit's summary ``text`` in a pydantic-ai history: its part is
    the summary as compactkit renders it for a model (framed as context, sealed)."""
    sealed = render_summary(text, role).text
    part = UserPromptPart(sealed) if role == "user" else SystemPromptPart(sealed)
    return ModelRequest(parts=[part], metadata={SUMMARY_KEY: text})


def is_summary(message: ModelMessage) -> bool:
    """Whether ``message`` is a summary compactkit wrote (its metadata mark, never its text)."""
    metadata = getattr(message, "metadata", None)
    return (
        isinstance(message, ModelRequest)
        and isinstance(metadata, dict)
        and isinstance(metadata.get(SUMMARY_KEY), str)
    )


def to_items(message: ModelMessage, warn: Warn) -> Converted:
    """The items of one pydantic-ai message, or the summary text for compactkit's summary."""
    if isinstance(message, ModelResponse):
        return _response_items(message, warn)
    if not isinstance(message, ModelRequest):
        warn(f"a {type(message).__name__} is not a pydantic-ai message: passed through untouched")
        return [_opaque(message, (), message, None)]
    metadata = message.metadata
    marked = metadata.get(SUMMARY_KEY) if isinstance(metadata, dict) else None
    items: list[Item | str] = []
    for index, part in enumerate(message.parts):
        summary = _summary_in(part, marked if isinstance(marked, str) else None)
        items.append(summary if summary is not None else _request_item(message, index, part, warn))
    if not items:
        warn("an empty ModelRequest (no parts): passed through untouched")
        items.append(_opaque(message, (), message, ""))
    return items


def _request_item(message: ModelRequest, index: int, part: Any, warn: Warn) -> Item:
    ref: dict[str, Any] = {SOURCE_KEY: (message, (index,))}
    if isinstance(part, SystemPromptPart):
        return Message(role="system", content=part.content, extra=ref)
    if isinstance(part, UserPromptPart):
        return Message(role="user", content=_user_content(part.content), extra=ref)
    if isinstance(part, ToolReturnPart):
        text = part.model_response_str()
        return FunctionCallOutput(
            call_id=part.tool_call_id,
            output=text,
            name=part.tool_name,
            is_error=True if part.outcome in _ERRORS else None,
            extra={**ref, _VIEW_KEY: text},
        )
    if isinstance(part, RetryPromptPart):
        text = part.model_response()
        if part.tool_name is not None:
            return FunctionCallOutput(
                call_id=part.tool_call_id,
                output=text,
                name=part.tool_name,
                is_error=True,
                extra={**ref, _VIEW_KEY: text},
            )
        return Message(role="user", content=text, extra=ref)
    if isinstance(part, RetryFeedbackPart):
        return Message(role="user", content=part.model_response(), extra=ref)
    content = getattr(part, "content", None)
    warn(
        f"a {type(part).__name__} request part is not a part kind compactkit models: passed "
        "through untouched"
    )
    return _opaque(message, (index,), part, content if isinstance(content, str) else None)


def _summary_in(part: Any, marked: str | None) -> str | None:
    """The summary a prompt part carries: its seal verifies (this process, or a shared key), or
    it is sealed and its request bears compactkit's metadata mark (another process's key).
    pydantic-ai may merge the summary's request with the next one, so this is read per part."""
    if not isinstance(part, SystemPromptPart | UserPromptPart):
        return None
    content = part.content
    if not isinstance(content, str) or not content.startswith(SEAL_OPEN):
        return None
    summary = unseal_summary(content)
    return summary if summary is not None else marked


def _response_items(message: ModelResponse, warn: Warn) -> list[Item]:
    calls: list[Item] = []
    content: list[ContentPart] = []
    indices: list[int] = []
    for index, part in enumerate(message.parts):
        if isinstance(part, ToolCallPart):
            calls.append(
                FunctionCall(
                    call_id=part.tool_call_id,
                    name=part.tool_name,
                    arguments=part.args_as_json_str(),
                    extra={SOURCE_KEY: (message, (index,))},
                )
            )
            continue
        indices.append(index)
        if isinstance(part, TextPart):
            content.append(Text(text=part.content))
        elif isinstance(part, ThinkingPart):
            content.append(RawPart(format="pydantic_ai", data={"thinking": part.content}))
        else:
            if not _known_response_part(part):
                warn(
                    f"a {type(part).__name__} response part is not a part kind compactkit "
                    "models: passed through untouched, counted by size"
                )
            content.append(RawPart(format="pydantic_ai", data=_describe(part)))
    items: list[Item] = []
    if content or not calls:
        text = content[0].text if len(content) == 1 and isinstance(content[0], Text) else None
        items.append(
            Message(
                role="assistant",
                content=text if text is not None else tuple(content),
                extra={SOURCE_KEY: (message, tuple(indices))},
            )
        )
    return [*items, *calls]


def to_messages(
    items: Sequence[Item], *, summary_role: SummaryRole = DEFAULT_SUMMARY_ROLE
) -> list[ModelMessage]:
    """pydantic-ai messages for ``items``: the original objects where the items are unchanged."""
    out: list[ModelMessage] = []
    index, count = 0, len(items)
    while index < count:
        item = items[index]
        source = _source(item)
        stop = index + 1
        if source is not None:
            while stop < count and _source(items[stop]) is source:
                stop += 1
            out.append(_restore(source, items[index:stop]))
        else:
            if isinstance(item, FunctionCall) or (
                isinstance(item, Message) and item.role == "assistant"
            ):
                while stop < count and isinstance(items[stop], FunctionCall):
                    if _source(items[stop]) is not None:
                        break
                    stop += 1
            out.append(_fresh(items[index:stop], summary_role))
        index = stop
    return out


def to_tools(definitions: Sequence[ToolDefinition]) -> list[Tool]:
    """compactkit ``Tool`` schemas of the tools offered to the model (their tokens count)."""
    return [
        Tool(
            name=definition.name,
            description=definition.description,
            parameters=definition.parameters_json_schema,
        )
        for definition in definitions
    ]


# -- helpers ------------------------------------------------------------------------------------


def _source(item: Item) -> ModelMessage | None:
    extra = getattr(item, "extra", None)
    entry = extra.get(SOURCE_KEY) if extra else None
    return entry[0] if isinstance(entry, tuple) else None


def _restore(source: ModelMessage, run: Sequence[Item]) -> ModelMessage:
    parts: list[Any] = []
    changed = False
    for item in run:
        extra: dict[str, Any] = getattr(item, "extra", None) or {}
        for index in extra[SOURCE_KEY][1]:
            part = source.parts[index]
            if isinstance(item, FunctionCallOutput) and item.output is not extra.get(_VIEW_KEY):
                part = dataclasses.replace(part, content=item.text)  # a masked output
                changed = True
            parts.append(part)
    if not changed and len(parts) == len(source.parts):
        return source
    if isinstance(source, ModelRequest):
        return dataclasses.replace(source, parts=parts)
    return dataclasses.replace(source, parts=parts)


def _fresh(run: Sequence[Item], summary_role: SummaryRole) -> ModelMessage:
    first = run[0]
    if isinstance(first, FunctionCallOutput):
        return ModelRequest(
            parts=[
                ToolReturnPart(
                    tool_name=first.name or "tool",
                    content=first.text,
                    tool_call_id=first.call_id,
                    outcome="failed" if first.is_error else "success",
                )
            ]
        )
    calls = [
        ToolCallPart(tool_name=item.name, args=item.arguments, tool_call_id=item.call_id)
        for item in run
        if isinstance(item, FunctionCall)
    ]
    if isinstance(first, FunctionCall):
        return ModelResponse(parts=calls)
    if isinstance(first, Message):
        summary = unseal_summary(first.text) if first.role != "assistant" else None
        if summary is not None:
            return summary_request(summary, "user" if first.role == "user" else "system")
        if first.role == "assistant":
            return ModelResponse(parts=[TextPart(first.text), *calls])
        if first.role == "user":
            return ModelRequest(parts=[UserPromptPart(first.text)])
        return ModelRequest(parts=[SystemPromptPart(first.text)])
    raise AssertionError(f"unexpected item {first!r:.80}")  # Reasoning is never produced here


def _opaque(message: object, indices: tuple[int, ...], part: object, text: str | None) -> Message:
    # Sent as user-side text (or counted by size); the mirror pins it, so it is never dropped.
    content: str | tuple[ContentPart, ...] = (
        text if text is not None else (RawPart(format="pydantic_ai", data=_describe(part)),)
    )
    return Message(role="user", content=content, extra={SOURCE_KEY: (message, indices)})


def _user_content(content: str | Sequence[Any]) -> str | tuple[ContentPart, ...]:
    if isinstance(content, str):
        return content
    parts: list[ContentPart] = []
    for value in content:
        if isinstance(value, str):
            parts.append(Text(text=value))
        elif isinstance(value, TextContent):
            parts.append(Text(text=value.content))
        elif isinstance(value, ImageUrl):
            parts.append(ImagePart(url=value.url))
        elif isinstance(value, BinaryContent) and value.is_image:
            parts.append(ImagePart(url=value.data_uri))
        else:
            parts.append(RawPart(format="pydantic_ai", data=_describe(value)))
    return tuple(parts)


def _describe(value: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"kind": type(value).__name__}
    for name in ("url", "media_type", "content", "tool_name", "args"):
        field = getattr(value, name, None)
        if isinstance(field, str | dict | list | int | float):
            data[name] = field
    return data


def _known_response_part(part: Any) -> bool:
    # Parts of a response the model wrote itself, which the provider takes back as they are.
    return type(part).__name__ in {
        "NativeToolCallPart",
        "NativeToolReturnPart",
        "NativeToolSearchCallPart",
        "NativeToolSearchReturnPart",
        "FilePart",
        "CompactionPart",
        "SpeechPart",
    }
