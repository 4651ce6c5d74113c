"""OpenHands event streams: a JSON array of events (the trajectory export), ``{"events":
[...]}``, or JSON Lines of events.

A ``message`` action becomes a user or assistant message (by ``source``). An action with
``tool_call_metadata`` becomes a call (the arguments the model wrote, from the recorded model
response; its ``thought`` the assistant text before it), an observation with
``tool_call_metadata`` the call's output. Not mapped, and reported: events without
``tool_call_metadata`` other than messages (``agent_state_changed``, ``null``, ``recall``,
``system``), whose content the model did not receive as a tool result.
"""

from __future__ import annotations

import json
from typing import Any

from compactkit.evals.importers._base import ImportedLog, LogBuilder, ParsedFile

NAME = "openhands"


def _events(parsed: ParsedFile) -> list[tuple[str, Any]] | None:
    value = parsed.value
    if isinstance(value, dict) and isinstance(value.get("events"), list):
        value = value["events"]
    if parsed.kind == "jsonl":
        value = [r for _, r in parsed.records]
    if (
        isinstance(value, list)
        and value
        and all(
            isinstance(e, dict) and ("action" in e or "observation" in e) and "source" in e
            for e in value
        )
    ):
        return [(f"event {e.get('id', i)}", e) for i, e in enumerate(value)]
    return None


def sniff(parsed: ParsedFile) -> bool:
    return _events(parsed) is not None


def read(parsed: ParsedFile) -> list[ImportedLog]:
    log = LogBuilder(str(parsed.path), NAME)
    for where, event in _events(parsed) or []:
        meta = event.get("tool_call_metadata")
        if "action" in event:
            _action(log, where, event, meta)
        elif isinstance(meta, dict):
            log.output(where, str(meta.get("tool_call_id")), str(event.get("content", "")))
        else:
            log.skip(where, f"a {event.get('observation')!r} observation (not a tool result)")
    return [log.build()]


def _action(log: LogBuilder, where: str, event: dict[str, Any], meta: Any) -> None:
    args = event.get("args") or {}
    if not isinstance(meta, dict):
        if event.get("action") == "message":
            role = "user" if event.get("source") == "user" else "assistant"
            log.message(where, role, args.get("content") or event.get("message", ""))
        else:
            log.skip(where, f"a {event.get('action')!r} action the model did not call as a tool")
        return
    call_id = str(meta.get("tool_call_id"))
    response = meta.get("model_response") or {}
    model = response.get("model")
    if isinstance(model, str):
        log.model = log.model or model
    arguments, thought = _recorded_call(response, call_id)
    thought = thought if thought is not None else args.get("thought")
    if isinstance(thought, str) and thought.strip() and not _said(log, thought):
        log.message(where, "assistant", thought)
    if arguments is None:
        arguments = json.dumps(
            {k: v for k, v in args.items() if k != "thought"}, ensure_ascii=False
        )
    log.call(where, call_id, str(meta.get("function_name")), arguments)


def _recorded_call(response: dict[str, Any], call_id: str) -> tuple[str | None, str | None]:
    """The arguments the model wrote for ``call_id`` and the text beside them, from the
    model response OpenHands recorded with the action."""
    for choice in response.get("choices") or []:
        message = choice.get("message") or {}
        for call in message.get("tool_calls") or []:
            if call.get("id") == call_id:
                return (call.get("function") or {}).get("arguments"), message.get("content")
    return None, None


def _said(log: LogBuilder, text: str) -> bool:
    """Several calls of one model response repeat its text: write it once."""
    from compactkit.items import Message

    for item in reversed(log.items[-8:]):
        if isinstance(item, Message) and item.role == "assistant" and item.content == text:
            return True
    return False
