"""Anthropic Messages JSON: ``{"system": ..., "messages": [...], "tools": [...]}`` — read by
compactkit's own Anthropic adapter (tool_use / tool_result / thinking blocks, lossless)."""

from __future__ import annotations

from compactkit.evals.importers._base import ImportedLog, ParsedFile
from compactkit.evals.importers.openai_chat import _log
from compactkit.formats.transcript import load_transcript

NAME = "anthropic_messages"


def sniff(parsed: ParsedFile) -> bool:
    value = parsed.value
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return False
    if "system" in value:
        return True
    return any(
        isinstance(m, dict)
        and isinstance(m.get("content"), list)
        and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
            for b in m["content"]
        )
        for m in value["messages"]
    )


def read(parsed: ParsedFile) -> list[ImportedLog]:
    return [_log(parsed, NAME, load_transcript(str(parsed.path), format="anthropic"))]
