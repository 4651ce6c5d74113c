"""Reading and writing whole transcripts (a conversation plus its tools) in any format.

A transcript file holds one agent conversation. Chat Completions (the default) may be a JSON
array of messages, JSONL with one message per line, or ``{"messages": [...], "tools": [...]}``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from compactkit.errors import FormatError
from compactkit.formats.chat import chat_to_items, items_to_chat, tools_from_chat, tools_to_chat
from compactkit.items import Item, Tool

__all__ = ["Format", "Transcript", "dump_transcript", "load_transcript", "parse_transcript"]

Format: TypeAlias = Literal["chat", "responses", "anthropic"]


@dataclass(frozen=True)
class Transcript:
    """One conversation as items, with its tools and the format it was read from."""

    items: list[Item]
    """The conversation, oldest first (a rendered summary is still a marked message here)."""
    tools: list[Tool] = field(default_factory=list)
    """The tools offered to the model."""
    format: Format = "chat"
    """The format the transcript was read from; output goes back to it by default."""


def load_transcript(path: str | Path, *, format: Format | None = None) -> Transcript:
    """Read a transcript file (``"-"`` reads standard input).

    Raises:
        FormatError: the file is not JSON/JSONL, or not a conversation in the format.
        OSError: the file cannot be read.
    """
    text = sys.stdin.read() if str(path) == "-" else Path(path).read_text(encoding="utf-8")
    return parse_transcript(text, format=format, source=str(path))


def parse_transcript(
    text: str, *, format: Format | None = None, source: str = "<text>"
) -> Transcript:
    """Parse transcript text (JSON or JSONL)."""
    data = _parse_json(text, source)
    detected = format or _detect(data)
    if detected != "chat":
        raise FormatError(f"{source}: format {detected!r} is not supported yet")
    if isinstance(data, dict):
        messages = data.get("messages")
        if not isinstance(messages, list):
            raise FormatError(f"{source}: a chat transcript object needs a 'messages' array")
        tools = data.get("tools") or []
        if not isinstance(tools, list):
            raise FormatError(f"{source}: 'tools' must be an array")
        return Transcript(chat_to_items(messages), tools_from_chat(tools), "chat")
    if isinstance(data, list):
        return Transcript(chat_to_items(data), [], "chat")
    raise FormatError(f"{source}: expected a JSON array of messages or an object with 'messages'")


def dump_transcript(transcript: Transcript, *, to: Format | None = None) -> Any:
    """The JSON value of a transcript in format ``to`` (default: its own format).

    Chat without tools is a plain array of messages; with tools, ``{"messages", "tools"}``.
    """
    target = to or transcript.format
    if target != "chat":
        raise FormatError(f"format {target!r} is not supported yet")
    messages = items_to_chat(transcript.items)
    if transcript.tools:
        return {"messages": messages, "tools": tools_to_chat(transcript.tools)}
    return messages


def _parse_json(text: str, source: str) -> Any:
    stripped = text.strip()
    if not stripped:
        raise FormatError(f"{source}: the transcript is empty")
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as whole_error:
        lines = [line for line in stripped.splitlines() if line.strip()]
        records = []
        for number, line in enumerate(lines, 1):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                if number == 1:
                    raise FormatError(
                        f"{source}: not JSON or JSONL ({whole_error.msg} at line "
                        f"{whole_error.lineno} column {whole_error.colno})"
                    ) from None
                raise FormatError(f"{source}: line {number} is not JSON ({exc.msg})") from None
        return records


def _detect(data: Any) -> Format:
    if isinstance(data, dict):
        if "input" in data:
            return "responses"
        if "system" in data or _anthropic_blocks(data.get("messages")):
            return "anthropic"
        return "chat"
    if (
        isinstance(data, list)
        and data
        and all(isinstance(m, dict) and "type" in m and "role" not in m for m in data[:1])
    ):
        return "responses"
    return "chat"


def _anthropic_blocks(messages: Any) -> bool:
    if not isinstance(messages, list):
        return False
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result", "thinking")
            for b in content
        ):
            return True
    return False
