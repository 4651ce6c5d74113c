"""Gemini CLI chat history: the session files the CLI records (``~/.gemini/tmp/<project>/chats/
session-*.json`` or ``.jsonl``: ``{"sessionId", "messages": [...]}``) and ``/chat save``
checkpoints (a list of Gemini ``Content``: ``{"role": "user"|"model", "parts": [...]}``).

Session messages: ``user`` to user messages, ``gemini`` to assistant messages plus one call
and one output per entry of ``toolCalls`` (``args`` as JSON, ``result``'s function response
as the output). Checkpoint parts: ``text``, ``functionCall``, ``functionResponse``. Not
mapped, and reported: ``thoughts`` (Gemini thought summaries have no compactkit item),
``info``/``error``/``warning`` notices shown in the UI, ``$rewindTo``/``$set`` records.
"""

from __future__ import annotations

import json
from typing import Any

from compactkit.evals.importers._base import ImportedLog, LogBuilder, ParsedFile, text_of

NAME = "gemini_history"
_TYPES = {"user", "gemini", "info", "error", "warning"}


def _session(parsed: ParsedFile) -> tuple[list[tuple[str, Any]], Any] | None:
    value = parsed.value
    if (
        parsed.kind == "json"
        and isinstance(value, dict)
        and isinstance(value.get("messages"), list)
        and all(isinstance(m, dict) and m.get("type") in _TYPES for m in value["messages"])
    ):
        return [(f"message {i}", m) for i, m in enumerate(value["messages"])], value
    if parsed.kind == "jsonl":
        rows = [(f"line {n}", r) for n, r in parsed.records if isinstance(r, dict)]
        if any(r.get("type") == "gemini" for _, r in rows):
            return rows, {}
    return None


def _checkpoint(parsed: ParsedFile) -> list[Any] | None:
    value = parsed.value
    if (
        isinstance(value, list)
        and value
        and all(
            isinstance(c, dict)
            and c.get("role") in ("user", "model")
            and isinstance(c.get("parts"), list)
            for c in value
        )
    ):
        return value
    return None


def sniff(parsed: ParsedFile) -> bool:
    return _session(parsed) is not None or _checkpoint(parsed) is not None


def read(parsed: ParsedFile) -> list[ImportedLog]:
    log = LogBuilder(str(parsed.path), NAME)
    log.skipped.extend(parsed.bad_lines)
    session = _session(parsed)
    if session is None:
        for index, content in enumerate(_checkpoint(parsed) or []):
            _content(log, f"content {index}", content)
        return [log.build()]
    for where, message in session[0]:
        _message(log, where, message)
    return [log.build()]


def _message(log: LogBuilder, where: str, message: dict[str, Any]) -> None:
    kind = message.get("type")
    if kind is None:
        log.skip(where, "a session metadata record ($set / $rewindTo / header)")
    elif kind == "user":
        log.message(where, "user", _parts_text(message.get("content")))
    elif kind == "gemini":
        if isinstance(message.get("model"), str):
            log.model = message["model"]
        if message.get("thoughts"):
            log.skip(where, "Gemini thought summaries (no compactkit item holds them)")
        text = _parts_text(message.get("content"))
        if text.strip():
            log.message(where, "assistant", text)
        for index, call in enumerate(message.get("toolCalls") or []):
            call_id = str(call.get("id") or f"{where}-call-{index}")
            log.call(where, call_id, str(call.get("name")), call.get("args") or {})
            if call.get("result") is not None:
                log.output(where, call_id, _parts_text(call.get("result")))
    else:
        log.skip(where, f"a {kind!r} notice shown in the CLI, not sent to the model")


def _content(log: LogBuilder, where: str, content: dict[str, Any]) -> None:
    role = "assistant" if content.get("role") == "model" else "user"
    calls = 0
    for index, part in enumerate(content.get("parts") or []):
        at = f"{where} part {index}"
        if "text" in part and not part.get("thought"):
            log.message(at, role, part["text"])
        elif "functionCall" in part:
            call = part["functionCall"]
            call_id = str(call.get("id") or f"{call.get('name')}-{where}-{calls}")
            calls += 1
            log.call(at, call_id, str(call.get("name")), call.get("args") or {})
        elif "functionResponse" in part:
            response = part["functionResponse"]
            call_id = response.get("id") or _last_call(log, str(response.get("name")))
            log.output(at, str(call_id), _response_text(response.get("response")))
        else:
            log.skip(at, f"a part with {sorted(part)} (not text, call or response)")


def _last_call(log: LogBuilder, name: str) -> str:
    """Older checkpoints give responses no id: they answer the newest call of that name."""
    from compactkit.items import FunctionCall

    for item in reversed(log.items):
        if isinstance(item, FunctionCall) and item.name == name:
            return item.call_id
    return f"unknown-{name}"


def _response_text(response: Any) -> str:
    if isinstance(response, dict) and set(response) <= {"output", "error"}:
        return text_of(response.get("output") if "output" in response else response.get("error"))
    return json.dumps(response, ensure_ascii=False, sort_keys=True)


def _parts_text(content: Any) -> str:
    """Text of a Gemini ``PartListUnion``: a string, a part, or a list of parts."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    texts = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and "functionResponse" in part:
            texts.append(_response_text(part["functionResponse"].get("response")))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part is not None:
            texts.append(text_of([part]))
    return "\n".join(texts)
