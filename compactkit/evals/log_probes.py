"""Mechanical probes: the facts an imported agent log carries, labelled without an LLM.

Every probe records ``at``, the index of the item that first shows the fact, and the rules
below are the whole of it (deterministic; no model, no person):

* **task** (recall, kind ``task``): the first line of 3+ words, outside code fences, that is not
  a tag line (``<...>``), a traceback line or a line ending in ``:``, of the first user message
  that does not open with a ``#`` heading (an injected AGENTS.md); up to 200 characters.
* **constraint**: a sentence of a user message with a rule word (do not, don't, never, always,
  must, make sure, avoid, should not), 15-250 characters, verbatim (the first 8).
* **artifact_modified**: a file the agent wrote — an editing tool's path (Write, Edit,
  str_replace_editor create/str_replace/insert, write_file, replace, apply_patch ``*** Add/
  Update/Delete File:``) or a shell write (``>``/``>>`` outside quotes, ``tee``, ``sed -i``,
  ``touch``, ``rm``, ``cp``/``mv`` targets, a ``mv`` source deleted; a ``>`` to a file the log
  had not touched is *created*). The strongest action wins (deleted > created > modified).
* **artifact_read**: a file only read — Read/read_file/view/open, or shell ``cat``, ``head``,
  ``tail``, ``nl``, ``sed -n`` of a path.
* **error** (recall, kind ``error``): a tool output line that starts ``NameError: msg`` (any
  ``...Error``/``Exception``/``Failure``), ``error: msg``, ``fatal: msg``, ``FAILED``, or holds
  ``command not found`` / ``No such file or directory``; else the first line of an output
  flagged ``is_error`` (the first 8). ``resolved`` when a later call of the same tool on the same
  target (the path, or the last program of the command line, heredocs aside, with its first
  argument) has a clean output.
* **command** (recall, kind ``command``): a shell command the agent ran, its first line (the
  first 10).
* **identifier**: a UUID, ticket id (ABC-123), hex id or URL in a user or assistant message (the
  first 10; paths are artifacts).
* **update**: a user's ``set/change/update NAME to VALUE`` or ``NAME = VALUE`` stated again with
  another value; the last is current.
* **tool_state**: a call with no output when the log ends (not ``finish``/``submit``).

Shell commands are read from calls of shell tools (``bash``, ``shell``, ``exec_command``,
``run_shell_command``, ``execute_bash``, ...) and, for text-based agents, from fenced
``bash``/``sh``/``mswea_bash_command`` blocks of assistant messages.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from compactkit.evals.schema import (
    ArtifactProbe,
    ConstraintProbe,
    Probe,
    RecallProbe,
    ToolStateProbe,
    UpdateProbe,
)
from compactkit.evals.scoring import identifiers
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

__all__ = ["derive_probes", "item_text", "probe_located"]

Action = Literal["read", "created", "modified", "deleted"]
_STRENGTH = {"read": 0, "modified": 1, "created": 2, "deleted": 3}

_RULE = re.compile(
    r"\b(?:do not|don't|never|always|must|make sure|avoid|should not|shouldn't)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_ERROR = re.compile(
    r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Failure): \S"  # Python's last traceback line
    r"|^(?:error|fatal|ERROR|FATAL)(?:\[\w+\])?: \S"  # compilers, git
    r"|command not found|No such file or directory|^FAILED\b|\bFAILED \("
)
_UPDATE = (
    re.compile(
        r"\b(?:set|change|update)\s+(?:the\s+)?([A-Za-z_][\w.\- ]{1,40}?)\s+to\s+(\S+?)[.,;]?(?:\s|$)",
        re.I,
    ),
    re.compile(r"(?<![\w.])([A-Za-z_][\w.]{1,40})\s*=\s*([^\s,;]+)"),
)
_FENCED = re.compile(r"```.*?```", re.DOTALL)
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n.*?^\s*\1\s*$", re.DOTALL | re.MULTILINE)
_FENCE = re.compile(r"```(?:bash|sh|shell|mswea_bash_command)\s*\n(.*?)```", re.DOTALL)

_SHELL_TOOLS = {
    "bash",
    "shell",
    "exec_command",
    "run_shell_command",
    "execute_bash",
    "local_shell",
    "terminal",
    "run_command",
    "execute_command",
}
_PATH_KEYS = ("file_path", "path", "filename", "file", "absolute_path", "target_file")
_WRITE_TOOLS = {"write": "created", "write_file": "created", "create_file": "created"}
_EDIT_TOOLS = {"edit", "multiedit", "replace", "edit_file", "str_replace", "apply_diff"}
_READ_TOOLS = {"read", "read_file", "view", "open", "open_file", "read_many_files"}
_EDITOR_TOOLS = {"str_replace_editor", "file_editor", "edit_tool", "str_replace_based_edit_tool"}
_EDITOR_COMMANDS: dict[str, Action] = {
    "create": "created",
    "str_replace": "modified",
    "insert": "modified",
    "undo_edit": "modified",
    "view": "read",
}
_PATCH = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.MULTILINE)
_PATCH_ACTIONS: dict[str, Action] = {"Add": "created", "Update": "modified", "Delete": "deleted"}
_SHELL_READERS = {"cat", "head", "tail", "nl", "less"}


def item_text(item: Item) -> str:
    """What an item shows: a message's text, a call's name and raw arguments, an output."""
    if isinstance(item, Message):
        return item.text
    if isinstance(item, FunctionCall):
        return f"{item.name} {item.arguments}"
    if isinstance(item, FunctionCallOutput):
        return item.text
    return ""


def probe_located(probe: Probe, items: Sequence[Item]) -> bool:
    """Whether the item at ``probe.at`` really shows the probe's fact (its text, path, current
    value or call id) — the precision check of the rules above."""
    if probe.at is None or not 0 <= probe.at < len(items):
        return False
    item = items[probe.at]
    wanted = _fact_of(probe)
    shown = [item_text(item)]
    if isinstance(item, FunctionCall):
        shown += [
            item.call_id,
            *(v for v in item.parsed_arguments().values() if isinstance(v, str)),
        ]
    return any(wanted in text for text in shown)


def _fact_of(probe: Probe) -> str:
    if isinstance(probe, RecallProbe):
        return probe.fact
    if isinstance(probe, ArtifactProbe):
        return probe.path
    if isinstance(probe, ConstraintProbe):
        return probe.text
    if isinstance(probe, UpdateProbe):
        return probe.current
    if isinstance(probe, ToolStateProbe):
        return probe.call_id
    return ""


@dataclass(frozen=True)
class _Command:
    at: int
    text: str
    tool: str


def derive_probes(items: Sequence[Item]) -> list[Probe]:
    """The mechanical probes of one conversation, each with ``at`` (see the module's rules)."""
    commands = list(_commands(items))
    probes: list[Probe] = []
    probes += _task(items)
    probes += _constraints(items)
    probes += _artifacts(items, commands)
    probes += _errors(items)
    probes += _command_probes(commands)
    probes += _identifiers(items)
    probes += _updates(items)
    probes += _pending(items)
    return probes


# -- task and constraints -------------------------------------------------------------------


def _user_texts(items: Sequence[Item]) -> Iterator[tuple[int, str]]:
    for index, item in enumerate(items):
        if isinstance(item, Message) and item.role == "user":
            yield index, item.text


def _task(items: Sequence[Item]) -> list[Probe]:
    for index, text in _user_texts(items):
        lines = [line.strip() for line in _FENCED.sub("", text).splitlines() if line.strip()]
        if not lines or lines[0].startswith("#"):
            continue  # an injected instructions file (AGENTS.md, CLAUDE.md), not the task
        for line in lines:
            if (
                len(line.split()) >= 3
                and not line.startswith(("<", 'File "', "Traceback"))
                and not line.endswith(":")
            ):
                return [RecallProbe(id="task", fact=line[:200], kind="task", at=index)]
        # only tag lines (an environment block): the task is in a later message
    return []


def _constraints(items: Sequence[Item]) -> list[Probe]:
    seen: dict[str, int] = {}
    for index, text in _user_texts(items):
        for line in text.splitlines():
            for sentence in _SENTENCE.split(_LIST_MARK.sub("", line).strip()):
                sentence = sentence.strip()
                if 15 <= len(sentence) <= 250 and _RULE.search(sentence):
                    seen.setdefault(sentence, index)
    return [
        ConstraintProbe(id=f"constraint:{n}", text=text, at=at)
        for n, (text, at) in enumerate(list(seen.items())[:8])
    ]


# -- commands and files ---------------------------------------------------------------------


def _commands(items: Sequence[Item]) -> Iterator[_Command]:
    for index, item in enumerate(items):
        if isinstance(item, FunctionCall) and item.name.lower() in _SHELL_TOOLS:
            command = _command_of(item.parsed_arguments(), item.arguments)
            if command:
                yield _Command(index, command, item.name)
        elif isinstance(item, Message) and item.role == "assistant":
            for block in _FENCE.findall(item.text):
                if block.strip():
                    yield _Command(index, block.strip(), "text")


def _command_of(args: dict[str, Any], raw: str) -> str:
    value = args.get("command", args.get("cmd"))
    if isinstance(value, list):  # Codex exec: ["bash", "-lc", "..."]
        value = (
            value[-1]
            if value[:2] in (["bash", "-lc"], ["bash", "-c"])
            else shlex.join(map(str, value))
        )
    if isinstance(value, str):
        return value
    return "" if args else raw


def _artifacts(items: Sequence[Item], commands: list[_Command]) -> list[Probe]:
    found: dict[str, tuple[Action, int]] = {}

    def note(path: str, action: Action, at: int) -> None:
        path = path.strip().strip("'\"")
        if not _looks_like_path(path):
            return
        if path not in found or _STRENGTH[action] > _STRENGTH[found[path][0]]:
            found[path] = (action, at)

    for index, item in enumerate(items):
        if isinstance(item, FunctionCall):
            for path, action in _tool_files(item):
                note(path, action, index)
    for command in commands:
        for path, action in _shell_files(command.text):
            if (
                action == "modified"
                and path in _redirect_targets(command.text)
                and path not in found
            ):
                action = "created"  # `cat > new.py`: a file the log has not touched before
            note(path, action, command.at)
    return [
        ArtifactProbe(id=f"artifact:{path}", path=path, action=action, at=at)
        for path, (action, at) in sorted(found.items(), key=lambda kv: kv[1][1])
    ]


def _looks_like_path(text: str) -> bool:
    return (
        bool(text)
        and len(text) <= 200
        and ("/" in text or "." in text)
        and not any(c in text for c in "*?$`{}<>|;\n ")
        and text not in (".", "..", "/dev/null")
        and not text.startswith("-")
    )


def _tool_files(call: FunctionCall) -> list[tuple[str, Action]]:
    name = call.name.lower()
    if name == "apply_patch" or call.arguments.lstrip().startswith("*** Begin Patch"):
        return [(path, _PATCH_ACTIONS[kind]) for kind, path in _PATCH.findall(_patch_text(call))]
    args = call.parsed_arguments()
    path = next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str)), None)
    if path is None:
        return []
    if name in _EDITOR_TOOLS:
        action = _EDITOR_COMMANDS.get(str(args.get("command")))
        return [(path, action)] if action else []
    if name in _WRITE_TOOLS:
        return [(path, "created")]
    if name in _EDIT_TOOLS:
        return [(path, "modified")]
    if name in _READ_TOOLS:
        return [(path, "read")]
    if name == "delete_file":
        return [(path, "deleted")]
    return []


def _patch_text(call: FunctionCall) -> str:
    args = call.parsed_arguments()
    for key in ("input", "patch", "command"):
        value = args.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and isinstance(value[-1], str):
            return value[-1]
    return call.arguments


def _redirect_targets(command: str) -> set[str]:
    """Paths a single ``>`` (truncate or create, not ``>>``) writes."""
    unquoted = re.sub(r"'[^']*'|\"(?:\\.|[^\"\\])*\"", "''", command)
    return set(re.findall(r"(?<![0-9&>=-])>(?!>)\s*([^\s;&|<>()'\"]+)", unquoted))


def _shell_files(command: str) -> list[tuple[str, Action]]:
    found: list[tuple[str, Action]] = []
    unquoted = re.sub(
        r"'[^']*'|\"(?:\\.|[^\"\\])*\"", "''", command
    )  # `sed 's/a -> b/'` writes nothing
    found += [
        (p, "modified") for p in re.findall(r"(?<![0-9&>=-])>>?\s*([^\s;&|<>()'\"]+)", unquoted)
    ]
    for segment in re.split(r"&&|\|\||[;|\n]", command):
        try:
            words = shlex.split(segment, comments=False)
        except ValueError:
            continue
        if not words:
            continue
        found += _segment_files(segment, words)
    return found


def _segment_files(segment: str, words: list[str]) -> list[tuple[str, Action]]:
    """The files one simple command (``words``, split from ``segment``) touches, and how."""
    head, rest = words[0], [w for w in words[1:] if not w.startswith("-")]
    if head == "tee":
        return [(p, "modified") for p in rest]
    if head == "sed" and any(w.startswith("-i") for w in words[1:]) and len(rest) >= 2:
        return [(rest[-1], "modified")]
    if head == "sed" and "-n" in words[1:] and len(rest) >= 2:
        return [(rest[-1], "read")]
    if head == "touch":
        return [(p, "created") for p in rest]
    if head in ("cp", "mv") and len(rest) == 2:
        moved: list[tuple[str, Action]] = [(rest[1], "created")]
        return [*moved, (rest[0], "deleted")] if head == "mv" else moved
    if head == "rm":
        return [(p, "deleted") for p in rest]
    if head in _SHELL_READERS and ">" not in segment:
        return [(p, "read") for p in rest if not p.isdigit()]
    return []


def _command_probes(commands: list[_Command]) -> list[Probe]:
    seen: dict[str, int] = {}
    for command in commands:
        line = command.text.strip().splitlines()[0][:200].strip()
        if line:
            seen.setdefault(line, command.at)
    return [
        RecallProbe(id=f"command:{n}", fact=line, kind="command", at=at)
        for n, (line, at) in enumerate(list(seen.items())[:10])
    ]


# -- errors ----------------------------------------------------------------------------------


def _target(call: FunctionCall | None) -> tuple[str, str]:
    """What a call acts on: its tool and its command's program or its path."""
    if call is None:
        return ("", "")
    args = call.parsed_arguments()
    command = _command_of(args, "") if call.name.lower() in _SHELL_TOOLS else ""
    if command:  # the program that ran last (and its first argument): heredocs dropped
        body = _HEREDOC.sub("", command)
        segments = [s.strip() for s in re.split(r"&&|\|\||[;|\n]", body) if s.strip()]
        words = segments[-1].split() if segments else []
        return (call.name, " ".join(words[:2]))
    path = next((args[k] for k in _PATH_KEYS if isinstance(args.get(k), str)), "")
    return (call.name, str(path))


def _error_line(output: FunctionCallOutput) -> str | None:
    lines = [line.strip() for line in output.text.splitlines() if line.strip()]
    for line in lines:
        if _ERROR.search(line):
            return line[:200]
    if output.is_error and lines:
        return lines[0][:200]
    return None


def _errors(items: Sequence[Item]) -> list[Probe]:
    calls = {i.call_id: i for i in items if isinstance(i, FunctionCall)}
    outcomes: list[tuple[int, tuple[str, str], str | None]] = []
    for index, item in enumerate(items):
        if isinstance(item, FunctionCallOutput):
            outcomes.append((index, _target(calls.get(item.call_id)), _error_line(item)))
    probes: dict[str, Probe] = {}
    for n, (index, target, line) in enumerate(outcomes):
        if line is None or line in probes or len(probes) >= 8:
            continue
        resolved = any(t == target and e is None for _, t, e in outcomes[n + 1 :])
        probes[line] = RecallProbe(
            id=f"error:{len(probes)}", fact=line, kind="error", resolved=resolved, at=index
        )
    return list(probes.values())


# -- identifiers, updates, pending calls -----------------------------------------------------


def _identifiers(items: Sequence[Item]) -> list[Probe]:
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        if isinstance(item, Message) and item.role in ("user", "assistant"):
            for value, kind in identifiers(item.text):
                if kind in ("uuid", "ticket", "hex id", "url"):
                    seen.setdefault(value, index)
    return [
        RecallProbe(id=f"identifier:{n}", fact=value, kind="identifier", at=at)
        for n, (value, at) in enumerate(list(seen.items())[:10])
    ]


def _updates(items: Sequence[Item]) -> list[Probe]:
    values: dict[str, list[tuple[str, str, int]]] = {}
    for index, text in _user_texts(items):
        for pattern in _UPDATE:
            for match in pattern.finditer(text):
                name, value = match.group(1).strip(), match.group(2).strip()
                history = values.setdefault(name.lower(), [])
                if not history or history[-1][1] != value:
                    history.append((name, value, index))
    probes: list[Probe] = []
    for history in values.values():
        distinct = list(dict.fromkeys(v for _, v, _ in history))
        if len(distinct) < 2:
            continue
        name, current, at = history[-1]
        older = tuple(v for v in distinct if v != current)
        probes.append(
            UpdateProbe(id=f"update:{name}", name=name, current=current, superseded=older, at=at)
        )
    return probes


_TERMINAL_TOOLS = {"finish", "submit", "attempt_completion", "task_complete", "exit"}


def _pending(items: Sequence[Item]) -> list[Probe]:
    answered = {i.call_id for i in items if isinstance(i, FunctionCallOutput)}
    return [
        ToolStateProbe(id=f"pending:{item.call_id}", call_id=item.call_id, name=item.name, at=index)
        for index, item in enumerate(items)
        if isinstance(item, FunctionCall)
        and item.call_id not in answered
        and item.name.lower() not in _TERMINAL_TOOLS  # ending the run answers nothing
    ]
