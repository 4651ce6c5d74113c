"""LangChain / LangGraph message dumps: ``messages_to_dict`` output (``[{"type": "human",
"data": {...}}, ...]``), ``dumpd`` serialisations (``{"lc": 1, "type": "constructor", "id":
[..., "HumanMessage"], "kwargs": {...}}``), or either under ``{"messages": [...]}`` (a
LangGraph state).

``human``/``ai``/``system``/``tool`` messages map to user/assistant/system messages and tool
outputs; an AI message's ``tool_calls`` (``name``, ``args``, ``id``) to calls. Not mapped, and
reported: ``response_metadata``/``usage_metadata``, ``invalid_tool_calls`` and message
types compactkit has no role for (``function``, ``chat`` with a custom role, ``remove``).
"""

from __future__ import annotations

from typing import Any

from compactkit.evals.importers._base import ImportedLog, LogBuilder, ParsedFile

NAME = "langchain"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_CLASSES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "HumanMessageChunk": "human",
    "AIMessageChunk": "ai",
}


def _normal(entry: Any) -> tuple[str, dict[str, Any]] | None:
    """``(type, fields)`` of one dumped message, in either serialisation."""
    if not isinstance(entry, dict):
        return None
    if entry.get("lc") == 1 and isinstance(entry.get("id"), list):
        kind = _CLASSES.get(str(entry["id"][-1]))
        return (kind, entry.get("kwargs") or {}) if kind else None
    if isinstance(entry.get("type"), str) and isinstance(entry.get("data"), dict):
        return entry["type"], entry["data"]
    return None


def _messages(parsed: ParsedFile) -> list[Any] | None:
    value = parsed.value
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, list) and value and all(_normal(m) for m in value):
        return value
    return None


def sniff(parsed: ParsedFile) -> bool:
    return _messages(parsed) is not None


def read(parsed: ParsedFile) -> list[ImportedLog]:
    log = LogBuilder(str(parsed.path), NAME)
    for index, entry in enumerate(_messages(parsed) or []):
        where = f"message {index}"
        normal = _normal(entry)
        assert normal is not None  # (sniff checked every entry)
        kind, data = normal
        role = _ROLES.get(kind)
        if role is None:
            log.skip(where, f"a {kind!r} message (compactkit has no role for it)")
            continue
        log.unmapped_fields(where, data, _KNOWN)
        if role == "tool":
            log.output(where, str(data.get("tool_call_id")), data.get("content"))
            continue
        if role != "assistant" or str(data.get("content") or "").strip():
            log.message(where, role, data.get("content"))
        for number, call in enumerate(data.get("tool_calls") or []):
            call_id = str(call.get("id") or f"{where}-call-{number}")
            log.call(where, call_id, str(call.get("name")), call.get("args") or {})
    return [log.build()]


_KNOWN = {"content", "tool_calls", "tool_call_id", "type", "id", "name", "example", "status"}
