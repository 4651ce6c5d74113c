"""SWE-agent trajectories (``*.traj``: ``{"history", "trajectory", "info", ...}``).

``history`` holds what the model saw, as Chat Completions messages (tool outputs name their
call in ``tool_call_ids``); it maps message by message. Not mapped, and reported: the
``trajectory`` steps (the same actions and observations again, with timings), ``info``
(exit status, patch, statistics), ``environment``/``replay_config``, and the per-message
``agent``/``message_type``/``thought``/``action`` fields (``thought`` and ``action`` repeat
the content and the tool call).
"""

from __future__ import annotations

from compactkit.evals.importers._base import ImportedLog, LogBuilder, ParsedFile

NAME = "swe_agent"


def sniff(parsed: ParsedFile) -> bool:
    value = parsed.value
    return isinstance(value, dict) and isinstance(value.get("history"), list)


def read(parsed: ParsedFile) -> list[ImportedLog]:
    value = parsed.value
    log = LogBuilder(str(parsed.path), NAME)
    for index, message in enumerate(value["history"]):
        log.chat_message(f"history {index}", message)
    for key in ("trajectory", "info", "environment", "replay_config"):
        if value.get(key):
            log.skip(key, f"the trajectory's {key!r} (not a message the model saw)")
    return [log.build()]
