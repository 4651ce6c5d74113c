"""Files and commands in tool calls: what the digest records as the artifact trail.

Structured tools are read from their arguments (``path``/``file``/``filename``…, editor
commands, ``old_str``/``new_str`` edits, whole-file writes, ``apply_patch`` patches); shell tools
from their command line (common coreutils, ``sed -i``, redirections, ``git checkout --``).
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Callable, Iterator
from typing import Literal, NamedTuple

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
_EDITOR_COMMANDS = {"view", "create", "str_replace", "insert", "undo_edit", "delete", "rename"}
_ACTIONS = frozenset(_EDITOR_COMMANDS | {"read", "write", "append"})  # what an action argument says
_READ_TOOL = re.compile(r"read|view|cat|open|show|get_?file|grep|search|find|glob|list|ls", re.I)
_LISTING_TOOL = re.compile(r"list_?dir|list_?files|^ls$|glob|tree", re.I)
_WRITE_TOOL = re.compile(
    r"write|edit|create|patch|replace|insert|append|delete|remove|move|rename|save|modify", re.I
)
_SHELL_TOOL = re.compile(r"shell|bash|terminal|exec|command|run|sh$|cmd|powershell", re.I)
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
    return "/" in token or bool(re.search(r"\.[A-Za-z0-9]{1,6}$", token))


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
        return list(_patch_ops(patch))
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


def _patch_ops(patch: str) -> Iterator[FileOp]:
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
    if isinstance(args.get("command"), str) and str(args["command"]) in _EDITOR_COMMANDS:
        return None
    for key in _COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = " ".join(shlex.quote(str(v)) for v in value)
        if isinstance(value, str) and (
            key != "command" or _SHELL_TOOL.search(name) or "path" not in args
        ):
            return value.strip()
    return None


_SCRIPTS = re.compile(r"^(?:python[\d.]*|node|ruby|perl|bash|sh)$")
_PATCHERS = re.compile(r"^(?:patch|apply_patch|applypatch)$")
_HEREDOC = re.compile(
    r"<<-?[ \t]*(['\"]?)([A-Za-z_][\w-]*)\1([^\n]*)\n(.*?)(?:\n[ \t]*\2[ \t]*(?=\n|$)|\Z)", re.S
)
_REDIRECT = re.compile(r"^(?:\d?>>?|&>>?)(?P<path>.+)$")
# Files a script writes: open('x', 'w'), Path('x').write_text(...), shutil.copy(_, 'x'), os.remove
_SCRIPT_WRITES = re.compile(
    r"""open\(\s*['"](?P<open>[^'"\n]+)['"]\s*,\s*['"][wax]b?\+?['"]"""
    r"""|Path\(\s*['"](?P<path>[^'"\n]+)['"]\s*\)\s*\.\s*(?:write_text|write_bytes|open\(\s*['"][wa]|unlink|touch)"""
    r"""|(?:shutil\.(?:copy\w*|move)\(\s*[^,\n]+,\s*)['"](?P<dst>[^'"\n]+)['"]"""
    r"""|os\.(?:remove|unlink)\(\s*['"](?P<gone>[^'"\n]+)['"]"""
    r"""|writeFileSync\(\s*['"](?P<node>[^'"\n]+)['"]"""
)
_SCRIPT_PATH_VAR = re.compile(
    r"""(?P<var>\w+)\s*=\s*(?:Path|pathlib\.Path)\(\s*['"](?P<path>[^'"\n]+)['"]\s*\)"""
)


def shell_file_ops(command: str) -> list[FileOp]:
    """Files a shell command reads or modifies: common coreutils, ``sed -i``/``perl -pi``,
    redirections (``> f``, ``>> f``, ``>f``), heredocs (``cat > f <<EOF``), patches applied
    through ``git apply``/``patch``/``apply_patch`` with the diff inline, and scripts run
    through ``python - <<EOF`` / ``python -c`` that write files."""
    ops: list[FileOp] = []
    bodies: list[tuple[str, str]] = []  # (the line that opened the heredoc, its body)

    def lift(match: re.Match[str]) -> str:
        line_start = command.rfind("\n", 0, match.start()) + 1
        bodies.append((command[line_start : match.start()], match.group(4)))
        return f"<<{match.group(2)}{match.group(3)}\n"

    text = _HEREDOC.sub(lift, command)
    for intro, body in bodies:
        program = _program(intro)
        if _PATCHERS.match(program) or re.search(r"\bgit\s+apply\b", intro):
            ops += list(_patch_ops(body))
        elif _SCRIPTS.match(program):
            ops += _script_ops(body)
    for part in split_commands(text):
        ops += _part_ops(part)
    return _unique(ops)


_SEPARATOR = re.compile(r"&&|\|\||[;|\n]|(?<![<>&\d])&(?![>&])")
_QUOTED = re.compile(r"""'[^']*'|"(?:[^"\\]|\\.)*"|\\.""", re.S)


def split_commands(line: str) -> list[str]:
    """The simple commands of a shell line, split at ``&&``, ``||``, ``;``, ``|``, ``&`` and
    newlines outside quotes (``sed -i 's|a|b|' f`` is one command)."""
    if "'" not in line and '"' not in line and "\\" not in line:
        return [p.strip() for p in _SEPARATOR.split(line) if p.strip()]
    parts: list[str] = []
    current, position = [], 0
    for quoted in _QUOTED.finditer(line):
        pieces = _SEPARATOR.split(line[position : quoted.start()])
        current.append(pieces[0])
        for piece in pieces[1:]:
            parts.append("".join(current))
            current = [piece]
        current.append(quoted.group(0))
        position = quoted.end()
    pieces = _SEPARATOR.split(line[position:])
    current.append(pieces[0])
    for piece in pieces[1:]:
        parts.append("".join(current))
        current = [piece]
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


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
    if not command:
        return []
    return [m.group(1) for m in _PATH_ARG.finditer(command) if looks_like_path(m.group(1))][:8]


def _program(line: str) -> str:
    for part in reversed(re.split(r"&&|\|\||;|\|", line)):
        tokens = part.split()
        while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
            tokens = tokens[1:]
        if tokens:
            return tokens[0].rsplit("/", 1)[-1]
    return ""


def _script_ops(script: str) -> list[FileOp]:
    ops = []
    variables = {m.group("var"): m.group("path") for m in _SCRIPT_PATH_VAR.finditer(script)}
    for match in _SCRIPT_WRITES.finditer(script):
        path = match.group("open") or match.group("path") or match.group("dst")
        path = path or match.group("node")
        if path:
            ops.append(FileOp(path, True, "written by a script"))
        elif match.group("gone"):
            ops.append(FileOp(match.group("gone"), True, "deleted by a script"))
    for var, path in variables.items():
        if re.search(rf"\b{re.escape(var)}\s*\.\s*(?:write_text|write_bytes|unlink)\(", script):
            ops.append(FileOp(path, True, "written by a script"))
    return ops


def _unique(ops: list[FileOp]) -> list[FileOp]:
    seen: set[tuple[str, bool]] = set()
    out = []
    for op in ops:
        if (op.path, op.modified) not in seen:
            seen.add((op.path, op.modified))
            out.append(op)
    return out


# -- the shell command table ---------------------------------------------------------------------


class ShellRule(NamedTuple):
    """What a shell program does to the path arguments it is given (one row of
    ``SHELL_COMMANDS``)."""

    action: Literal["read", "modified", "deleted", "created", "moved", "copied"]
    """``read``: the files are read; ``moved``/``copied``: the last path is the destination
    (``mv`` also removes the first); anything else: every path is changed that way."""
    what: str
    """How the summary says it (``"edited (sed -i)"``)."""
    when: Callable[[list[str]], bool] | None = None
    """The flags it needs to apply (``sed`` edits only with ``-i``); ``None``: always."""
    skip_pattern: bool = False
    """The first argument is a pattern, not a file (``grep PATTERN FILE``)."""


def _flag(*names: str) -> Callable[[list[str]], bool]:
    """A ``ShellRule.when`` true when an argument is one of ``names`` or starts with one that
    ends in ``*`` (``-i*``: ``-i``, ``-i.bak``)."""
    exact = {n for n in names if not n.endswith("*")}
    prefixes = tuple(n[:-1] for n in names if n.endswith("*"))
    return lambda args: any(a in exact or (prefixes and a.startswith(prefixes)) for a in args)


def _perl_in_place(args: list[str]) -> bool:
    return any(re.match(r"^-\w*i", a) for a in args)


_READ_PROGRAMS = ("cat", "head", "tail", "less", "more", "wc", "nl", "diff", "awk", "bat")
_FORMATTER_PROGRAMS = ("black", "isort", "autopep8", "prettier", "gofmt", "rustfmt", "yapf")

SHELL_COMMANDS: dict[str, tuple[ShellRule, ...]] = {
    **{p: (ShellRule("read", f"read ({p})"),) for p in _READ_PROGRAMS},
    "grep": (ShellRule("read", "read (grep)", skip_pattern=True),),
    "rg": (ShellRule("read", "read (rg)", skip_pattern=True),),
    "sed": (
        ShellRule("modified", "edited (sed -i)", _flag("-i*", "--in-place*")),
        ShellRule("read", "read (sed)"),
    ),
    "perl": (ShellRule("modified", "edited (perl -i)", _perl_in_place),),
    "rm": (ShellRule("deleted", "deleted"),),
    "unlink": (ShellRule("deleted", "deleted"),),
    "touch": (ShellRule("created", "created (touch)"),),
    "tee": (ShellRule("modified", "written (tee)"),),
    "truncate": (ShellRule("modified", "truncate"),),
    "chmod": (ShellRule("modified", "chmod"),),
    "mv": (ShellRule("moved", "moved"),),
    "cp": (ShellRule("copied", "copied"),),
    "install": (ShellRule("copied", "copied (install)"),),
    **{p: (ShellRule("modified", f"reformatted ({p})"),) for p in _FORMATTER_PROGRAMS},
    "ruff": (ShellRule("modified", "reformatted (ruff)", _flag("--fix", "format")),),
    "git checkout": (ShellRule("modified", "reverted (git checkout)", _flag("--")),),
    "git restore": (ShellRule("modified", "reverted (git checkout)", _flag("--")),),
    "git mv": (ShellRule("moved", "git mv"),),
    "git rm": (ShellRule("deleted", "git rm"),),
}
"""Shell programs (and ``git`` subcommands) by name → what they do to their path arguments;
the first row whose ``when`` holds applies. A program not here touches no file the digest
records (its redirections still do: ``cmd > f``)."""

_PREFIX_PROGRAMS = ("sudo", "time", "command", "exec", "env", "nice", "nohup", "xargs")
_REDIRECTIONS = ("<", ">", ">>", "1>", "2>", "&>", "1>>", "2>>")


def _part_ops(part: str) -> list[FileOp]:
    """The files one simple command (no ``&&``, ``|``, ``;``) reads and modifies: its
    redirections, a ``python -c`` script's writes, an editor command's file, and its path
    arguments as its ``SHELL_COMMANDS`` row says."""
    tokens = _command_tokens(part)
    if not tokens:
        return []
    program, rest = tokens[0].rsplit("/", 1)[-1], tokens[1:]
    targets = _redirect_targets(rest)
    verb = "appended (>>)" if ">>" in part else "written (>)"
    ops = [FileOp(t, True, verb) for t in targets]
    paths = [t for t in rest if looks_like_path(t) and t not in targets and not t.startswith(">")]
    special = _SPECIAL_PROGRAMS.get(program)
    found = special(program, rest, paths) if special is not None else None
    if found is not None:
        return ops + found
    rule = _rule_for(program, rest)
    if rule is None or not paths:
        return ops
    return ops + _rule_ops(rule, program, rest, paths)


def _command_tokens(part: str) -> list[str]:
    """A simple command's words, without its environment assignments and prefix programs
    (``FOO=1 sudo sed …`` → ``sed …``)."""
    try:
        tokens = shlex.split(part)
    except ValueError:
        tokens = part.split()
    while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
        tokens = tokens[1:]  # environment assignments
    while tokens and tokens[0] in _PREFIX_PROGRAMS:
        tokens = tokens[1:]
    return tokens


def _redirect_targets(rest: list[str]) -> list[str]:
    """The files a command's output redirections write (``> f``, ``>>f``, ``2> f``; not
    ``/dev/null`` or a descriptor)."""
    targets: list[str] = []
    for index, token in enumerate(rest):
        if token in _REDIRECTIONS and index + 1 < len(rest):
            if token != "<":
                targets.append(rest[index + 1])
        elif (match := _REDIRECT.match(token)) and not token.startswith(">&"):
            targets.append(match.group("path"))
    return [t for t in targets if t not in ("/dev/null", "&1", "&2") and not t.startswith("&")]


def _python_c(_program: str, rest: list[str], _paths: list[str]) -> list[FileOp] | None:
    """``python -c SCRIPT``: the files the script writes."""
    return _script_ops(rest[1]) if rest[:1] == ["-c"] and len(rest) > 1 else None


def _editor(program: str, rest: list[str], paths: list[str]) -> list[FileOp] | None:
    """An editor command line (``str_replace_editor view f``): its first file, read or
    modified as its subcommand says."""
    if not paths:
        return None
    action = rest[0] if rest and rest[0] in _EDITOR_COMMANDS else program
    modified = action != "view"
    return [FileOp(paths[0], modified, action if modified else "read")]


_SPECIAL_PROGRAMS: dict[str, Callable[[str, list[str], list[str]], list[FileOp] | None]] = {
    "python": _python_c,
    "python3": _python_c,
    "str_replace_editor": _editor,
    "edit_file": _editor,
    "create": _editor,
}
"""Programs read by their own function (``None``: read by ``SHELL_COMMANDS`` instead)."""


def _rule_for(program: str, rest: list[str]) -> ShellRule | None:
    """The ``SHELL_COMMANDS`` row that applies: a ``git`` subcommand's before the program's,
    the first whose flags hold."""
    rules = SHELL_COMMANDS.get(f"{program} {rest[0]}") if rest else None
    rules = rules or SHELL_COMMANDS.get(program, ())
    return next((r for r in rules if r.when is None or r.when(rest)), None)


def _rule_ops(rule: ShellRule, program: str, rest: list[str], paths: list[str]) -> list[FileOp]:
    """What ``rule`` does to the path arguments ``paths`` of ``program rest``."""
    if rule.skip_pattern and not rest[0].startswith("-") and rest[0] == paths[0]:
        paths = paths[1:]  # the pattern
    if program == "perl":
        paths = [p for p in paths if not p.startswith("s/")]
    if rule.action in ("moved", "copied") and len(paths) >= 2:
        source, target = paths[0], paths[-1]
        ops = [FileOp(target, True, f"{rule.what} from {source}")]
        if rule.action == "moved":
            ops.append(FileOp(source, True, f"moved to {target}"))
        return ops
    if rule.action in ("moved", "copied"):
        return [FileOp(p, True, program) for p in paths]
    return [FileOp(p, rule.action != "read", rule.what) for p in paths]


# -- text actions (ReAct, mini-swe-agent): the command is in the assistant's text ----------------

_FENCED_ACTION = re.compile(r"```(?:bash|sh|shell|console|zsh)[ \t]*\n(.*?)\n?```", re.S)
_ACTION_LINE = re.compile(
    r"^Action:\s*(?P<tool>[\w.-]+)(?:\[(?P<bracket>.*)\])?[ \t]*\n?"
    r"(?:Action Input:\s*(?P<input>.*?))?(?=\n(?:Observation|Thought|Action):|\Z)",
    re.S | re.M | re.I,
)


def text_actions(text: str) -> list[tuple[str, dict[str, object]]]:
    """``(tool, arguments)`` of the actions an assistant wrote as text: fenced ``bash`` blocks
    (mini-swe-agent), ``Action: bash`` / ``Action Input: …`` (ReAct), ``Action: tool[input]``."""
    actions: list[tuple[str, dict[str, object]]] = []
    for block in _FENCED_ACTION.findall(text):
        if block.strip():
            actions.append(("bash", {"command": block.strip()}))
    for match in _ACTION_LINE.finditer(text):
        tool = match.group("tool")
        raw = (match.group("input") or match.group("bracket") or "").strip()
        if raw.startswith("```"):
            raw = re.sub(r"^```\w*\n?|\n?```$", "", raw).strip()
        if not raw:
            continue
        args: dict[str, object]
        try:
            parsed = json.loads(raw)
            args = parsed if isinstance(parsed, dict) else {"input": raw}
        except (ValueError, RecursionError):
            args = {"command": raw} if _SHELL_TOOL.search(tool) else {"input": raw}
            if not _SHELL_TOOL.search(tool) and looks_like_path(raw):
                args = {"path": raw}
        actions.append((tool, args))
    return actions


def without_text_actions(text: str) -> str:
    """``text`` without its ``Action: …`` / ``Action Input: …`` blocks (each up to the next
    ``Observation:``, ``Thought:`` or ``Action:`` line)."""
    if "Action" not in text:
        return text
    text = _ACTION_LINE.sub(" ", text)
    return re.sub(r"^Action(?: Input)?:.*$", " ", text, flags=re.M)


_REPLACE_CALL = re.compile(
    r"""\.replace\(\s*(['"])(.*?)(?<!\\)\1\s*,\s*(['"])(.*?)(?<!\\)\3""", re.S
)
_SED_SUB = re.compile(r"""(?:^|\s)['"]?s([/|#,])(.+?)\1(.*?)\1""")


def shell_edits(command: str) -> list[tuple[str, str]]:
    """``(old text, new text)`` pairs a shell command writes: a heredoc's body (new text only),
    ``sed``/``perl`` ``s/old/new/``, a script's ``.replace('old', 'new')``, a diff's ``-``/``+``
    lines. Used to read settings changed in config files through the shell."""
    edits: list[tuple[str, str]] = []
    for match in _HEREDOC.finditer(command):
        body = match.group(4)
        minus = [
            ln[1:] for ln in body.splitlines() if ln.startswith("-") and not ln.startswith("---")
        ]
        plus = [
            ln[1:] for ln in body.splitlines() if ln.startswith("+") and not ln.startswith("+++")
        ]
        script = re.search(r"^\s*(?:import|from)\s|\.replace\(|\bopen\(", body, re.M)
        if minus or plus:
            edits.append(("\n".join(minus), "\n".join(plus)))
        elif not script:  # a file's whole new text, not a program that edits one
            edits.append(("", body))
        for call in _REPLACE_CALL.finditer(body):
            edits.append((_unescape(call.group(2)), _unescape(call.group(4))))
    if not edits:
        for call in _REPLACE_CALL.finditer(command):
            edits.append((_unescape(call.group(2)), _unescape(call.group(4))))
        for sub in _SED_SUB.finditer(command):
            edits.append((sub.group(2).replace("\\", ""), sub.group(3).replace("\\", "")))
    return edits


def _unescape(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\'", "'").replace('\\"', '"')
