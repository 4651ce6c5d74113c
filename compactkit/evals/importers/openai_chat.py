"""OpenAI Chat Completions JSON: an array of messages, JSONL of messages, or
``{"messages": [...], "tools": [...]}`` — read by compactkit's own Chat adapter (lossless)."""

from __future__ import annotations

from typing import Any

from compactkit.evals.importers._base import ImportedLog, ParsedFile, Skipped
from compactkit.formats.transcript import load_transcript

NAME = "openai_chat"


def _messages(parsed: ParsedFile) -> list[Any] | None:
    value = parsed.value
    if parsed.kind == "jsonl":
        value = [record for _, record in parsed.records]
    if isinstance(value, dict) and "input" not in value and "system" not in value:
        value = value.get("messages")
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return value
    return None


def sniff(parsed: ParsedFile) -> bool:
    messages = _messages(parsed)
    return bool(messages) and all(m.get("role") in _ROLES for m in messages or [])


_ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


def read(parsed: ParsedFile) -> list[ImportedLog]:
    transcript = load_transcript(str(parsed.path), format="chat")
    return [_log(parsed, NAME, transcript)]


def _log(parsed: ParsedFile, name: str, transcript: Any) -> ImportedLog:
    model = parsed.value.get("model") if isinstance(parsed.value, dict) else None
    return ImportedLog(
        source=str(parsed.path),
        format=name,
        items=tuple(transcript.items),
        tools=tuple(transcript.tools),
        skipped=tuple(Skipped(s.where, s.reason) for s in parsed.bad_lines),
        model=model if isinstance(model, str) else None,
    )
