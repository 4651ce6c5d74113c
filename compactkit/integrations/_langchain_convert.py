"""LangChain messages <-> compactkit items, losslessly.

Mapping (the same as compactkit's Chat Completions adapter, which is what ``ChatOpenAI`` sends):

* ``SystemMessage`` -> ``Message(system)``, ``HumanMessage`` -> ``Message(user)``, a
  ``ChatMessage`` with a role compactkit knows -> ``Message(role)``;
* ``AIMessage`` -> ``Message(assistant)`` (when it has content or no tool calls) followed by one
  ``FunctionCall`` per ``tool_calls`` entry (``id`` -> ``call_id``, ``args`` as JSON);
* ``ToolMessage`` -> ``FunctionCallOutput`` (``tool_call_id`` -> ``call_id``, ``status="error"``
  -> ``is_error``);
* content blocks: text -> ``TextPart``, ``image_url``/``image`` with a URL -> ``ImagePart``,
  anything else -> ``RawPart(format="langchain")`` (counted by size).

compactkit's summary is a ``HumanMessage`` marked the way LangChain's own
``SummarizationMiddleware`` marks its summary, ``additional_kwargs["lc_source"] ==
"summarization"`` (so tooling that looks for LangChain's summary finds it), with the summary's
text in ``additional_kwargs["compactkit_summary"]`` (marks only code can set, never text a user
or a tool could type). A message with LangChain's mark alone (a summary LangChain's middleware
wrote) stays an ordinary message: compactkit recognises only the mark it writes itself.

Every item keeps the message it came from in ``extra["__langchain__"]`` (in process only; keys
starting with ``__`` are never written to a provider). Going back, an item that is unchanged
returns that very message object — ``additional_kwargs``, ``response_metadata``,
``usage_metadata``, ids and content blocks included — and a masked tool output returns a copy of
its ``ToolMessage`` with only the content replaced. Items compactkit made (the summary) become
new messages. A message of a kind compactkit does not model is passed through untouched, counted
as user text, and reported through ``warn``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.tool import ToolCall

from compactkit.errors import FormatError
from compactkit.formats.chat import tools_from_chat
from compactkit.integrations._mirror import Converted, Warn
from compactkit.items import (
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    RawPart,
    TextPart,
    Tool,
)
from compactkit.items.snapshot import DEFAULT_SUMMARY_ROLE, SummaryRole, unseal_summary
from compactkit.items.snapshot import summary_message as render_summary

__all__ = [
    "CALL_INDEX_KEY",
    "LANGCHAIN_SUMMARY",
    "SOURCE_KEY",
    "Memo",
    "SUMMARY_SOURCE",
    "has_content",
    "is_summary",
    "summary_message",
    "to_items",
    "to_messages",
    "to_tools",
]

SOURCE_KEY = "__langchain__"
"""The ``extra`` key holding the LangChain message an item came from."""
_INDEX_KEY = "__langchain_call__"  # which entry of ``tool_calls`` a FunctionCall is
CALL_INDEX_KEY = _INDEX_KEY
"""The ``extra`` key holding which entry of its message's ``tool_calls`` a ``FunctionCall`` is."""

SUMMARY_SOURCE = "compactkit_summary"
"""``additional_kwargs`` key holding the text of the summary compactkit writes into the state
(providers are never sent ``additional_kwargs``)."""
LANGCHAIN_SUMMARY = "summarization"
"""``additional_kwargs["lc_source"]`` of a summary message: the value LangChain's own
``SummarizationMiddleware`` writes (earlier compactkit states wrote ``SUMMARY_SOURCE`` there)."""

_ROLES = {"system": "system", "developer": "developer", "user": "user", "human": "user"}
_ROLES_AI = {"assistant": "assistant", "ai": "assistant"}
_DETAILS = ("auto", "low", "high")


def summary_message(text: str, role: SummaryRole = DEFAULT_SUMMARY_ROLE) -> BaseMessage:
    """The message carrying compactkit's summary ``text`` in a LangChain history.

    Its content is the summary as compactkit renders it for a model (framed as context and
    sealed); the summary itself rides in ``additional_kwargs``, so another process (with another
    seal key) still reads it back exactly.
    """
    kwargs = {"lc_source": LANGCHAIN_SUMMARY, SUMMARY_SOURCE: text}
    sealed = render_summary(text, role).text
    if role == "user":
        return HumanMessage(content=sealed, additional_kwargs=kwargs)
    return SystemMessage(content=sealed, additional_kwargs=kwargs)


def is_summary(message: BaseMessage) -> bool:
    """Whether ``message`` is a summary compactkit wrote (its mark, never its text)."""
    return (
        isinstance(message, HumanMessage | SystemMessage)
        and message.additional_kwargs.get("lc_source") in (LANGCHAIN_SUMMARY, SUMMARY_SOURCE)
        and isinstance(message.additional_kwargs.get(SUMMARY_SOURCE), str)
    )


def to_items(message: BaseMessage, warn: Warn) -> Converted:
    """The items of one LangChain message, or the summary's text for a summary compactkit
    wrote. Never raises for a message shape: unknown ones are passed through (and warned of)."""
    if is_summary(message):
        return str(message.additional_kwargs[SUMMARY_SOURCE])
    ref = {SOURCE_KEY: message}
    name = message.name
    content = _view(message.content)
    if isinstance(content, str) and content.startswith("<"):
        summary = unseal_summary(content)  # compactkit's own rendering, read back
        if summary is not None and not isinstance(message, AIMessage | ToolMessage):
            return summary
    if isinstance(message, SystemMessage):
        return [Message(role="system", content=content, name=name, id=message.id, extra=ref)]
    if isinstance(message, HumanMessage):
        return [Message(role="user", content=content, name=name, id=message.id, extra=ref)]
    if isinstance(message, ToolMessage):
        return [
            FunctionCallOutput(
                call_id=message.tool_call_id,
                output=content,
                name=name,
                is_error=True if message.status == "error" else None,
                id=message.id,
                extra=ref,
            )
        ]
    if isinstance(message, AIMessage):
        return _ai_items(message, content, name, warn)
    if isinstance(message, ChatMessage) and message.role in _ROLES:
        role = _ROLES[message.role]
        return [Message(role=role, content=content, name=name, id=message.id, extra=ref)]
    if isinstance(message, ChatMessage) and message.role in _ROLES_AI:
        return [Message(role="assistant", content=content, name=name, id=message.id, extra=ref)]
    warn(
        f"a {type(message).__name__} (type {message.type!r}) is not a message kind compactkit "
        "models: passed through untouched and counted as user text"
    )
    return [Message(role="user", content=content, id=message.id, extra=ref)]


def _ai_items(
    message: AIMessage, content: str | tuple[ContentPart, ...], name: str | None, warn: Warn
) -> list[Item]:
    ref: dict[str, Any] = {SOURCE_KEY: message}
    calls = message.tool_calls
    if any(not call.get("id") for call in calls):
        warn(
            "an AIMessage has a tool call without an id, which no ToolMessage can answer: "
            "passed through untouched as assistant text"
        )
        return [Message(role="assistant", content=content, name=name, id=message.id, extra=ref)]
    items: list[Item] = []
    if not calls or _has_content(content):
        items.append(
            Message(role="assistant", content=content, name=name, id=message.id, extra=ref)
        )
    for index, call in enumerate(calls):
        items.append(
            FunctionCall(
                call_id=str(call["id"]),
                name=call["name"],
                arguments=_arguments(call.get("args")),
                extra={SOURCE_KEY: message, _INDEX_KEY: index},
            )
        )
    return items


Memo = dict[int, tuple[Item, Item, int, BaseMessage]]
"""Runs already converted, by ``id`` of their first item: (first, last, length, message)."""


def to_messages(
    items: Sequence[Item],
    *,
    summary_role: SummaryRole = DEFAULT_SUMMARY_ROLE,
    memo: Memo | None = None,
) -> list[BaseMessage]:
    """LangChain messages for ``items``: the original objects where the items are unchanged.

    ``memo`` (kept by the caller between calls over one growing history) skips the runs
    converted before: items are immutable, so a run with the same first and last item objects
    is the same run.

    Raises:
        FormatError: an item LangChain cannot express (provider reasoning from another format).
    """
    out: list[BaseMessage] = []
    index, count = 0, len(items)
    while index < count:
        item = items[index]
        if memo is not None:
            hit = memo.get(id(item))
            if hit is not None and hit[0] is item:
                stop = index + hit[2]
                if stop <= count and items[stop - 1] is hit[1]:
                    out.append(hit[3])
                    index = stop
                    continue
        source = _source(item)
        stop = index + 1
        if source is not None:
            while stop < count and _source(items[stop]) is source:
                stop += 1
            message = _restore(source, items[index:stop])
            out.append(message)
            if memo is not None:
                memo[id(item)] = (item, items[stop - 1], stop - index, message)
        elif (summary := _summary_of(item)) is not None:
            assert isinstance(item, Message)  # only messages carry a summary
            out.append(summary_message(summary, "user" if item.role == "user" else "system"))
        else:
            opens_turn = isinstance(item, FunctionCall) or (
                isinstance(item, Message) and item.role == "assistant"
            )
            while (
                opens_turn
                and stop < count
                and isinstance(items[stop], FunctionCall)
                and _source(items[stop]) is None
            ):
                stop += 1
            out.append(_fresh(items[index:stop]))
        index = stop
    return out


def to_tools(tools: Sequence[Any]) -> list[Tool]:
    """compactkit ``Tool`` schemas of the tools bound to a model call (their tokens count).

    Tools LangChain cannot render as an OpenAI function (provider built-ins given as dicts) are
    skipped: they have no schema to count.
    """
    from langchain_core.utils.function_calling import convert_to_openai_tool

    out: list[Tool] = []
    for tool in tools:
        try:
            spec = convert_to_openai_tool(tool)
            out.extend(tools_from_chat([spec]))
        except (FormatError, ValueError, TypeError, KeyError):
            continue
    return out


def output_tools(response_format: Any) -> list[Tool]:
    """The schemas an agent's ``response_format`` adds to a model call (their tokens count).

    ``ToolStrategy``: LangChain binds one tool per schema beside the request's tools, after the
    middleware sees the request. ``ProviderStrategy`` sends the schema as the provider's
    response format, counted here as one function's schema (no count of that form is
    published). A bare schema (``AutoStrategy``) becomes either: counted as its tools.
    """
    if response_format is None:
        return []
    from langchain.agents.structured_output import AutoStrategy, ProviderStrategy, ToolStrategy

    if isinstance(response_format, ProviderStrategy):
        specs = [response_format.schema_spec]
    elif isinstance(response_format, ToolStrategy):
        specs = list(response_format.schema_specs)
    else:  # an AutoStrategy, or a bare schema a middleware's override left in the request
        schema = (
            response_format.schema if isinstance(response_format, AutoStrategy) else response_format
        )
        try:
            specs = list(ToolStrategy(schema=schema).schema_specs)
        except Exception:  # (a schema LangChain itself refuses: nothing to count)
            return []
    return [
        Tool(name=spec.name, description=spec.description or None, parameters=spec.json_schema)
        for spec in specs
    ]


# -- helpers ------------------------------------------------------------------------------------


def _summary_of(item: Item) -> str | None:
    if isinstance(item, Message) and item.role != "assistant" and isinstance(item.content, str):
        return unseal_summary(item.content)
    return None


def _source(item: Item) -> BaseMessage | None:
    extra = getattr(item, "extra", None)
    source = extra.get(SOURCE_KEY) if extra else None
    return source if isinstance(source, BaseMessage) else None


def _restore(source: BaseMessage, run: Sequence[Item]) -> BaseMessage:
    if isinstance(source, ToolMessage) and isinstance(run[0], FunctionCallOutput):
        output = run[0].output
        if output == _view(source.content):
            return source
        return source.model_copy(update={"content": _content(output)})
    if isinstance(source, AIMessage) and source.tool_calls:
        kept = [
            item.extra[_INDEX_KEY] for item in run if isinstance(item, FunctionCall) and item.extra
        ]
        if kept and len(kept) != len(source.tool_calls):  # only part of the turn was sent
            calls = [source.tool_calls[i] for i in kept]
            return source.model_copy(update={"tool_calls": calls})
    return source


def _fresh(run: Sequence[Item]) -> BaseMessage:
    first = run[0]
    if isinstance(first, FunctionCallOutput):
        return ToolMessage(
            content=_content(first.output),
            tool_call_id=first.call_id,
            name=first.name,
            status="error" if first.is_error else "success",
        )
    calls = [
        ToolCall(name=item.name, args=item.parsed_arguments(), id=item.call_id, type="tool_call")
        for item in run
        if isinstance(item, FunctionCall)
    ]
    if isinstance(first, FunctionCall):
        return AIMessage(content="", tool_calls=calls)
    if isinstance(first, Message):
        content = _content(first.content)
        if first.role == "assistant":
            return AIMessage(content=content, tool_calls=calls, name=first.name)
        if first.role == "user":
            return HumanMessage(content=content, name=first.name)
        return SystemMessage(content=content, name=first.name)
    raise FormatError(
        f"a {first.format} reasoning item cannot be sent through LangChain; keep reasoning in "
        "the messages it came with"
    )


def _view(content: Any) -> str | tuple[ContentPart, ...]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str(content)
    parts: list[ContentPart] = []
    for block in content:
        if isinstance(block, str):
            parts.append(TextPart(text=block))
        elif isinstance(block, Mapping):
            parts.append(_block_part(cast(Mapping[str, Any], block)))
        else:
            parts.append(RawPart(format="langchain", data={"value": repr(block)}))
    return tuple(parts)


def _block_part(block: Mapping[str, Any]) -> ContentPart:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return TextPart(text=block["text"])
    if kind == "image_url":
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        detail = image.get("detail") if isinstance(image, Mapping) else None
        if isinstance(url, str):
            return ImagePart(url=url, detail=detail if detail in _DETAILS else None)
    if kind == "image" and isinstance(block.get("url"), str):
        return ImagePart(url=block["url"])
    return RawPart(format="langchain", data=dict(block))


def _content(content: str | tuple[ContentPart, ...]) -> str | list[str | dict[str, Any]]:
    if isinstance(content, str):
        return content
    out: list[str | dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            out.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            image: dict[str, Any] = {"url": part.url}
            if part.detail is not None:
                image["detail"] = part.detail
            out.append({"type": "image_url", "image_url": image})
        else:
            out.append(dict(part.data))
    return out


def _has_content(content: str | tuple[ContentPart, ...]) -> bool:
    return bool(content) if isinstance(content, str) else len(content) > 0


def has_content(content: Any) -> bool:
    """Whether a LangChain message's ``content`` becomes a message item of its own (an
    ``AIMessage`` with tool calls and no text becomes its calls only)."""
    return _has_content(_view(content))


def _arguments(args: Any) -> str:
    try:
        return json.dumps(args if args is not None else {})
    except (TypeError, ValueError):  # not JSON: the tool call is still counted by its text
        return json.dumps(str(args))
