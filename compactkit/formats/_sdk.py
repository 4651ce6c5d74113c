"""SDK response objects -> the request-shaped dicts the format adapters read.

Agents append what the SDKs return: ``response.choices[0].message`` (an OpenAI
``ChatCompletionMessage``), ``response.output`` (Responses output items), ``response.content``
or ``{"role": "assistant", "content": response.content}`` (Anthropic content blocks). These are
pydantic models, not dicts; this module turns them into the dicts that the SDKs accept back as
input, without importing either SDK (objects are recognised by the module of their class).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from compactkit.errors import FormatError
from compactkit.formats._common import WireFormat

__all__ = ["is_anthropic_block", "is_sdk_object", "sdk_format", "sdk_inputs", "to_plain"]

_MODULES: tuple[tuple[str, WireFormat], ...] = (
    ("openai.types.chat.", "chat"),
    ("openai.types.responses.", "responses"),
    ("anthropic.types.", "anthropic"),
)

# Response objects users pass by mistake, and the part of them that holds the items.
_WRAPPERS: dict[tuple[WireFormat, str], str] = {
    ("chat", "ChatCompletion"): "response.choices[0].message",
    ("chat", "Choice"): "choice.message (response.choices[0].message)",
    ("responses", "Response"): "response.output (its list of output items)",
}


def sdk_format(value: object) -> WireFormat | None:
    """The format an SDK object belongs to (``None`` for anything else, dicts included)."""
    if not isinstance(value, BaseModel):
        return None
    module = type(value).__module__ + "."
    for prefix, format in _MODULES:
        if module.startswith(prefix):
            return format
    return None


def is_sdk_object(value: object) -> bool:
    """Whether ``value`` is an OpenAI or Anthropic SDK model this module converts."""
    return sdk_format(value) is not None


def is_anthropic_block(value: object) -> bool:
    """Whether ``value`` is an Anthropic content block object (``TextBlock``, ``ToolUseBlock``…)."""
    return sdk_format(value) == "anthropic" and not _is_anthropic_message(value)


def to_plain(value: Any) -> Any:
    """``value`` as the dict its SDK accepts back as input; other values are returned as is.

    * ``ChatCompletionMessage`` -> an assistant message param (``content``, ``tool_calls``,
      ``refusal``, ``audio`` by id); response-only fields (``annotations``) are left out;
    * a Responses output item -> its JSON (the Responses API takes output items as input);
    * an Anthropic ``Message`` -> ``{"role": "assistant", "content": [blocks]}``; a content
      block -> its JSON;
    * a dict whose ``content`` list holds SDK blocks -> a copy with the blocks converted.
    """
    format = sdk_format(value)
    if format is None:
        if isinstance(value, Mapping):
            content = value.get("content")
            if isinstance(content, list) and any(is_sdk_object(part) for part in content):
                return {**value, "content": [to_plain(part) for part in content]}
        return value
    assert isinstance(value, BaseModel)
    wrapper = _WRAPPERS.get((format, type(value).__name__))
    if wrapper is not None:  # the response around the items, not an item: say what to pass
        raise FormatError(
            f"got the whole {type(value).__name__}, which is not a conversation item; pass "
            f"{wrapper}"
        )
    if format == "chat" and type(value).__name__ == "ChatCompletionMessage":
        return _chat_message(value)
    data = value.model_dump(mode="json", exclude_none=True)
    if _is_anthropic_message(value):
        return {"role": data.get("role", "assistant"), "content": data.get("content", [])}
    return data


def sdk_inputs(values: Iterable[Any]) -> list[tuple[int, WireFormat | None, Any]]:
    """``(index, format, value)`` for each input: SDK objects made plain with the format they
    came from, everything else as it is with ``None``.

    A run of bare Anthropic content blocks (``response.content``) becomes one assistant message,
    at the index of its first block; a dict whose ``content`` holds Anthropic blocks is an
    Anthropic message.
    """
    out: list[tuple[int, WireFormat | None, Any]] = []
    run: list[Any] = []
    start = 0
    for index, value in enumerate(values):
        if is_anthropic_block(value):
            if not run:
                start = index
            run.append(to_plain(value))
            continue
        if run:
            out.append((start, "anthropic", {"role": "assistant", "content": run}))
            run = []
        format = sdk_format(value)
        if format is None and isinstance(value, Mapping):
            content = value.get("content")
            if isinstance(content, list):
                formats = {sdk_format(part) for part in content} - {None}
                format = formats.pop() if len(formats) == 1 else None
        out.append((index, format, to_plain(value)))
    if run:
        out.append((start, "anthropic", {"role": "assistant", "content": run}))
    return out


def _is_anthropic_message(value: object) -> bool:
    return (
        sdk_format(value) == "anthropic"
        and getattr(value, "type", None) == "message"
        and hasattr(value, "role")
        and isinstance(getattr(value, "content", None), list)
    )


def _chat_message(value: BaseModel) -> dict[str, Any]:
    data = value.model_dump(mode="json", exclude_none=True)
    message: dict[str, Any] = {
        "role": data.get("role", "assistant"),
        "content": data.get("content"),
    }
    for key in ("name", "refusal", "tool_calls", "function_call"):
        if data.get(key):
            message[key] = data[key]
    audio = data.get("audio")
    if isinstance(audio, Mapping) and audio.get("id"):
        message["audio"] = {"id": audio["id"]}  # the request form refers to the audio by id
    return message
