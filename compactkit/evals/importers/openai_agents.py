"""OpenAI Agents SDK ``SQLiteSession`` databases (tables ``agent_sessions`` and
``agent_messages``; each message row is one Responses input item as JSON).

Every session in the file is one log. Items map through compactkit's Responses adapter
(lossless for messages, function calls and outputs, reasoning); other item types the SDK
stores (hosted tool calls such as ``web_search_call``, ``computer_call``) are reported. Read
only: the database is opened read-only and never changed.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

from compactkit.errors import FormatError
from compactkit.evals.importers._base import ImportedLog, LogBuilder, ParsedFile, text_of
from compactkit.formats.responses import responses_to_items

NAME = "openai_agents"
MESSAGES_TABLE = "agent_messages"


def _connect(parsed: ParsedFile) -> sqlite3.Connection:
    return sqlite3.connect(f"{parsed.path.resolve().as_uri()}?mode=ro", uri=True)


def sniff(parsed: ParsedFile) -> bool:
    if parsed.kind != "sqlite":
        return False
    with closing(_connect(parsed)) as db:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    return MESSAGES_TABLE in names


def read(parsed: ParsedFile) -> list[ImportedLog]:
    with closing(_connect(parsed)) as db:
        rows = db.execute(
            f"SELECT session_id, id, message_data FROM {MESSAGES_TABLE} ORDER BY session_id, id"
        ).fetchall()
    logs: dict[str, LogBuilder] = {}
    for session_id, row_id, data in rows:
        log = logs.setdefault(session_id, LogBuilder(f"{parsed.path}#{session_id}", NAME))
        where = f"row {row_id}"
        try:
            item = json.loads(data)
        except json.JSONDecodeError as exc:
            log.skip(where, f"message_data is not JSON ({exc.msg})")
            continue
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind == "function_call":
            log.call(
                where,
                str(item.get("call_id")),
                str(item.get("name")),
                item.get("arguments") or "{}",
            )
        elif kind == "function_call_output":
            log.output(where, str(item.get("call_id")), text_of(item.get("output")))
        else:
            try:
                log.add(responses_to_items([item]))
            except FormatError as exc:
                log.skip(where, f"a {kind!r} item: {exc}")
    return [log.build() for log in logs.values()]
