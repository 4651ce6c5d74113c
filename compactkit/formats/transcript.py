"""Reading and writing whole transcripts (a conversation plus its tools) in any format.

A transcript file holds one agent conversation, in one of three formats (detected, or named):

* Chat Completions (the default): a JSON array of messages, JSONL with one message per line, or
  ``{"messages": [...], "tools": [...]}``;
* OpenAI Responses: ``{"input": [...], "tools": [...], "instructions": ...}``, or an array (or
  JSONL) of input items — an array is Responses as soon as one element carries ``type``;
* Anthropic Messages: ``{"system": ..., "messages": [...], "tools": [...]}`` — an object with
  ``messages`` is Anthropic when it has ``system`` or Anthropic-only blocks.

Other top-level fields of the request (``model``, ``max_tokens``, …) are kept in
``Transcript.options`` and written back only in the same format. Responses ``instructions``
become a leading system message, and go back to ``instructions`` in Responses.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from compactkit.errors import ConfigError, FormatError
from compactkit.formats._common import describe, shown
from compactkit.formats.anthropic import (
    anthropic_to_items,
    items_to_anthropic,
    tools_from_anthropic,
    tools_to_anthropic,
)
from compactkit.formats.chat import chat_to_items, items_to_chat, tools_from_chat, tools_to_chat
from compactkit.formats.responses import (
    items_to_responses,
    responses_to_items,
    tools_from_responses,
    tools_to_responses,
)
from compactkit.items import Item, Message, Tool

__all__ = [
    "FORMATS",
    "Dropped",
    "Format",
    "Transcript",
    "dump_transcript",
    "load_transcript",
    "parse_transcript",
]

Format: TypeAlias = Literal["chat", "responses", "anthropic"]

FORMATS: tuple[Format, ...] = ("chat", "responses", "anthropic")
"""The transcript formats compactkit reads and writes."""

_INSTRUCTIONS = "__instructions__"  # marks the system message that was Responses `instructions`
_CONVERSATION_KEYS = {
    "chat": ("messages", "tools"),
    "responses": ("input", "tools", "instructions"),
}
_CONVERSATION_KEYS["anthropic"] = ("system", "messages", "tools")


@dataclass(frozen=True)
class Transcript:
    """One conversation as items, with its tools and the format it was read from."""

    items: list[Item]
    """The conversation, oldest first (a rendered summary is still a marked message here)."""
    tools: list[Tool] = field(default_factory=list)
    """The tools offered to the model."""
    format: Format = "chat"
    """The format the transcript was read from; output goes back to it by default."""
    options: dict[str, Any] = field(default_factory=dict)
    """Other top-level request fields (``model``, ``max_tokens``, …), written back only in the
    format they were read from."""


@dataclass(frozen=True)
class Dropped:
    """Something a lossy conversion left out because the target format cannot express it."""

    what: str
    """The item or tool concerned (``"reasoning item (from 'responses', id='rs_1')"``)."""
    reason: str
    """What was dropped and why (``"anthropic cannot express a reasoning item …"``)."""

    def __str__(self) -> str:
        return f"{self.what}: {self.reason}"


def load_transcript(path: str | Path, *, format: Format | None = None) -> Transcript:
    """Read a transcript file (``"-"`` reads standard input).

    Raises:
        FormatError: the file is not UTF-8 JSON/JSONL, or not a conversation in the format.
        ConfigError: ``path`` is not a path, or the file cannot be read (missing, a directory,
            no permission); the message names the file and the reason.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(
            f"load_transcript takes a file path (str or pathlib.Path), got {type(path).__name__}; "
            "for transcript text use parse_transcript"
        )
    try:
        text = sys.stdin.read() if str(path) == "-" else Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save the transcript as "
            "UTF-8 JSON"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"cannot read the transcript {str(path)!r}: {exc.strerror or exc}; check the path"
        ) from exc
    return parse_transcript(text, format=format, source=str(path))


def parse_transcript(
    text: str, *, format: Format | None = None, source: str = "<text>"
) -> Transcript:
    """Parse transcript text (JSON or JSONL) in ``format`` (default: detected).

    Raises:
        FormatError: not JSON/JSONL (or bytes that are not UTF-8), nested too deeply, or not a
            conversation in the format; the error names ``source`` and, where it can, the
            offending message.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(
                f"{source}: not UTF-8 text (byte {exc.start}: {exc.reason}); save the transcript "
                "as UTF-8 JSON"
            ) from None
    if not isinstance(text, str):
        raise FormatError(
            f"parse_transcript takes the transcript's text (str or UTF-8 bytes), got "
            f"{type(text).__name__}; for a file use load_transcript"
        )
    if format is not None and format not in ("chat", "responses", "anthropic"):
        raise ConfigError(f"format must be 'chat', 'responses' or 'anthropic', got {shown(format)}")
    data = _parse_json(text, source)
    detected = format or _detect(data)
    try:
        return _read(data, detected)
    except FormatError as exc:
        raise FormatError(f"{source}: {exc}") from None


def dump_transcript(
    transcript: Transcript,
    *,
    to: Format | None = None,
    lossy: bool = False,
    on_drop: Callable[[Dropped], None] | None = None,
) -> Any:
    """The JSON value of a transcript in format ``to`` (default: its own format).

    Chat or Responses without tools or options is a plain array; otherwise an object.

    Args:
        transcript: The transcript.
        to: The format to write.
        lossy: Drop what the target cannot express instead of raising.
        on_drop: Called with each thing dropped, when ``lossy``.

    Raises:
        FormatError: something cannot be expressed in ``to`` and ``lossy`` is false.
    """
    target = to or transcript.format
    if target not in FORMATS:
        raise FormatError(f"unknown format {shown(target)}; expected one of {', '.join(FORMATS)}")

    def dropped(subject: Item | Tool, reason: str) -> None:
        if on_drop is not None:
            on_drop(Dropped(describe(subject), reason))

    items = transcript.items
    options = dict(transcript.options) if target == transcript.format else {}
    value: dict[str, Any] = {}
    if target == "chat":
        value["messages"] = items_to_chat(items, lossy=lossy, on_drop=dropped)
        if transcript.tools:
            value["tools"] = tools_to_chat(transcript.tools, lossy=lossy, on_drop=dropped)
    elif target == "responses":
        first = items[0] if items else None
        if isinstance(first, Message) and _INSTRUCTIONS in (first.extra or {}):
            value["instructions"] = first.text
            items = items[1:]
        value["input"] = items_to_responses(items, lossy=lossy, on_drop=dropped)
        if transcript.tools:
            value["tools"] = tools_to_responses(transcript.tools, lossy=lossy, on_drop=dropped)
    else:
        system, messages = items_to_anthropic(items, lossy=lossy, on_drop=dropped)
        if system is not None:
            value["system"] = system
        value["messages"] = messages
        if transcript.tools:
            value["tools"] = tools_to_anthropic(transcript.tools, lossy=lossy, on_drop=dropped)
    if target != "anthropic" and len(value) == 1 and not options:
        return next(iter(value.values()))
    return {**options, **value}


def _read(data: Any, format: Format) -> Transcript:
    if isinstance(data, list):
        if format == "anthropic":
            raise FormatError("an Anthropic transcript is an object with 'messages'")
        items = chat_to_items(data) if format == "chat" else responses_to_items(data)
        return Transcript(items, [], format)
    if not isinstance(data, dict):
        raise FormatError("expected a JSON array or object holding a conversation")
    conversation = "input" if format == "responses" else "messages"
    if conversation not in data:
        article = "an" if format == "anthropic" else "a"
        raise FormatError(f"{article} {format} transcript object needs {shown(conversation)}")
    tools = data.get("tools")
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        raise FormatError("'tools' must be an array")
    options = {k: v for k, v in data.items() if k not in _CONVERSATION_KEYS[format]}
    body = data[conversation]
    if format == "chat":
        if not isinstance(body, list):
            raise FormatError("'messages' must be an array")
        return Transcript(chat_to_items(body), tools_from_chat(tools), format, options)
    if format == "responses":
        if not isinstance(body, (list, str)):
            raise FormatError("'input' must be an array of items or a string")
        items = responses_to_items(body)
        instructions = data.get("instructions")
        if isinstance(instructions, str):
            extra = {"__format__": "responses", _INSTRUCTIONS: True}
            items.insert(0, Message(role="system", content=instructions, extra=extra))
        elif instructions is not None:
            options["instructions"] = instructions  # a prompt template reference: kept as is
        return Transcript(items, tools_from_responses(tools), format, options)
    if not isinstance(body, list):
        raise FormatError("'messages' must be an array")
    items = anthropic_to_items(body, system=data.get("system"))
    return Transcript(items, tools_from_anthropic(tools), format, options)


def _parse_json(text: str, source: str) -> Any:
    stripped = text.removeprefix("\ufeff").strip()  # a UTF-8 byte order mark is not content
    if not stripped:
        raise FormatError(f"{source}: the transcript is empty")
    try:
        return json.loads(stripped)
    except RecursionError:
        raise FormatError(f"{source}: nested too deeply to read; flatten the content") from None
    except json.JSONDecodeError as whole_error:
        lines = [line for line in stripped.splitlines() if line.strip()]
        records = []
        for number, line in enumerate(lines, 1):
            try:
                records.append(json.loads(line))
            except RecursionError:
                raise FormatError(
                    f"{source}: line {number} is nested too deeply to read; flatten the content"
                ) from None
            except json.JSONDecodeError as exc:
                if number == 1:
                    raise FormatError(
                        f"{source}: not JSON or JSONL ({whole_error.msg.removesuffix(' at')} at line "
                        f"{whole_error.lineno} column {whole_error.colno})"
                    ) from None
                raise FormatError(
                    f"{source}: line {number} is not JSON ({exc.msg.removesuffix(' at')})"
                ) from None
        return records


def _detect(data: Any) -> Format:
    if isinstance(data, dict):
        if "input" in data:
            return "responses"
        if "system" in data or _anthropic_blocks(data.get("messages")):
            return "anthropic"
        return "chat"
    if isinstance(data, list) and any(isinstance(m, dict) and "type" in m for m in data):
        return "responses"  # chat messages never carry a top-level "type"
    return "chat"


_ANTHROPIC_ONLY = {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}


def _anthropic_blocks(messages: Any) -> bool:
    if not isinstance(messages, list):
        return False
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in _ANTHROPIC_ONLY for b in content
        ):
            return True
    return False
