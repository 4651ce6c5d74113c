"""OpenAI Responses JSON: ``{"input": [...], "tools": [...]}`` or an array of input items —
read by compactkit's own Responses adapter (lossless for the item types compactkit models)."""

from __future__ import annotations

from compactkit.evals.importers._base import ImportedLog, ParsedFile
from compactkit.evals.importers.openai_chat import _log
from compactkit.formats.transcript import load_transcript

NAME = "openai_responses"


def sniff(parsed: ParsedFile) -> bool:
    value = parsed.value
    if isinstance(value, dict) and isinstance(value.get("input"), list):
        return True
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(i, dict) and "type" in i and "payload" not in i for i in value)
        and any(i.get("type") in ("message", "function_call") for i in value)
    )


def read(parsed: ParsedFile) -> list[ImportedLog]:
    return [_log(parsed, NAME, load_transcript(str(parsed.path), format="responses"))]
