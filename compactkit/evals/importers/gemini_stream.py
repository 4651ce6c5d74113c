"""Gemini CLI ``--output-format stream-json`` output: one event per line (``init``,
``message``, ``tool_use``, ``tool_result``, ``error``, ``result``).

``message`` events become messages (consecutive assistant ``delta`` chunks are joined into
one), ``tool_use`` a call (``parameters`` as JSON), ``tool_result`` its output (the error's
message when it failed). ``init`` gives the model. Not mapped, and reported: ``error`` events
(CLI warnings) and the final ``result`` (statistics).
"""

from __future__ import annotations

from compactkit.evals.importers._base import ImportedLog, LogBuilder, ParsedFile, text_of

NAME = "gemini_stream"
_EVENTS = {"init", "message", "tool_use", "tool_result", "error", "result"}


def sniff(parsed: ParsedFile) -> bool:
    types = {r.get("type") for _, r in parsed.records if isinstance(r, dict)}
    return parsed.kind == "jsonl" and types <= _EVENTS and bool(types & {"init", "tool_use"})


def read(parsed: ParsedFile) -> list[ImportedLog]:
    log = LogBuilder(str(parsed.path), NAME)
    log.skipped.extend(parsed.bad_lines)
    pending: list[str] = []  # assistant deltas not yet written
    pending_at = ""

    def flush() -> None:
        nonlocal pending
        if pending:
            log.message(pending_at, "assistant", "".join(pending))
            pending = []

    for number, event in parsed.records:
        where = f"line {number}"
        kind = event.get("type")
        if kind == "message" and event.get("role") == "assistant":
            if not pending:
                pending_at = where
            pending.append(str(event.get("content", "")))
            continue
        flush()
        if kind == "init":
            if isinstance(event.get("model"), str):
                log.model = event["model"]
            log.skip(where, "session start (id, model)")
        elif kind == "message":
            log.message(where, "user", event.get("content", ""))
        elif kind == "tool_use":
            log.call(
                where,
                str(event.get("tool_id")),
                str(event.get("tool_name")),
                event.get("parameters") or {},
            )
        elif kind == "tool_result":
            error = event.get("error")
            output = event.get("output")
            if output is None and isinstance(error, dict):
                output = f"{error.get('type', 'Error')}: {error.get('message', '')}"
            log.output(
                where,
                str(event.get("tool_id")),
                text_of(output),
                **({"is_error": True} if event.get("status") == "error" else {}),
            )
        elif kind == "error":
            log.skip(
                where,
                f"a CLI {event.get('severity', 'error')} event: {event.get('message', '')!s:.80}",
            )
        else:
            log.skip(where, f"a {kind!r} event (run statistics)")
    flush()
    return [log.build()]
