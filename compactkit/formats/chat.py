"""OpenAI Chat Completions messages <-> compactkit items, and the chat prompt validator.

Mapping:

* ``system``/``developer``/``user`` messages -> ``Message``;
* an ``assistant`` message -> a ``Message`` (when it has content or no ``tool_calls``) followed by
  one ``FunctionCall`` per entry of ``tool_calls``. Going back, function calls are folded into the
  assistant message right before them (or a ``content: null`` assistant message); text that
  Responses allows between a call and its output is written after the outputs;
* a ``tool`` message -> ``FunctionCallOutput`` (``tool_call_id`` -> ``call_id``, ``name`` kept);
* content parts: ``text`` -> ``TextPart``, ``image_url`` -> ``ImagePart``; any other part, or a
  part with keys compactkit does not model, -> ``RawPart`` carried through untouched;
* keys of a message that compactkit does not model -> ``Message.extra``, restored on output.

Chat cannot express ``Reasoning``, ``ProviderCompaction``, ``is_error`` on a tool result, or the raw parts and
unmodelled fields of another format: converting one raises ``FormatError`` naming the item unless
``lossy=True``, which drops it and reports it to ``on_drop``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from compactkit.errors import FormatError

# ``chat_to_items`` of one plain message, unvalidated (a message compactor's reading path).
from compactkit.formats._chat_fast import CHAT_MESSAGE_KEYS as CHAT_MESSAGE_KEYS
from compactkit.formats._chat_fast import plain_call_id as plain_call_id
from compactkit.formats._chat_fast import plain_chat_message_items as plain_chat_message_items
from compactkit.formats._common import (
    Losses,
    adjacent_order,
    check_mode,
    check_tool_fields,
    extra_format,
    item_list,
    reserved_free,
    shown,
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
    TextPart,
    Tool,
)

__all__ = [
    "ChatProblem",
    "chat_to_items",
    "items_to_chat",
    "tools_from_chat",
    "tools_to_chat",
    "validate_chat",
]

ChatMessage = dict[str, Any]
_MODELLED_KEYS = {"role", "content", "name", "tool_calls", "tool_call_id"}


def chat_to_items(messages: Iterable[Mapping[str, Any]]) -> list[Item]:
    """Convert Chat Completions messages to items.

    Raises:
        FormatError: a message is not a valid chat message; the error names its index.
    """
    hint = (
        '; for a transcript object {"messages": [...]} pass its "messages" '
        "(or read it with parse_transcript)"
    )
    items: list[Item] = []
    for index, message in enumerate(wire_list(messages, "chat_to_items", "chat messages", hint)):
        try:
            items.extend(_message_to_items(message))
        except FormatError as exc:
            raise FormatError(f"message {index}: {exc}") from None
    return items


def items_to_chat(
    items: Iterable[Item],
    *,
    lossy: bool = False,
    on_drop: Callable[[Item, str], None] | None = None,
) -> list[ChatMessage]:
    """Convert items to Chat Completions messages.

    Args:
        items: The items, oldest first.
        lossy: Drop what chat cannot express (reasoning) instead of raising.
        on_drop: Called with each dropped item and the reason, when ``lossy``.

    Raises:
        FormatError: an item cannot be expressed in chat and ``lossy`` is false.
    """
    losses: Losses[Item] = Losses("chat", lossy, on_drop)
    out: list[ChatMessage] = []
    open_assistant: ChatMessage | None = None  # the assistant message calls may join
    # Text that Responses allows between a call and its output waits until the outputs are in.
    for item in adjacent_order(item_list(items, "items_to_chat")):
        if isinstance(item, Message):
            message = _message_to_chat(item, losses)
            out.append(message)
            open_assistant = message if item.role == "assistant" else None
        elif isinstance(item, FunctionCall):
            if open_assistant is None:
                open_assistant = {"role": "assistant", "content": None}
                out.append(open_assistant)
            call = {
                "id": item.call_id,
                "type": "function",
                "function": {"name": item.name, "arguments": item.arguments},
            }
            call.update(losses.native_extra(item, item.extra))
            open_assistant.setdefault("tool_calls", []).append(call)
        elif isinstance(item, FunctionCallOutput):
            tool: ChatMessage = {
                "role": "tool",
                "tool_call_id": item.call_id,
                "content": _content_to_chat(item.output, item, losses),
            }
            if item.name is not None:
                tool["name"] = item.name
            if item.is_error:
                losses.lose(item, "is_error=True on a tool result")
            tool.update(losses.native_extra(item, item.extra))
            out.append(tool)
            open_assistant = None
        elif isinstance(item, ProviderCompaction):
            losses.lose(
                item,
                f"a provider compaction item from {shown(item.format)} (export_portable turns it "
                "into a plaintext summary)",
            )
        else:
            losses.lose(item, f"a reasoning item from {shown(item.format)}")
    return out


def tools_from_chat(tools: Iterable[Mapping[str, Any]]) -> list[Tool]:
    """Convert Chat Completions ``tools`` entries (``{"type": "function", "function": …}``)."""
    out: list[Tool] = []
    for index, tool in enumerate(wire_list(tools, "tools_from_chat", "chat tool entries")):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(function, Mapping) or tool.get("type", "function") != "function":
            raise FormatError(f"tool {index}: expected {{'type': 'function', 'function': {{...}}}}")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise FormatError(f"tool {index}: 'function.name' must be a non-empty string")
        check_tool_fields(index, function.get("description"), function.get("parameters"))
        modelled = ("name", "description", "parameters")
        extra = {k: v for k, v in function.items() if k not in modelled}
        outer = {k: v for k, v in tool.items() if k not in ("type", "function")}
        if outer:
            extra["__outer__"] = outer
        out.append(
            Tool(
                name=name,
                description=function.get("description"),
                parameters=function.get("parameters"),
                extra=extra or None,
            )
        )
    return out


def tools_to_chat(
    tools: Iterable[Tool],
    *,
    lossy: bool = False,
    on_drop: Callable[[Tool, str], None] | None = None,
) -> list[dict[str, Any]]:
    """Convert tools to Chat Completions ``tools`` entries.

    An explicit ``strict: true`` of another format is carried; the implicit strict mode of a
    Responses tool without ``strict`` (the API rewrites its schema) is not, as a chat tool with
    ``strict: true`` must already have a strict schema.
    """
    losses: Losses[Tool] = Losses("chat", lossy, on_drop)
    out: list[dict[str, Any]] = []
    for tool in tool_list(tools, "tools_to_chat"):
        extra = dict(tool.extra or {})
        outer = extra.pop("__outer__", {})
        source = extra_format(extra)
        strict = extra.pop("strict", False) if source != "chat" else None
        function: dict[str, Any] = {"name": tool.name}
        if tool.description is not None:
            function["description"] = tool.description
        if tool.parameters is not None:
            function["parameters"] = tool.parameters
        if strict:
            function["strict"] = True
        function.update(losses.native_extra(tool, extra))
        out.append({"type": "function", "function": function, **outer})
    return out


# -- validation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChatProblem:
    """One rule of the Chat Completions API that a prompt breaks."""

    kind: Literal["orphan_output", "missing_output", "duplicate_call_id"]
    """``orphan_output``: a tool message answering no call right before it;
    ``missing_output``: a tool call with no tool message after it;
    ``duplicate_call_id``: two tool calls share one id."""
    call_id: str
    """The call id concerned."""
    index: int
    """Index of the offending message in the input."""

    def __str__(self) -> str:
        what = {
            "orphan_output": "tool message answers no preceding tool call",
            "missing_output": "tool call has no tool message after it",
            "duplicate_call_id": "tool call id used twice",
        }[self.kind]
        return f"message {self.index}: {what} (call id {shown(self.call_id)})"


def validate_chat(
    messages: Sequence[Mapping[str, Any]], *, mode: Literal["raise", "repair"] = "raise"
) -> tuple[list[ChatMessage], list[ChatProblem]]:
    """Check a chat prompt against the API's tool-call rules; repair it or raise.

    The API requires every assistant ``tool_calls`` entry to be answered by a ``tool`` message,
    and those tool messages to follow the assistant message directly. ``repair`` moves an
    answer that came later up to its call, drops tool messages that answer nothing, and removes
    unanswered calls (an assistant message left with neither calls nor content is dropped).

    Returns:
        The messages (repaired copies in ``repair`` mode; the input as a list when valid) and
        the problems found.

    Raises:
        FormatError: in ``raise`` mode, when there is any problem; it lists them all.
    """
    check_mode(mode)
    messages = wire_list(messages, "validate_chat", "chat messages")
    _check_shapes(messages)
    problems: list[ChatProblem] = []
    answer_at: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            answer_at.setdefault(str(message.get("tool_call_id")), index)

    out: list[ChatMessage] = []
    used: set[int] = set()
    seen_ids: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if index not in used:
                call_id = str(message.get("tool_call_id"))
                problems.append(ChatProblem("orphan_output", call_id, index))
            continue
        calls = message.get("tool_calls") if role == "assistant" else None
        if not calls:
            out.append(dict(message))
            continue
        out += _with_answers(messages, index, calls, answer_at, used, seen_ids, problems)

    if mode == "raise" and problems:
        listing = "; ".join(str(p) for p in problems)
        raise FormatError(
            f"chat prompt breaks the tool-call rules: {listing}. "
            "Fix the transcript, or validate with mode='repair'"
        )
    if not problems:
        return [dict(m) for m in messages], problems
    return out, problems


def _check_shapes(messages: Sequence[Any]) -> None:
    """A ``FormatError`` for a message that is not an object or whose ``tool_calls`` is not
    a list of objects."""
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise FormatError(f"message {index}: expected a JSON object, got {shown(message)}")
        calls = message.get("tool_calls")
        if calls is not None and (
            not isinstance(calls, list) or not all(isinstance(c, Mapping) for c in calls)
        ):
            raise FormatError(f"message {index}: 'tool_calls' must be a list of objects")


def _with_answers(
    messages: Sequence[Mapping[str, Any]],
    index: int,
    calls: list[Any],
    answer_at: dict[str, int],
    used: set[int],
    seen_ids: set[str],
    problems: list[ChatProblem],
) -> list[ChatMessage]:
    """The assistant message at ``index`` with the calls that are answered, followed by their
    answers (moved up when they came later); the problems found are appended to ``problems``."""
    # The tool messages directly after this one, as the API wants them.
    adjacent: dict[str, int] = {}
    probe = index + 1
    while probe < len(messages) and messages[probe].get("role") == "tool":
        adjacent.setdefault(str(messages[probe].get("tool_call_id")), probe)
        probe += 1
    kept_calls: list[Any] = []
    answers: list[int] = []
    for call in calls:
        call_id = str(call.get("id"))
        if call_id in seen_ids:
            problems.append(ChatProblem("duplicate_call_id", call_id, index))
            continue
        seen_ids.add(call_id)
        answer = adjacent.get(call_id)
        if answer is None:
            later = answer_at.get(call_id)
            if later is not None and later > index and later not in used:
                answer = later
            problems.append(ChatProblem("missing_output", call_id, index))
        if answer is None:
            continue
        used.add(answer)
        answers.append(answer)
        kept_calls.append(call)
    repaired = dict(messages[index])
    if kept_calls:
        repaired["tool_calls"] = kept_calls
    else:
        repaired.pop("tool_calls", None)
    out: list[ChatMessage] = []
    if kept_calls or repaired.get("content") not in (None, ""):
        out.append(repaired)
    out.extend(dict(messages[a]) for a in answers)
    return out


# -- conversion helpers ----------------------------------------------------------------------


def _message_to_items(message: Mapping[str, Any]) -> list[Item]:
    if not isinstance(message, Mapping):
        raise FormatError(f"expected a JSON object, got {type(message).__name__}")
    role = message.get("role")
    extra = reserved_free({k: v for k, v in message.items() if k not in _MODELLED_KEYS}) or None
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise FormatError(f"'name' must be a string, got {shown(name)}")
    if role in ("system", "developer", "user"):
        content = message.get("content")
        if content is None:
            raise FormatError(f"a {role} message needs 'content'")
        return [Message(role=role, content=_content_from_chat(content), name=name, extra=extra)]
    if role == "assistant":
        items: list[Item] = []
        content = message.get("content")
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list):
            raise FormatError("'tool_calls' must be a list")
        if content is not None or not calls or extra or name is not None:
            items.append(
                Message(
                    role="assistant",
                    content=_content_from_chat(content if content is not None else ""),
                    name=name,
                    extra=extra,
                )
            )
        items.extend(_call_from_chat(call) for call in calls)
        return items
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise FormatError("a tool message needs a non-empty 'tool_call_id'")
        if extra:
            raise FormatError(f"a tool message cannot carry {shown(sorted(extra))}")
        return [
            FunctionCallOutput(
                call_id=call_id,
                output=_content_from_chat(message.get("content") or ""),
                name=name,
            )
        ]
    if role == "function":
        raise FormatError(
            "legacy 'function' role messages are not supported; use 'tool' with 'tool_call_id'"
        )
    raise FormatError(
        f"unknown role {shown(role)}; expected system, developer, user, assistant or tool"
    )


def _call_from_chat(call: Any) -> FunctionCall:
    if not isinstance(call, Mapping) or call.get("type", "function") != "function":
        raise FormatError(
            f"unsupported tool call {shown(call)}; only function tool calls are modelled"
        )
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise FormatError(f"tool call {shown(call.get('id'))} needs 'function.name'")
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise FormatError(f"tool call to {shown(function['name'])} needs a non-empty 'id'")
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str):
        raise FormatError(f"tool call {shown(call_id)}: 'arguments' must be a JSON string")
    return FunctionCall(call_id=call_id, name=function["name"], arguments=arguments)


def _content_from_chat(content: Any) -> str | tuple[ContentPart, ...]:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise FormatError(f"'content' must be a string or a list of parts, got {shown(content)}")
    parts: list[ContentPart] = []
    for part in content:
        if not isinstance(part, Mapping):
            raise FormatError(f"content part must be an object, got {shown(part)}")
        kind = part.get("type")
        if kind == "text" and set(part) == {"type", "text"} and isinstance(part["text"], str):
            parts.append(TextPart(text=part["text"]))
            continue
        image = part.get("image_url")
        if kind == "image_url" and set(part) == {"type", "image_url"} and _plain_image(image):
            assert isinstance(image, Mapping)
            parts.append(ImagePart(url=image["url"], detail=image.get("detail")))
            continue
        parts.append(RawPart(format="chat", data=dict(part)))
    return tuple(parts)


def _plain_image(image: Any) -> bool:
    return (
        isinstance(image, Mapping)
        and isinstance(image.get("url"), str)
        and set(image) <= {"url", "detail"}
        and image.get("detail", "auto") in ("auto", "low", "high")
    )


def _content_to_chat(
    content: str | tuple[ContentPart, ...], item: Item, losses: Losses[Item]
) -> Any:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, RawPart) and part.format != "chat":
            replacement = losses.foreign_part(item, part)
            if replacement is None:
                continue
            part = replacement
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            image: dict[str, Any] = {"url": part.url}
            if part.detail is not None:
                image["detail"] = part.detail
            parts.append({"type": "image_url", "image_url": image})
        else:
            parts.append(dict(part.data))
    return parts


def _message_to_chat(item: Message, losses: Losses[Item]) -> ChatMessage:
    message: ChatMessage = {
        "role": item.role,
        "content": _content_to_chat(item.content, item, losses),
    }
    if item.name is not None:
        message["name"] = item.name
    message.update(losses.native_extra(item, item.extra))
    return message
