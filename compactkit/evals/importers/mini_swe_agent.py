"""mini-SWE-agent trajectories (``*.traj.json``: ``{"info", "messages", "trajectory_format"}``).

``messages`` are Chat Completions messages: with tool calls (v2, ``role: "tool"`` outputs) or
text-based (v1: the command in a fenced block of the assistant's text, the observation as the
next user message, kept as they are). ``info.config.model.model_name`` is the log's model. Not
mapped, and reported: each message's ``extra`` (raw API responses, parsed actions) and
``provider_specific_fields``, and the run's ``info`` (cost, exit status, submitted patch).
"""

from __future__ import annotations

from compactkit.evals.importers._base import ImportedLog, LogBuilder, ParsedFile

NAME = "mini_swe_agent"


def sniff(parsed: ParsedFile) -> bool:
    value = parsed.value
    if parsed.path.name.endswith(".traj.json") and isinstance(value, list):
        return all(isinstance(m, dict) and "role" in m for m in value)  # v1: the messages alone
    return (
        isinstance(value, dict)
        and isinstance(value.get("messages"), list)
        and ("trajectory_format" in value or "info" in value)
        and "history" not in value
    )


def read(parsed: ParsedFile) -> list[ImportedLog]:
    value = parsed.value
    if isinstance(value, list):
        value = {"messages": value}
    log = LogBuilder(str(parsed.path), NAME)
    info = value.get("info") or {}
    model = ((info.get("config") or {}).get("model") or {}).get("model_name")
    log.model = model if isinstance(model, str) else None
    for index, message in enumerate(value["messages"]):
        log.chat_message(f"message {index}", message)
    if info:
        log.skip("info", "run statistics, configuration and the submitted patch (not a message)")
    return [log.build()]
