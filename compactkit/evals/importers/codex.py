"""Codex CLI rollout logs (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``. ``response_item`` payloads are Responses
items: messages, ``function_call``/``function_call_output`` and ``reasoning`` map through
compactkit's Responses adapter (lossless); ``custom_tool_call`` (``apply_patch``) and
``local_shell_call`` become calls whose arguments are the input as written. ``session_meta``'s
``instructions`` become the system message. Not mapped, and reported: ``event_msg`` (UI
events that duplicate response items), ``turn_context`` (its model is kept as the log's
model), ``compacted`` markers and unknown record types.
"""

from __future__ import annotations

import json
from typing import Any

from compactkit.errors import FormatError
from compactkit.evals.importers._base import ImportedLog, LogBuilder, ParsedFile, text_of
from compactkit.formats.responses import responses_to_items

NAME = "codex"


def sniff(parsed: ParsedFile) -> bool:
    return parsed.kind == "jsonl" and any(
        isinstance(r, dict)
        and r.get("type") in ("session_meta", "response_item")
        and isinstance(r.get("payload"), dict)
        for _, r in parsed.records
    )


def read(parsed: ParsedFile) -> list[ImportedLog]:
    log = LogBuilder(str(parsed.path), NAME)
    log.skipped.extend(parsed.bad_lines)
    for number, record in parsed.records:
        where = f"line {number}"
        kind = record.get("type") if isinstance(record, dict) else None
        payload = record.get("payload") if isinstance(record, dict) else None
        if not isinstance(payload, dict):
            log.skip(where, f"a {kind!r} record without a payload")
        elif kind == "session_meta":
            if isinstance(payload.get("instructions"), str) and payload["instructions"].strip():
                log.message(where, "system", payload["instructions"])
            else:
                log.skip(where, "session metadata (id, cwd, CLI version)")
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                log.model = payload["model"]
            log.skip(where, "turn context (model, sandbox and approval settings)")
        elif kind == "response_item":
            _item(log, where, payload)
        elif kind == "event_msg":
            log.skip(where, f"UI event {payload.get('type')!r} (duplicates the response items)")
        else:
            log.skip(where, f"a {kind!r} record compactkit does not model")
    return [log.build()]


def _item(log: LogBuilder, where: str, payload: dict[str, Any]) -> None:
    kind = payload.get("type")
    if kind in ("custom_tool_call", "local_shell_call"):
        call_id = str(payload.get("call_id") or payload.get("id"))
        arguments = payload.get("input") if kind == "custom_tool_call" else payload.get("action")
        name = payload.get("name") or "local_shell"
        log.call(
            where,
            call_id,
            str(name),
            arguments if isinstance(arguments, str) else json.dumps(arguments),
        )
        return
    if kind in ("custom_tool_call_output", "local_shell_call_output"):
        log.output(where, str(payload.get("call_id")), text_of(payload.get("output")))
        return
    if kind == "function_call_output":
        log.output(where, str(payload.get("call_id")), text_of(payload.get("output")))
        return
    if kind == "function_call":
        log.call(
            where,
            str(payload.get("call_id")),
            str(payload.get("name")),
            payload.get("arguments") or "{}",
        )
        return
    try:
        log.add(responses_to_items([payload]))
    except FormatError as exc:
        log.skip(where, f"a {kind!r} item: {exc}")
