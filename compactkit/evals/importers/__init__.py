"""Agent logs as compactkit items: one importer per log format, formats detected.

``import_log(path)`` reads one file (a ``SQLiteSession`` database may hold several sessions,
so it returns a list); ``iter_logs(paths)`` walks files and folders. Each ``ImportedLog`` lists
what it could not map (``skipped``, with reasons) — a record is never dropped silently.

=====================  ==========================================================
format                 what it reads
=====================  ==========================================================
``openai_chat``        Chat Completions messages (JSON array, JSONL, ``{"messages"}``)
``openai_responses``   Responses input items (``{"input": [...]}`` or an item array)
``anthropic_messages`` Anthropic Messages (``{"system", "messages", "tools"}``)
``claude_code``        Claude Code session JSONL (``~/.claude/projects/...``)
``codex``              Codex CLI rollout JSONL (``~/.codex/sessions/...``)
``gemini_history``     Gemini CLI session files and ``/chat save`` checkpoints
``gemini_stream``      Gemini CLI ``--output-format stream-json`` output
``mini_swe_agent``     mini-SWE-agent ``*.traj.json``
``swe_agent``          SWE-agent ``*.traj``
``openhands``          OpenHands event streams (trajectory export, JSONL)
``openai_agents``      OpenAI Agents SDK ``SQLiteSession`` databases
``langchain``          LangChain/LangGraph message dumps (``messages_to_dict``, ``dumpd``)
=====================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

from compactkit.errors import ConfigError, FormatError
from compactkit.evals.importers import (
    anthropic_messages,
    claude_code,
    codex,
    gemini_history,
    gemini_stream,
    langchain,
    mini_swe_agent,
    openai_agents,
    openai_chat,
    openai_responses,
    openhands,
    swe_agent,
)
from compactkit.evals.importers._base import ImportedLog, ParsedFile, Skipped, parse_file

__all__ = [
    "IMPORTERS",
    "LOG_SUFFIXES",
    "ImportedLog",
    "Skipped",
    "detect_format",
    "import_log",
    "iter_logs",
]

IMPORTERS: dict[str, ModuleType] = {
    module.NAME: module
    for module in (  # detection order: the most specific shapes first
        openai_agents,
        mini_swe_agent,
        swe_agent,
        openhands,
        codex,
        claude_code,
        gemini_stream,
        gemini_history,
        langchain,
        anthropic_messages,
        openai_responses,
        openai_chat,
    )
}
"""Format name -> importer module (``sniff(parsed)``, ``read(parsed)``)."""

LOG_SUFFIXES = (".json", ".jsonl", ".traj", ".db", ".sqlite", ".sqlite3")
"""What a folder import picks up (``*.traj.json`` included)."""


def detect_format(parsed: ParsedFile) -> str:
    """The first importer whose shape matches the file.

    Raises:
        FormatError: none does (the message lists the formats and ``--format``).
    """
    for name, module in IMPORTERS.items():
        if module.sniff(parsed):
            return name
    raise FormatError(
        f"{str(parsed.path)!r}: not a log format compactkit knows; name one with --format "
        f"({', '.join(IMPORTERS)})"
    )


def import_log(path: str | Path, *, format: str | None = None) -> list[ImportedLog]:
    """The conversations in one log file.

    Args:
        path: The file.
        format: An importer name (default: detected).

    Raises:
        ConfigError: an unknown ``format``.
        FormatError: the file is not in the format (named or detected).
        OSError: the file cannot be read.
    """
    if format is not None and format not in IMPORTERS:
        raise ConfigError(f"unknown log format {format!r}; known: {', '.join(IMPORTERS)}")
    parsed = parse_file(Path(path))
    name = format or detect_format(parsed)
    if format is not None and not IMPORTERS[name].sniff(parsed):
        raise FormatError(f"{str(path)!r} does not look like a {format} log")
    return list(IMPORTERS[name].read(parsed))


def iter_logs(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Every log file named, folders walked recursively (sorted, hidden files skipped)."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                relative = child.relative_to(path).parts
                if (
                    child.is_file()
                    and child.name.endswith(LOG_SUFFIXES)
                    and not any(part.startswith(".") for part in relative)
                ):
                    yield child
        elif path.exists():
            yield path
        else:
            raise ConfigError(f"no such log file or folder: {str(path)!r}")
