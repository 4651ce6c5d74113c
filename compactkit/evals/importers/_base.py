"""What every importer shares: the parsed file, the result, and a builder that keeps calls and
outputs paired and records what could not be mapped (never dropped silently)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from compactkit.errors import FormatError
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool

__all__ = ["ImportedLog", "LogBuilder", "ParsedFile", "Skipped", "parse_file", "text_of"]

_SQLITE_HEADER = b"SQLite format 3\x00"
_CHAT_FIELDS = {"role", "content", "tool_calls", "tool_call_id", "tool_call_ids", "name"}


@dataclass(frozen=True)
class Skipped:
    """One record of a log that has no compactkit item, and why."""

    where: str
    """Where it was: ``"line 12"``, ``"event 7"``, ``"message 3"``."""
    reason: str
    """Why it was not mapped."""

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass(frozen=True)
class ImportedLog:
    """One agent conversation read from a log, as compactkit items."""

    source: str
    """The file it came from (and the session, for files that hold several)."""
    format: str
    """The importer that read it (``claude_code``, ``codex``, ...)."""
    items: tuple[Item, ...]
    """The conversation, in order."""
    tools: tuple[Tool, ...] = ()
    """The tool schemas, when the log records them."""
    skipped: tuple[Skipped, ...] = ()
    """Records with no compactkit item (bookkeeping, UI notices, duplicates), with reasons."""
    model: str | None = None
    """The model the log names, when it names one."""


@dataclass(frozen=True)
class ParsedFile:
    """A log file read once: JSON, JSON Lines (with line numbers) or a SQLite database."""

    path: Path
    kind: Literal["json", "jsonl", "sqlite"]
    value: Any = None
    """The JSON value (``kind == "json"``)."""
    records: tuple[tuple[int, Any], ...] = ()
    """``(line number, value)`` per line (``kind == "jsonl"``)."""
    bad_lines: tuple[Skipped, ...] = ()
    """JSONL lines that are not JSON (reported, not fatal)."""


def parse_file(path: Path) -> ParsedFile:
    """Read ``path`` as a SQLite database, one JSON document, or JSON Lines.

    Raises:
        FormatError: it is none of them.
        OSError: it cannot be read.
    """
    with path.open("rb") as handle:
        if handle.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER:
            return ParsedFile(path, "sqlite")
    text = path.read_text(encoding="utf-8-sig")
    try:
        return ParsedFile(path, "json", value=json.loads(text))
    except json.JSONDecodeError:
        pass
    records: list[tuple[int, Any]] = []
    bad: list[Skipped] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            bad.append(Skipped(f"line {number}", f"not JSON ({exc.msg})"))
    if not records:
        raise FormatError(f"{str(path)!r} is neither JSON, JSON Lines nor a SQLite database")
    return ParsedFile(path, "jsonl", records=tuple(records), bad_lines=tuple(bad))


def text_of(content: Any) -> str:
    """The text of a content value: a string, a list of parts (``text``/``input_text``/...), or
    anything else as compact JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                texts.append(json.dumps(part, ensure_ascii=False, sort_keys=True))
        return "\n".join(texts)
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


@dataclass
class LogBuilder:
    """Collects items in order; an output whose call was never made is reported, not kept
    (compactkit never holds an orphan output)."""

    source: str
    format: str
    items: list[Item] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    model: str | None = None
    _calls: set[str] = field(default_factory=set)
    _answered: set[str] = field(default_factory=set)
    _unmapped: dict[str, list[str]] = field(default_factory=dict)

    def message(self, where: str, role: str, content: Any) -> None:
        text = content if isinstance(content, str) else text_of(content)
        if not text.strip():
            self.skip(where, f"an empty {role} message")
            return
        self.items.append(Message(role=role, content=text))

    def call(self, where: str, call_id: str, name: str, arguments: Any) -> None:
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        if call_id in self._calls:
            self.skip(where, f"a second call with id {call_id!r} (the first is kept)")
            return
        self._calls.add(call_id)
        self.items.append(FunctionCall(call_id=call_id, name=name, arguments=arguments))

    def output(self, where: str, call_id: str, output: Any, **fields: Any) -> None:
        if call_id not in self._calls:
            self.skip(where, f"tool output for call {call_id!r}, which the log never made")
            return
        if call_id in self._answered:
            self.skip(where, f"a second output for call {call_id!r} (the first is kept)")
            return
        self._answered.add(call_id)
        text = output if isinstance(output, str) else text_of(output)
        self.items.append(FunctionCallOutput(call_id=call_id, output=text, **fields))

    def add(self, items: list[Item]) -> None:
        for item in items:
            if isinstance(item, FunctionCall):
                self._calls.add(item.call_id)
            elif isinstance(item, FunctionCallOutput):
                self._answered.add(item.call_id)
            self.items.append(item)

    def skip(self, where: str, reason: str) -> None:
        self.skipped.append(Skipped(where, reason))

    def unmapped_fields(self, where: str, record: dict[str, Any], known: set[str]) -> None:
        """Note the fields of ``record`` no item carries (harness metadata, raw responses)."""
        for name in sorted(set(record) - known):
            if record[name] not in (None, "", [], {}):
                self._unmapped.setdefault(name, []).append(where)

    def chat_message(self, where: str, message: dict[str, Any]) -> None:
        """One OpenAI Chat Completions-shaped message (trajectories store these)."""
        role = message.get("role")
        self.unmapped_fields(where, message, _CHAT_FIELDS)
        if role == "tool":
            ids = message.get("tool_call_ids") or [message.get("tool_call_id")]
            self.output(where, str(ids[0]), message.get("content"))
            for extra_id in ids[1:]:
                self.skip(where, f"one output answers several calls; {extra_id!r} is left open")
            return
        if role not in ("system", "developer", "user", "assistant"):
            self.skip(where, f"a message with role {role!r}")
            return
        content = message.get("content")
        if text_of(content).strip() or role != "assistant":
            self.message(where, role, content)
        for index, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            call_id = call.get("id") or f"{where}-call-{index}"
            self.call(where, str(call_id), str(function.get("name")), function.get("arguments"))

    def build(self, source: str | None = None) -> ImportedLog:
        for name, places in self._unmapped.items():
            span = places[0] if len(places) == 1 else f"{places[0]} .. {places[-1]}"
            self.skipped.append(
                Skipped(
                    span,
                    f"field {name!r} ({len(places)} records): harness metadata no item carries",
                )
            )
        self._unmapped.clear()
        return ImportedLog(
            source=source or self.source,
            format=self.format,
            items=tuple(self.items),
            tools=tuple(self.tools),
            skipped=tuple(self.skipped),
            model=self.model,
        )
