"""The message list formats, telling them apart, and the placeholder a message compactkit
cannot read becomes (``WireConverter``, ``_wire.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from compactkit.formats import sdk_format
from compactkit.items import Item, Message

__all__ = [
    "FORMATS",
    "PASSTHROUGH_KEY",
    "PASSTHROUGH_RAW",
    "MessageFormat",
    "Original",
    "Passthrough",
    "detect_format",
    "passthrough_key",
]

MessageFormat: TypeAlias = Literal["chat", "responses", "anthropic"]
"""The message list formats: OpenAI Chat Completions messages, OpenAI Responses input items,
Anthropic Messages."""

Original: TypeAlias = "tuple[Any, ...]"
"""The message as it came in, then the stored items it became: one flat tuple (a compactor
keeps one per message for the whole session; a nested tuple of the items was 48+ bytes more
each)."""

FORMATS: tuple[MessageFormat, ...] = ("chat", "responses", "anthropic")
PASSTHROUGH_KEY = "__compactkit_passthrough__"
PASSTHROUGH_RAW = "__compactkit_raw__"
_ANTHROPIC_BLOCKS = {
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "image",
    "document",
}
_RESPONSES_PARTS = {"input_text", "output_text", "input_image", "input_file", "refusal"}


def detect_format(messages: Iterable[Any]) -> MessageFormat | None:
    """The format ``messages`` are in, or ``None`` when they read the same in every format
    (plain role/content text messages)."""
    for message in messages:
        format = sdk_format(message)
        if format is not None:
            return format
        if not isinstance(message, Mapping):
            continue
        if "type" in message:  # chat and Anthropic messages never carry a top-level "type"
            return "responses"
        if message.get("role") == "tool" or "tool_calls" in message or "tool_call_id" in message:
            return "chat"
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            format = sdk_format(part)
            if format is not None:
                return format
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind in _ANTHROPIC_BLOCKS:
                return "anthropic"
            if kind in _RESPONSES_PARTS:
                return "responses"
            if kind == "image_url":
                return "chat"
    return None


@dataclass(frozen=True)
class Passthrough:
    """A message compactkit could not read, passed through untouched."""

    index: int
    """Its position in the list it came in."""
    reason: str
    """Why it could not be read."""
    kind: Literal["passthrough"] = "passthrough"


def passthrough_key(item: Item) -> str | None:
    """The key of a placeholder item (``None`` for any other item)."""
    if not isinstance(item, Message) or not item.extra:
        return None
    key = item.extra.get(PASSTHROUGH_KEY)
    return key if isinstance(key, str) else None
