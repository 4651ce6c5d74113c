"""OpenAI Responses input items <-> compactkit items (``formats.validate`` checks them).

Mapping (one input item is one compactkit item, in order):

* ``message`` (``type`` optional, roles system/developer/user/assistant) -> ``Message``; ``id``
  -> ``Message.id``; other keys (``status``, ``phase``, …) -> ``Message.extra``;
* content parts: ``input_text``/``output_text`` -> ``TextPart``; ``input_image`` with an
  ``image_url`` -> ``ImagePart``; anything else (refusals, files, audio, text with annotations,
  images by ``file_id``) -> ``RawPart`` carried through untouched. Going back, text is written as
  ``output_text`` (with ``annotations: []``) in assistant messages and ``input_text`` elsewhere;
* ``function_call`` -> ``FunctionCall`` (``arguments`` verbatim); ``function_call_output`` ->
  ``FunctionCallOutput`` (string or parts); unmodelled keys -> ``extra``;
* ``reasoning`` -> ``Reasoning(format="responses", payload=<the item untouched>)``: encrypted
  content, summaries and id go back exactly as they came;
* ``compaction`` (from ``client.responses.compact``, ``context_management`` or a
  ``compaction_trigger``) -> ``ProviderCompaction(format="responses", payload=<the item
  untouched>)``, going back exactly as it came.

Other item types (built-in tool calls, item references) are rejected with the item's index.

The summary: a summary message's text is sealed by compactkit (``summary_message``), so it is
written and read back as it is, in every format; text that only looks like a summary stays an
ordinary message of its role (docs/security.md).

Responses cannot express Anthropic thinking blocks, a participant ``name``, ``is_error`` or
another format's raw parts and fields: converting one raises ``FormatError`` naming the item
unless ``lossy=True``, which drops it and reports it to ``on_drop``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from compactkit.errors import FormatError
from compactkit.formats._common import (
    Losses,
    check_tool_fields,
    item_list,
    shown,
    tag_extra,
    tool_list,
    wire_list,
)
from compactkit.items import (
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    ProviderCompaction,
    RawPart,
    Reasoning,
    TextPart,
    Tool,
)

__all__ = [
    "items_to_responses",
    "responses_to_items",
    "tools_from_responses",
    "tools_to_responses",
]

ResponsesItem = dict[str, Any]
_ROLES = ("system", "developer", "user", "assistant")


def responses_to_items(input_items: Iterable[Mapping[str, Any]] | str) -> list[Item]:
    """Convert Responses ``input`` (a list of items, or a string: one user message) to items.

    Raises:
        FormatError: an item is malformed or of a type compactkit does not model; the error
            names its index.
    """
    if isinstance(input_items, str):
        return [Message(role="user", content=input_items)]
    hint = '; for a request object {"input": [...]} pass its "input"'
    items: list[Item] = []
    raws = wire_list(input_items, "responses_to_items", "Responses input items", hint)
    for index, raw in enumerate(raws):
        try:
            items.append(_item_from_responses(raw))
        except FormatError as exc:
            raise FormatError(f"input item {index}: {exc}") from None
    return items


def items_to_responses(
    items: Iterable[Item],
    *,
    lossy: bool = False,
    on_drop: Callable[[Item, str], None] | None = None,
) -> list[ResponsesItem]:
    """Convert items to Responses input items.

    Args:
        items: The items, oldest first.
        lossy: Drop what Responses cannot express instead of raising.
        on_drop: Called with each item concerned and what was dropped, when ``lossy``.

    Raises:
        FormatError: something cannot be expressed and ``lossy`` is false.
    """
    losses: Losses[Item] = Losses("responses", lossy, on_drop)
    items = item_list(items, "items_to_responses")
    call_names = {i.call_id: i.name for i in items if isinstance(i, FunctionCall)}
    out: list[ResponsesItem] = []
    for item in items:
        if isinstance(item, Message):
            out.append(_message_to_responses(item, losses))
        elif isinstance(item, FunctionCall):
            call: ResponsesItem = {"type": "function_call"}
            if item.id is not None:
                call["id"] = item.id
            call.update(call_id=item.call_id, name=item.name, arguments=item.arguments)
            call.update(losses.native_extra(item, item.extra))
            out.append(call)
        elif isinstance(item, FunctionCallOutput):
            result: ResponsesItem = {"type": "function_call_output"}
            if item.id is not None:
                result["id"] = item.id
            result["call_id"] = item.call_id
            result["output"] = _content_to_responses(item.output, "user", item, losses)
            if item.name is not None and item.name != call_names.get(item.call_id, item.name):
                losses.lose(item, f"a tool name {shown(item.name)} that differs from its call's")
            elif item.name is not None:
                result["name"] = item.name
            if item.is_error:
                losses.lose(item, "is_error=True on a tool result")
            result.update(losses.native_extra(item, item.extra))
            out.append(result)
        elif item.format == "responses":
            out.append(dict(item.payload))
        elif isinstance(item, ProviderCompaction):
            losses.lose(item, f"a compaction block from {shown(item.format)} (opaque to OpenAI)")
        else:
            losses.lose(item, f"a reasoning item from {shown(item.format)}")
    return out


def tools_from_responses(tools: Iterable[Mapping[str, Any]]) -> list[Tool]:
    """Convert Responses ``tools`` entries (``{"type": "function", "name": …}``).

    Raises:
        FormatError: a tool is not a function tool (built-in tools are not modelled).
    """
    out: list[Tool] = []
    for index, tool in enumerate(wire_list(tools, "tools_from_responses", "Responses tools")):
        if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
            kind = tool.get("type") if isinstance(tool, Mapping) else type(tool).__name__
            raise FormatError(f"tool {index}: only function tools are modelled, got {shown(kind)}")
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise FormatError(f"tool {index}: 'name' must be a non-empty string")
        check_tool_fields(index, tool.get("description"), tool.get("parameters"))
        modelled = ("type", "name", "description", "parameters")
        extra = {k: v for k, v in tool.items() if k not in modelled}
        out.append(
            Tool(
                name=name,
                description=tool.get("description"),
                parameters=tool.get("parameters"),
                # Always tagged: an absent ``strict`` means strict here, and non-strict elsewhere.
                extra={"__format__": "responses", **extra},
            )
        )
    return out


def tools_to_responses(
    tools: Iterable[Tool],
    *,
    lossy: bool = False,
    on_drop: Callable[[Tool, str], None] | None = None,
) -> list[dict[str, Any]]:
    """Convert tools to Responses ``tools`` entries.

    ``strict`` keeps its meaning: Responses makes a tool strict when ``strict`` is absent, Chat
    Completions and Anthropic do not, so a tool from those formats gets an explicit value.
    """
    losses: Losses[Tool] = Losses("responses", lossy, on_drop)
    out: list[dict[str, Any]] = []
    for tool in tool_list(tools, "tools_to_responses"):
        extra = dict(tool.extra or {})
        outer = extra.pop("__outer__", {})  # chat keys beside "function"
        entry: dict[str, Any] = {"type": "function", "name": tool.name}
        if tool.description is not None:
            entry["description"] = tool.description
        entry["parameters"] = tool.parameters  # required by the API, null when there are none
        if extra.get("__format__", "chat") != "responses":
            entry["strict"] = bool(extra.pop("strict", False))
        entry.update(losses.native_extra(tool, extra))
        entry.update(losses.native_extra(tool, outer))
        out.append(entry)
    return out


# -- conversion helpers ----------------------------------------------------------------------


def _item_from_responses(raw: Mapping[str, Any]) -> Item:
    if not isinstance(raw, Mapping):
        raise FormatError(f"expected a JSON object, got {type(raw).__name__}")
    kind = raw.get("type", "message" if "role" in raw else None)
    item_id = raw.get("id")
    if item_id is not None and not isinstance(item_id, str):
        raise FormatError(f"'id' must be a string, got {shown(item_id)}")
    if kind == "message":
        return _message_from_responses(raw, item_id)
    if kind in ("function_call", "function_call_output"):
        call_id = raw.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise FormatError(f"a {kind} needs a non-empty 'call_id'")
        if kind == "function_call":
            return _call_from_responses(raw, item_id, call_id)
        return _output_from_responses(raw, item_id, call_id)
    if kind == "reasoning":
        return Reasoning(id=item_id, format="responses", payload=dict(raw))
    if kind == "compaction":
        if not isinstance(raw.get("encrypted_content"), str):
            raise FormatError("a compaction item needs its 'encrypted_content' string")
        return ProviderCompaction(id=item_id, format="responses", payload=dict(raw))
    raise FormatError(
        f"item type {shown(kind)} is not supported; compactkit models message, function_call, "
        "function_call_output, reasoning and compaction items"
    )


def _message_from_responses(raw: Mapping[str, Any], item_id: str | None) -> Message:
    role = raw.get("role")
    if role not in _ROLES:
        raise FormatError(f"unknown role {shown(role)}; expected one of {', '.join(_ROLES)}")
    if "content" not in raw:
        raise FormatError(f"a {role} message needs 'content'")
    content = _content_from_responses(raw["content"])
    extra = tag_extra(
        {k: v for k, v in raw.items() if k not in ("type", "id", "role", "content")},
        "responses",
    )
    return Message(id=item_id, role=role, content=content, extra=extra)


def _call_from_responses(raw: Mapping[str, Any], item_id: str | None, call_id: str) -> FunctionCall:
    name, arguments = raw.get("name"), raw.get("arguments", "{}")
    if not isinstance(name, str) or not name:
        raise FormatError(f"function_call {shown(call_id)} needs a non-empty 'name'")
    if not isinstance(arguments, str):
        raise FormatError(f"function_call {shown(call_id)}: 'arguments' must be a JSON string")
    modelled = ("type", "id", "call_id", "name", "arguments")
    extra = tag_extra({k: v for k, v in raw.items() if k not in modelled}, "responses")
    return FunctionCall(id=item_id, call_id=call_id, name=name, arguments=arguments, extra=extra)


def _output_from_responses(
    raw: Mapping[str, Any], item_id: str | None, call_id: str
) -> FunctionCallOutput:
    if "output" not in raw:
        raise FormatError(f"function_call_output {shown(call_id)} needs 'output'")
    name = raw.get("name")
    modelled = ("type", "id", "call_id", "output", "name")
    return FunctionCallOutput(
        id=item_id,
        call_id=call_id,
        output=_content_from_responses(raw["output"]),
        name=name if isinstance(name, str) else None,
        extra=tag_extra({k: v for k, v in raw.items() if k not in modelled}, "responses"),
    )


def _content_from_responses(content: Any) -> str | tuple[ContentPart, ...]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise FormatError(f"'content' must be a string or a list of parts, got {shown(content)}")
    parts: list[ContentPart] = []
    for part in content:
        if not isinstance(part, Mapping):
            raise FormatError(f"content part must be an object, got {shown(part)}")
        parts.append(_part_from_responses(part))
    return tuple(parts)


def _part_from_responses(part: Mapping[str, Any]) -> ContentPart:
    kind, keys = part.get("type"), set(part)
    if kind == "input_text" and keys == {"type", "text"} and isinstance(part["text"], str):
        return TextPart(text=part["text"])
    if (
        kind == "output_text"
        and isinstance(part.get("text"), str)
        and keys <= {"type", "text", "annotations", "logprobs"}
        and not part.get("annotations")
        and not part.get("logprobs")
    ):
        return TextPart(text=part["text"])
    if (
        kind == "input_image"
        and isinstance(part.get("image_url"), str)
        and keys <= {"type", "image_url", "detail"}
        and part.get("detail", "auto") in ("auto", "low", "high")
    ):
        return ImagePart(url=part["image_url"], detail=part.get("detail"))
    return RawPart(format="responses", data=dict(part))


def _content_to_responses(
    content: str | tuple[ContentPart, ...], role: str, item: Item, losses: Losses[Item]
) -> Any:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, RawPart) and part.format != "responses":
            replacement = losses.foreign_part(item, part)
            if replacement is None:
                continue
            part = replacement
        if isinstance(part, TextPart):
            if role == "assistant":
                parts.append({"type": "output_text", "text": part.text, "annotations": []})
            else:
                parts.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            image: dict[str, Any] = {"type": "input_image", "image_url": part.url}
            if part.detail is not None:
                image["detail"] = part.detail
            parts.append(image)
        else:
            parts.append(dict(part.data))
    return parts


def _message_to_responses(item: Message, losses: Losses[Item]) -> ResponsesItem:
    message: ResponsesItem = {"type": "message"}
    if item.id is not None:
        message["id"] = item.id
    message["role"] = item.role
    message["content"] = _content_to_responses(item.content, item.role, item, losses)
    if item.name is not None:
        losses.lose(item, f"a participant name ({shown(item.name)})")
    message.update(losses.native_extra(item, item.extra))
    return message
