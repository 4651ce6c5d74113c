"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``).

Each line is a record. ``user`` and ``assistant`` records carry an Anthropic message; their
blocks map to items: text to messages, ``tool_use`` to calls, ``tool_result`` to outputs
(``is_error`` kept), ``thinking``/``redacted_thinking`` to opaque ``Reasoning`` (signature kept).
Not mapped, and reported: bookkeeping records (``summary``, ``file-history-snapshot``,
``queue-operation``, ``system``, ``progress``), subagent (sidechain) messages, image blocks.
"""

from __future__ import annotations

from typing import Any

from compactkit.evals.importers._base import ImportedLog, LogBuilder, ParsedFile, text_of
from compactkit.items import Reasoning

NAME = "claude_code"


def sniff(parsed: ParsedFile) -> bool:
    return parsed.kind == "jsonl" and any(
        isinstance(r, dict)
        and r.get("type") in ("user", "assistant")
        and isinstance(r.get("message"), dict)
        and ("sessionId" in r or "uuid" in r or "parentUuid" in r)
        for _, r in parsed.records
    )


def read(parsed: ParsedFile) -> list[ImportedLog]:
    log = LogBuilder(str(parsed.path), NAME)
    log.skipped.extend(parsed.bad_lines)
    for number, record in parsed.records:
        where = f"line {number}"
        kind = record.get("type") if isinstance(record, dict) else None
        if kind not in ("user", "assistant"):
            log.skip(where, f"Claude Code bookkeeping record {kind!r} (not sent to the model)")
            continue
        if record.get("isSidechain"):
            log.skip(where, "a subagent (sidechain) message, not part of the main conversation")
            continue
        message = record.get("message") or {}
        if kind == "assistant" and isinstance(message.get("model"), str):
            log.model = log.model or message["model"]
        _blocks(log, where, kind, message.get("content"))
    return [log.build()]


def _blocks(log: LogBuilder, where: str, role: str, content: Any) -> None:
    if isinstance(content, str):
        log.message(where, role, content)
        return
    for index, block in enumerate(content or []):
        at = f"{where} block {index}"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            log.message(at, role, block.get("text", ""))
        elif kind == "tool_use":
            log.call(at, str(block.get("id")), str(block.get("name")), block.get("input") or {})
        elif kind == "tool_result":
            error = block.get("is_error")
            fields = {"is_error": error} if isinstance(error, bool) else {}
            log.output(at, str(block.get("tool_use_id")), text_of(block.get("content")), **fields)
        elif kind in ("thinking", "redacted_thinking"):
            log.add([Reasoning(format="anthropic", payload=block)])
        else:
            log.skip(at, f"a {kind!r} block (compactkit keeps text, tools and thinking)")
