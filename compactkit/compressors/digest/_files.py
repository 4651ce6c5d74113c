"""Files and commands in tool calls: what the digest records as the artifact trail.

Structured tools are read from their arguments (``path``/``file``/``filename``…, editor
commands, ``old_str``/``new_str`` edits, whole-file writes, ``apply_patch`` patches); shell tools
from their command line (common coreutils, ``sed -i``, redirections, ``git checkout --``), read
by ``_shell_files``.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterator
from typing import NamedTuple

from compactkit.compressors._facts import code

_PATH_KEYS = (
    "path",
    "file",
    "file_path",
    "filepath",
    "filename",
    "target_file",
    "relative_path",
    "notebook_path",
)
_LIST_KEYS = ("paths", "files", "file_paths")
_COMMAND_KEYS = ("command", "cmd", "script", "commands")
EDITOR_COMMANDS = {"view", "create", "str_replace", "insert", "undo_edit", "delete", "rename"}
_ACTIONS = frozenset(EDITOR_COMMANDS | {"read", "write", "append"})  # what an action argument says
_READ_TOOL = re.compile(r"read|view|cat|open|show|get_?file|grep|search|find|glob|list|ls", re.I)
_LISTING_TOOL = re.compile(r"list_?dir|list_?files|^ls$|glob|tree", re.I)
_WRITE_TOOL = re.compile(
    r"write|edit|create|patch|replace|insert|append|delete|remove|move|rename|save|modify", re.I
)
SHELL_TOOL = re.compile(r"shell|bash|terminal|exec|command|run|sh$|cmd|powershell", re.I)
_PATCH_FILE = re.compile(
    r"^\*\*\* (Update|Add|Delete) File: (.+)$|^\+\+\+ (?:b/)?(.+)$|^--- (?:a/)?(.+)$", re.M
)


class FileOp(NamedTuple):
    """One thing a call did to a file (a tuple: one is made per file of every call digested)."""

    path: str
    modified: bool
    """True for writes, edits, deletes; False for reads and searches."""
    what: str
    """What was done, verbatim where possible ("read lines 1-80", "replaced `a` with `b`")."""


def looks_like_path(token: str) -> bool:
    """Whether a shell token or argument value looks like a file path."""
    if not token or token.startswith(("-", "http://", "https://")) or "\n" in token:
        return False
    if len(token) > 200 or "=" in token or token.endswith("/") or token in (".", ".."):
        return False
    return "/" in token or _EXTENSION.search(token) is not None


_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,6}$")


def _first_str(args: dict[str, object], keys: tuple[str, ...]) -> str | None:
    """The value of the first of ``keys`` that ``args`` holds as a string."""
    if args.keys().isdisjoint(keys):  # the common case, tested in one pass
        return None
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


_PATCH_KEYS = ("patch", "diff", "input")
_ACTION_KEYS = ("command", "action", "operation", "mode")
_OLD_KEYS = ("old_str", "old_string", "old", "search", "find")
_NEW_KEYS = ("new_str", "new_string", "new", "replace", "replacement")
_CONTENT_KEYS = ("content", "file_text", "text", "contents", "data")
_READ_KEYS = ("view_range", "range", "lines", "start_line", "offset", "end_line", "limit")
_SEARCH_KEYS = ("pattern", "query", "regex")
_MODIFYING = re.compile(r"write|edit|create|replace|insert|delete|remove|undo|rename|append")


@functools.lru_cache(maxsize=1024)
def _tool_kind(name: str) -> tuple[bool, bool, bool, bool]:
    """What a tool's name says it does: ``(lists, writes, reads, deletes)`` (remembered: a
    session calls the same few tools again and again)."""
    return (
        bool(_LISTING_TOOL.search(name)),
        bool(_WRITE_TOOL.search(name)),
        bool(_READ_TOOL.search(name)),
        bool(re.search(r"delete|remove", name, re.I)),
    )


# Every argument ``file_ops`` reads besides the paths. A call holding none of them (the usual
# ``read_file(path=…)``) names no action, patch, edit, content, range or search: what it did
# follows from its tool's name alone (``_by_name``).
_DETAIL_KEYS = frozenset(
    _LIST_KEYS
    + _ACTION_KEYS
    + _PATCH_KEYS
    + _OLD_KEYS
    + _NEW_KEYS
    + _CONTENT_KEYS
    + _READ_KEYS
    + _SEARCH_KEYS
    + ("insert_line",)
)


def file_ops(name: str, args: dict[str, object]) -> list[FileOp]:
    """The file operations a structured (non-shell) tool call performs."""
    paths = [str(value) for k in _PATH_KEYS if isinstance(value := args.get(k), str)]
    if args.keys().isdisjoint(_DETAIL_KEYS):
        return _by_name(name, paths)
    paths += _listed_paths(args)
    action = _action_of(args)
    patch = _first_str(args, _PATCH_KEYS)
    if isinstance(patch, str) and ("*** " in patch or "+++ " in patch):
        return list(patch_ops(patch))
    named = _files_named(name, paths)
    if named is None:
        return []
    (_, writes, reads, deletes), paths = named
    old = _first_str(args, _OLD_KEYS)
    new = _first_str(args, _NEW_KEYS)
    content = _first_str(args, _CONTENT_KEYS)
    modified = (bool(action) and bool(_MODIFYING.search(action))) or (
        not action and (writes or old is not None or content is not None)
    )
    if not modified and not reads and not action:
        return []
    if not modified:
        return [FileOp(p, False, _read_what(args)) for p in paths]
    if "delete" in action or (not action and deletes):
        what = "deleted"
    else:
        what = _write_what(name, args, action, old, new, content)
    return [FileOp(p, True, what) for p in paths]


def _listed_paths(args: dict[str, object]) -> list[str]:
    """The paths of the arguments that list several (``paths``, ``files``, ...)."""
    if args.keys().isdisjoint(_LIST_KEYS):
        return []
    paths: list[str] = []
    for key in _LIST_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            paths += [str(v) for v in value if isinstance(v, str)]
    return paths


def _action_of(args: dict[str, object]) -> str:
    """The action an argument names (``command="str_replace"``, ...), or ``""``."""
    if args.keys().isdisjoint(_ACTION_KEYS):
        return ""
    for key in _ACTION_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value in _ACTIONS:
            return str(value)
    return ""


def _read_what(args: dict[str, object]) -> str:
    """What a reading call did: read (which lines), or searched (for what)."""
    what = "read"
    if args.keys().isdisjoint(_READ_KEYS) and args.keys().isdisjoint(_SEARCH_KEYS):
        return what
    span = args.get("view_range") or args.get("range") or args.get("lines")
    start, end = (
        args.get("start_line") or args.get("offset"),
        args.get("end_line") or args.get("limit"),
    )
    if isinstance(span, list) and len(span) == 2:
        what = f"read lines {span[0]}-{span[1]}"
    elif "limit" in args and start is not None:
        what = f"read {end} lines from line {start}"
    elif start is not None or end is not None:
        what = f"read lines {start or 1}-{end or 'end'}"
    pattern = args.get("pattern") or args.get("query") or args.get("regex")
    if isinstance(pattern, str):
        what = f"searched for {code(pattern, 60)}"
    return what


def _write_what(
    name: str,
    args: dict[str, object],
    action: str,
    old: str | None,
    new: str | None,
    content: str | None,
) -> str:
    """What a modifying call (not a delete) did: edited, inserted, created or wrote."""
    if isinstance(old, str) and isinstance(new, str):
        return f"edited {code(old, 40)} → {code(new, 40)}"
    if ("insert" in action and isinstance(new, str)) or isinstance(args.get("insert_line"), int):
        inserted = code(str(new or args.get("new_str") or ""), 60)
        return f"inserted {inserted} at line {args.get('insert_line')}"
    if isinstance(content, str):
        lines = content.count("\n") + (0 if content.endswith("\n") else 1)
        return f"{'created' if 'create' in (action or name.lower()) else 'wrote'} ({lines} lines)"
    return action or name


def _files_named(
    name: str, paths: list[str]
) -> tuple[tuple[bool, bool, bool, bool], list[str]] | None:
    """What tool ``name`` does (``_tool_kind``) and the files among ``paths`` (not ``.``, ``..``
    or a directory); ``None`` when a call of it touches no file (a directory listing, no file
    named)."""
    kind = _tool_kind(name)
    if kind[0]:
        return None  # a directory listing reads no file
    files = [p for p in paths if p.strip() and p not in (".", "..") and not p.endswith("/")]
    return (kind, files) if files else None


def _by_name(name: str, paths: list[str]) -> list[FileOp]:
    """``file_ops`` of a call whose arguments hold paths and nothing else it reads (none of
    ``_DETAIL_KEYS``): no action, so a tool whose name writes modified its files (deleted them,
    when the name says so; else what it did is its name), one whose name reads read them."""
    named = _files_named(name, paths)
    if named is None:
        return []
    (_, writes, reads, deletes), paths = named
    if writes:
        what = "deleted" if deletes else name
        return [FileOp(p, True, what) for p in paths]
    return [FileOp(p, False, "read") for p in paths] if reads else []


def patch_ops(patch: str) -> Iterator[FileOp]:
    current: str | None = None
    verb = "patched"
    counts: dict[str, list[int]] = {}
    verbs: dict[str, str] = {}
    for line in patch.splitlines():
        match = _PATCH_FILE.match(line)
        if match:
            kind, star_path, plus_path, minus_path = match.groups()
            path = star_path or plus_path or None
            if minus_path and not path:
                continue
            if path and path != "/dev/null":
                current = path.strip()
                verb = {"Add": "created", "Delete": "deleted"}.get(kind or "", "patched")
                counts.setdefault(current, [0, 0])
                verbs.setdefault(current, verb)
            continue
        if current is None:
            continue
        if line.startswith("+") and not line.startswith("+++"):
            counts[current][0] += 1
        elif line.startswith("-") and not line.startswith("---"):
            counts[current][1] += 1
    for path, (added, removed) in counts.items():
        yield FileOp(path, True, f"{verbs[path]} (+{added}/-{removed} lines)")


def command_of(name: str, args: dict[str, object]) -> str | None:
    """The shell command a call runs, when it is a shell-like tool."""
    if args.keys().isdisjoint(_COMMAND_KEYS):  # most calls: tested in one pass
        return None
    if isinstance(args.get("command"), str) and str(args["command"]) in EDITOR_COMMANDS:
        return None
    for key in _COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = " ".join(shlex.quote(str(v)) for v in value)
        if isinstance(value, str) and (
            key != "command" or SHELL_TOOL.search(name) or "path" not in args
        ):
            return value.strip()
    return None


_TRACEBACK_FILE = re.compile(
    r"""File "(?P<py>[^"\n]+)", line \d+|^\s*at .*?\((?P<js>[^():\s]+):\d+:\d+\)"""
    r"""|^(?P<lint>[\w./-]+\.\w{1,6}):\d+""",
    re.M,
)
_PATH_ARG = re.compile(r"""['"]?([\w./-]+\.\w{1,6}|[\w.-]+/[\w./-]+)['"]?""")


def paths_named(text: str) -> list[str]:
    """Files an error output names: traceback frames (``File "x.py", line 3``, ``at f
    (x.js:1:2)``) and ``path:line:`` prefixes of compiler and linter lines (at most 8)."""
    if "File " not in text and ":" not in text:
        return []
    found: list[str] = []
    for match in _TRACEBACK_FILE.finditer(text):
        path = match.group("py") or match.group("js") or match.group("lint")
        if path and "site-packages" not in path and path not in found:
            found.append(path.removeprefix("./"))
            if len(found) == 8:
                break
    return found


def paths_in_command(command: str) -> list[str]:
    """Path-like arguments of a command line or a call's rendering (``run_tests({"path":
    "tests"})`` → ``tests``)."""
    found: list[str] = []
    for match in _PATH_ARG.finditer(command):  # the first 8: a long script is not read to its end
        if looks_like_path(match.group(1)):
            found.append(match.group(1))
            if len(found) == 8:
                break
    return found
