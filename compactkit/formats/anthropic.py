"""Anthropic Messages <-> compactkit items (``formats.validate`` checks them).

Mapping:

* the top-level ``system`` (a string, or a list of text blocks) -> a leading ``Message(role=
  "system")`` (string content, or one part per block). Going back, the leading system and
  developer messages become ``system`` (a string when there is one message with string content);
* a ``user`` message -> its blocks in order: each ``tool_result`` -> ``FunctionCallOutput``
  (``tool_use_id`` -> ``call_id``, ``is_error`` kept), each run of other blocks -> a user
  ``Message``;
* an ``assistant`` message -> ``thinking``/``redacted_thinking`` -> ``Reasoning(format=
  "anthropic", payload=<the block untouched>)``, ``compaction`` (the server-side compaction
  block) -> ``ProviderCompaction(format="anthropic", payload=<the block untouched>)``,
  ``tool_use`` -> ``FunctionCall`` (``input`` -> compact JSON ``arguments``), each run of other
  blocks -> an assistant ``Message``;
* blocks: ``text`` -> ``TextPart``; ``image`` with a base64 or URL source -> ``ImagePart``
  (base64 as a ``data:`` URL); anything else, or a block with keys compactkit does not model
  (``cache_control``, ``citations``) -> ``RawPart``; unmodelled keys of ``tool_use`` and
  ``tool_result`` -> ``extra``.

A message content that is one run of blocks keeps its list shape; where a message splits into
several items, a run that is a single text block reads as string content. Going back, items
are merged into alternating user/assistant messages, as the API requires: an assistant message
with text and calls, a user message with the tool results (first) and any text.

The summary: its text is sealed by compactkit (``summary_message``) and written as it is:
appended to the ``system`` string (or as its own ``system`` block) when the summary's role is
system or developer, as its own text block of a user message when it is user (the default).
Reading back, a text whose seal verifies is the summary message again; text that only looks like
one stays ordinary text of its message, in place (docs/security.md).

Anthropic cannot express OpenAI reasoning items, system messages after the conversation has
started, arguments that are not a JSON object, a participant ``name``, an image ``detail`` or
another format's raw parts and fields: converting one raises ``FormatError`` naming the item
unless ``lossy=True``, which drops it and reports it to ``on_drop``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, NamedTuple

from compactkit.errors import FormatError
from compactkit.formats._common import (
    Losses,
    adjacent_order,
    check_tool_fields,
    compact_json,
    item_list,
    shown,
    split_sealed_suffix,
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
from compactkit.items.snapshot import is_summary_message, unseal_summary

__all__ = [
    "AnthropicPrompt",
    "anthropic_to_items",
    "items_to_anthropic",
    "tools_from_anthropic",
    "tools_to_anthropic",
]

Block = dict[str, Any]
System = str | list[Block] | None
_THINKING = ("thinking", "redacted_thinking")


class _Entry(NamedTuple):
    blocks: list[Block]
    alone: str | None = None  # the message content when the entry is the whole message


class AnthropicPrompt(NamedTuple):
    """The two request fields a conversation becomes: ``system`` and ``messages``."""

    system: System
    """The top-level system prompt (``None`` when there is none)."""
    messages: list[dict[str, Any]]
    """Alternating user/assistant messages."""


def anthropic_to_items(
    messages: Iterable[Mapping[str, Any]], *, system: System = None
) -> list[Item]:
    """Convert an Anthropic ``system`` and ``messages`` to items.

    Raises:
        FormatError: a message or block is malformed; the error names the message's index.
    """
    hint = '; for a request object {"system": ..., "messages": [...]} pass its "messages"'
    messages = wire_list(messages, "anthropic_to_items", "Anthropic messages", hint)
    items = _system_to_items(system)
    for index, message in enumerate(messages):
        try:
            items.extend(_message_to_items(message))
        except FormatError as exc:
            raise FormatError(f"message {index}: {exc}") from None
    return items


def items_to_anthropic(
    items: Iterable[Item],
    *,
    lossy: bool = False,
    on_drop: Callable[[Item, str], None] | None = None,
) -> AnthropicPrompt:
    """Convert items to an Anthropic ``system`` and alternating ``messages``.

    Args:
        items: The items, oldest first.
        lossy: Drop what Anthropic cannot express instead of raising (a dropped call takes its
            output with it).
        on_drop: Called with each item concerned and what was dropped, when ``lossy``.

    Raises:
        FormatError: something cannot be expressed and ``lossy`` is false.
    """
    losses: Losses[Item] = Losses("anthropic", lossy, on_drop)
    items = item_list(items, "items_to_anthropic")
    lead = 0
    while lead < len(items):
        item = items[lead]
        if not (isinstance(item, Message) and item.role in ("system", "developer")):
            break
        lead += 1
    system = _system_from_items(items[:lead], losses)
    items = items[:lead] + adjacent_order(items[lead:], turns=True)  # results next user turn
    call_names = {i.call_id: i.name for i in items if isinstance(i, FunctionCall)}
    dropped_calls: set[str] = set()
    turns: list[tuple[str, list[_Entry]]] = []
    for item in items[lead:]:
        entry = _entry(item, losses, call_names, dropped_calls)
        if entry is None:
            continue
        role, block = entry
        if turns and turns[-1][0] == role:
            turns[-1][1].append(block)
        else:
            turns.append((role, [block]))
    messages = [{"role": role, "content": _turn_content(entries)} for role, entries in turns]
    return AnthropicPrompt(system, messages)


def tools_from_anthropic(tools: Iterable[Mapping[str, Any]]) -> list[Tool]:
    """Convert Anthropic ``tools`` entries (``{"name", "description", "input_schema"}``)."""
    out: list[Tool] = []
    for index, tool in enumerate(wire_list(tools, "tools_from_anthropic", "Anthropic tools")):
        name = tool.get("name") if isinstance(tool, Mapping) else None
        if not isinstance(name, str) or not name:
            raise FormatError(f"tool {index}: 'name' must be a non-empty string")
        check_tool_fields(
            index, tool.get("description"), tool.get("input_schema"), schema_key="input_schema"
        )
        extra = {k: v for k, v in tool.items() if k not in ("name", "description", "input_schema")}
        if extra.get("type") == "custom":
            del extra["type"]  # the default: a client tool
        out.append(
            Tool(
                name=name,
                description=tool.get("description"),
                parameters=tool.get("input_schema"),
                extra=tag_extra(extra, "anthropic"),
            )
        )
    return out


def tools_to_anthropic(
    tools: Iterable[Tool],
    *,
    lossy: bool = False,
    on_drop: Callable[[Tool, str], None] | None = None,
) -> list[dict[str, Any]]:
    """Convert tools to Anthropic ``tools`` entries (a tool without a schema gets an empty
    object schema, which Anthropic requires). An explicit ``strict: true`` is carried; the
    implicit strict mode of a Responses tool (the API rewrites its schema) is not."""
    losses: Losses[Tool] = Losses("anthropic", lossy, on_drop)
    out: list[dict[str, Any]] = []
    for tool in tool_list(tools, "tools_to_anthropic"):
        extra = dict(tool.extra or {})
        source = extra.get("__format__", "chat")
        entry: dict[str, Any] = {"name": tool.name}
        if tool.description is not None:
            entry["description"] = tool.description
        if tool.parameters is not None:
            entry["input_schema"] = tool.parameters
        elif source != "anthropic":  # required for client tools; server tools have none
            entry["input_schema"] = {"type": "object", "properties": {}}
        if source != "anthropic":
            losses.native_extra(tool, extra.pop("__outer__", None))
            if extra.pop("strict", False):
                entry["strict"] = True
        entry.update(losses.native_extra(tool, extra))
        out.append(entry)
    return out


# -- reading ---------------------------------------------------------------------------------


def _system_to_items(system: System) -> list[Item]:
    if system is None:
        return []
    if isinstance(system, str):
        split = split_sealed_suffix(system)
        if split is None:
            return [Message(role="system", content=system)]
        prompt, sealed = split
        summary = _summary("system", sealed)
        return [Message(role="system", content=prompt), summary] if prompt else [summary]
    if not isinstance(system, list):
        raise FormatError(f"'system' must be a string or a list of blocks, got {shown(system)}")
    items: list[Item] = []
    parts: list[ContentPart] = []
    for block in system:
        marked = _marked_block(block)
        if marked is None:
            parts.append(_part(block))
            continue
        if parts:
            items.append(Message(role="system", content=tuple(parts)))
            parts = []
        items.append(_summary("system", marked))
    if parts or not items:
        items.append(Message(role="system", content=tuple(parts)))
    return items


def _message_to_items(message: Mapping[str, Any]) -> list[Item]:
    if not isinstance(message, Mapping):
        raise FormatError(f"expected a JSON object, got {type(message).__name__}")
    role, content = message.get("role"), message.get("content")
    if role not in ("user", "assistant"):
        raise FormatError(f"unknown role {shown(role)}; Anthropic messages are user or assistant")
    unexpected = sorted(set(message) - {"role", "content"})
    if unexpected:
        raise FormatError(f"an Anthropic message has only 'role' and 'content', not {unexpected}")
    if isinstance(content, str):
        return [Message(role=role, content=content)]
    if not isinstance(content, list):
        raise FormatError(f"'content' must be a string or a list of blocks, got {shown(content)}")
    items: list[Item] = []
    runs: list[int] = []  # positions in items of the Messages made from runs of plain blocks
    parts: list[ContentPart] = []

    def flush() -> None:
        if parts:
            runs.append(len(items))
            items.append(Message(role=role, content=tuple(parts)))
            parts.clear()

    for block in content:
        if not isinstance(block, Mapping):
            raise FormatError(f"content block must be an object, got {shown(block)}")
        kind = block.get("type")
        marked = _marked_block(block) if role == "user" else None
        special = _special_block(role, kind)
        if marked is None and special is None:
            parts.append(_part(block))
            continue
        flush()
        if marked is not None:
            items.append(_summary("user", marked))
        elif special == "tool_result":
            items.append(_tool_result(block))
        elif special == "tool_use":
            items.append(_tool_use(block))
        elif special == "compaction":
            items.append(ProviderCompaction(format="anthropic", payload=dict(block)))
        else:
            items.append(Reasoning(format="anthropic", payload=dict(block)))
    flush()
    if len(items) > 1:  # a run of one text block among other items reads as a string
        for at in runs:
            run = items[at]
            assert isinstance(run, Message)
            if len(run.content) == 1 and isinstance(run.content[0], TextPart):
                items[at] = Message(role=role, content=run.content[0].text)
    return items


def _special_block(role: str, kind: Any) -> str | None:
    allowed = ("tool_result",) if role == "user" else ("tool_use", "compaction", *_THINKING)
    if kind in allowed:
        return str(kind)
    if kind in ("tool_result", "tool_use", "compaction", *_THINKING):
        raise FormatError(f"a {shown(kind)} block cannot be in a {role} message")
    return None


def _tool_use(block: Mapping[str, Any]) -> FunctionCall:
    call_id, name, arguments = block.get("id"), block.get("name"), block.get("input", {})
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise FormatError(f"a tool_use block needs a non-empty 'id' and 'name', got {shown(block)}")
    if not isinstance(arguments, dict):
        raise FormatError(f"tool_use {shown(call_id)}: 'input' must be an object")
    extra = {k: v for k, v in block.items() if k not in ("type", "id", "name", "input")}
    return FunctionCall(
        call_id=call_id,
        name=name,
        arguments=compact_json(arguments),
        extra=tag_extra(extra, "anthropic"),
    )


def _tool_result(block: Mapping[str, Any]) -> FunctionCallOutput:
    call_id, content = block.get("tool_use_id"), block.get("content", "")
    if not isinstance(call_id, str) or not call_id:
        raise FormatError("a tool_result block needs a non-empty 'tool_use_id'")
    if isinstance(content, list):
        output: str | tuple[ContentPart, ...] = tuple(_part(b) for b in content)
    elif isinstance(content, str):
        output = content
    else:
        raise FormatError(f"tool_result {shown(call_id)}: 'content' must be a string or a list")
    is_error = block.get("is_error")
    modelled = ("type", "tool_use_id", "content", "is_error")
    extra = {k: v for k, v in block.items() if k not in modelled}
    return FunctionCallOutput(
        call_id=call_id,
        output=output,
        is_error=is_error if isinstance(is_error, bool) else None,
        extra=tag_extra(extra, "anthropic"),
    )


def _part(block: Any) -> ContentPart:
    if not isinstance(block, Mapping):
        raise FormatError(f"content block must be an object, got {shown(block)}")
    kind, keys = block.get("type"), set(block)
    if kind == "text" and keys == {"type", "text"} and isinstance(block["text"], str):
        return TextPart(text=block["text"])
    source = block.get("source")
    if kind == "image" and keys == {"type", "source"} and isinstance(source, Mapping):
        if set(source) == {"type", "media_type", "data"} and source["type"] == "base64":
            return ImagePart(url=f"data:{source['media_type']};base64,{source['data']}")
        if set(source) == {"type", "url"} and source["type"] == "url":
            return ImagePart(url=str(source["url"]))
    return RawPart(format="anthropic", data=dict(block))


def _marked_block(block: Any) -> str | None:
    """The text of a block holding a sealed summary (it reads as its own message)."""
    if isinstance(block, Mapping) and set(block) == {"type", "text"} and block["type"] == "text":
        text = block["text"]
        if isinstance(text, str) and unseal_summary(text) is not None:
            return text
    return None


def _summary(role: Literal["system", "user"], sealed: str) -> Message:
    return Message(role=role, content=sealed)


# -- writing ---------------------------------------------------------------------------------


def _system_from_items(lead: list[Item], losses: Losses[Item]) -> System:
    messages = [m for m in lead if isinstance(m, Message)]
    prompts = [m for m in messages if not is_summary_message(m)]
    summaries = [m.text for m in messages if is_summary_message(m)]
    for message in prompts:
        _check_message(message, losses)
    if not prompts and not summaries:
        return None
    if len(prompts) <= 1 and all(isinstance(m.content, str) for m in prompts):
        texts = [str(m.content) for m in prompts] + summaries
        return "\n\n".join(texts)
    blocks: list[Block] = []
    for message in prompts:
        blocks += _blocks(message, losses)
    return blocks + [{"type": "text", "text": s} for s in summaries]


def _entry(
    item: Item, losses: Losses[Item], call_names: dict[str, str], dropped_calls: set[str]
) -> tuple[str, _Entry] | None:
    if isinstance(item, Message):
        if item.role in ("system", "developer"):
            losses.lose(item, "a system message after the conversation has started")
            return None
        _check_message(item, losses)
        alone = item.content if isinstance(item.content, str) else None
        return item.role, _Entry(_blocks(item, losses), alone)
    if isinstance(item, Reasoning):
        if item.format != "anthropic":
            losses.lose(item, f"a reasoning item from {shown(item.format)}")
            return None
        return "assistant", _Entry([dict(item.payload)])
    if isinstance(item, ProviderCompaction):
        if item.format != "anthropic":
            losses.lose(item, f"a compaction item from {shown(item.format)} (opaque to Anthropic)")
            return None
        return "assistant", _Entry([dict(item.payload)])
    if isinstance(item, FunctionCall):
        try:
            arguments = json.loads(item.arguments) if item.arguments.strip() else {}
        except (ValueError, RecursionError):  # too deep to read is not an object either
            arguments = None
        if not isinstance(arguments, dict):
            losses.lose(
                item, f"arguments that are not a JSON object ({shown(item.arguments[:40])})"
            )
            dropped_calls.add(item.call_id)
            return None
        block: Block = {"type": "tool_use", "id": item.call_id, "name": item.name}
        block["input"] = arguments
        block.update(losses.native_extra(item, item.extra))
        return "assistant", _Entry([block])
    if item.call_id in dropped_calls:
        losses.lose(item, "the output of a call that was dropped")
        return None
    result: Block = {"type": "tool_result", "tool_use_id": item.call_id}
    result["content"] = (
        item.output if isinstance(item.output, str) else _part_blocks(item.output, item, losses)
    )
    if item.is_error is not None:
        result["is_error"] = item.is_error
    if item.name is not None and item.name != call_names.get(item.call_id):
        losses.lose(item, f"a tool name {shown(item.name)} on a tool result")
    result.update(losses.native_extra(item, item.extra))
    return "user", _Entry([result])


def _check_message(item: Message, losses: Losses[Item]) -> None:
    if item.name is not None:
        losses.lose(item, f"a participant name ({shown(item.name)})")
    losses.native_extra(item, item.extra)


def _turn_content(entries: list[_Entry]) -> str | list[Block]:
    if len(entries) == 1 and entries[0].alone is not None:
        return entries[0].alone
    return [block for entry in entries for block in entry.blocks]


def _blocks(message: Message, losses: Losses[Item]) -> list[Block]:
    if is_summary_message(message):  # its own block, whatever parts shape it had
        return [{"type": "text", "text": message.text}]
    if isinstance(message.content, str):
        # Anthropic rejects empty text blocks; an empty string says nothing beside other blocks.
        return [{"type": "text", "text": message.content}] if message.content else []
    return _part_blocks(message.content, message, losses)


def _part_blocks(parts: tuple[ContentPart, ...], item: Item, losses: Losses[Item]) -> list[Block]:
    blocks: list[Block] = []
    for part in parts:
        if isinstance(part, RawPart) and part.format != "anthropic":
            replacement = losses.foreign_part(item, part)
            if replacement is None:
                continue
            part = replacement
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            if part.detail not in (None, "auto"):
                losses.lose(item, f"an image detail ({shown(part.detail)})")
            blocks.append({"type": "image", "source": _image_source(part.url)})
        else:
            blocks.append(dict(part.data))
    return blocks


def _image_source(url: str) -> dict[str, Any]:
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {"type": "base64", "media_type": media_type, "data": data}
    return {"type": "url", "url": url}
