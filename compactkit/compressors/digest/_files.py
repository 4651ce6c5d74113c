"""Files and commands in tool calls: what the digest records as the artifact trail.

Structured tools are read from their arguments (``path``/``file``/``filename``…, editor
commands, ``old_str``/``new_str`` edits, whole-file writes, ``apply_patch`` patches); shell tools
from their command line (common coreutils, ``sed -i``, redirections, ``git checkout --``), read
by ``_shell_files``.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from collections.abc import Iterator
from typing import NamedTuple

from compactkit.compressors import _facts_prose as facts_prose
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
            key != "command" or _SHELL_TOOL.search(name) or "path" not in args
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


# -- text actions (ReAct, mini-swe-agent): the command is in the assistant's text ----------------

_FENCED_ACTION = re.compile(r"```(?:bash|sh|shell|console|zsh)[ \t]*\n(.*?)\n?```", re.S)
_ACTION_LINE = re.compile(
    r"^Action:\s*(?P<tool>[\w.-]+)(?:\[(?P<bracket>.*)\])?[ \t]*\n?"
    r"(?:Action Input:\s*(?P<input>.*?))?(?=\n(?:Observation|Thought|Action):|\Z)",
    re.S | re.M | re.I,
)


# OpenHands without native function calling: ``<function=NAME>`` then one
# ``<parameter=KEY>VALUE</parameter>`` per argument, up to ``</function>``.
_FUNCTION_HEAD = re.compile(r"<function=([^>\n]+)>")
_PARAMETER_HEAD = re.compile(r"\s*<parameter=([^>\n]+)>")
_FUNCTION_END = "</function>"
_CALL_WRAPPER = ("<tool_call>", "</tool_call>")


def function_call(text: str) -> tuple[int, tuple[str, dict[str, object]]] | None:
    """The call an assistant's message ends with in OpenHands' text format, and where it
    starts: ``<function=NAME>``, nothing but ``<parameter=KEY>VALUE</parameter>`` arguments,
    then ``</function>`` and the message's end (the model stops there), perhaps wrapped in
    ``<tool_call>`` … ``</tool_call>`` (Qwen3-Coder's template). Its generation stops at
    ``</function``, so the closing tag may be missing or cut short; then at least one argument
    must be there. ``None`` when the message does not end with such a call (an example of the
    format in prose, followed by more prose, is not a call).

    Cost model: at most two candidate starts (the first ``<function=`` and the last), each
    read once to the end: linear in the text."""
    first = text.find("<function=")
    if first < 0:
        return None
    body_end = len(text.rstrip())
    if text.endswith(_CALL_WRAPPER[1], 0, body_end):
        body_end = len(text[: body_end - len(_CALL_WRAPPER[1])].rstrip())
    closed = text.endswith(_FUNCTION_END, 0, body_end)
    if closed:
        body_end -= len(_FUNCTION_END)
    for start in dict.fromkeys((first, text.rfind("<function=", 0, body_end))):
        if start < 0:
            continue
        head = _FUNCTION_HEAD.match(text, start)
        if head is None:
            continue
        arguments: dict[str, object] = {}
        at = head.end()
        while (parameter := _PARAMETER_HEAD.match(text, at, body_end)) is not None:
            close = text.find("</parameter>", parameter.end(), body_end)
            if close < 0:
                break
            arguments[parameter.group(1).strip()] = text[parameter.end() : close].strip()
            at = close + len("</parameter>")
        rest = text[at:body_end].strip()
        if closed and rest:
            continue
        if not closed and (not arguments or not _FUNCTION_END.startswith(rest)):
            continue  # (a rest of "</" or "</func": the generation cut inside the closing tag)
        before = text[:start].rstrip()
        if before.endswith(_CALL_WRAPPER[0]):
            start = len(before) - len(_CALL_WRAPPER[0])
        return start, (head.group(1).strip(), arguments)
    return None


def text_actions(text: str) -> list[tuple[str, dict[str, object]]]:
    """``(tool, arguments)`` of the actions an assistant wrote as text: fenced ``bash`` blocks
    (mini-swe-agent), ``Action: bash`` / ``Action Input: …`` (ReAct), ``Action: tool[input]``;
    or the one ``<function=tool>`` call with its ``<parameter=name>`` values the message ends
    with (OpenHands without native function calling: ``EXECUTION RESULT of [tool]:`` answers
    it; only that call runs, so a fenced block in the message, an argument's text included, is
    not read as a command)."""
    if "<function=" in text:
        call = function_call(text)
        if call is not None:
            return [call[1]]
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


_FENCE_LINE = re.compile(r"^```(\S*)[ \t]*$", re.M)


def bare_blocks(text: str) -> list[tuple[str, dict[str, object]]]:
    """``[("bash", {"command": …})]`` for the command SWE-agent reads from an assistant's
    text, else ``[]``. Not an action by itself (an assistant also fences code it shows): only
    once a shell's status answers it (``facts_prose.is_observation``).

    SWE-agent's two text formats, as its own parsers read them: with ``<command>`` tags, what
    lies between the last ``<command>`` and the last ``</command>``; else the last outermost
    fenced block, when it has no language (fences at a line's start; one with a language
    opens a nested block, a bare one closes the innermost)."""
    tagged = tagged_command(text)
    if tagged is not None:
        return [("bash", {"command": tagged[2]})] if tagged[2] else []
    if "```" not in text:
        return []
    opened: list[tuple[int, str]] = []  # where each open block's text starts, its language
    last: tuple[int, int, str] | None = None
    for fence in _FENCE_LINE.finditer(text):
        language = fence.group(1)
        if not opened or language:
            opened.append((fence.end(), language))
            continue
        start, language = opened.pop()
        if not opened:
            last = (start, fence.start(), language)
    if last is None or last[2]:
        return []
    block = text[last[0] : last[1]].strip()
    return [("bash", {"command": block})] if block else []


def tagged_command(text: str) -> tuple[int, int, str] | None:
    """Where SWE-agent's XML format puts an assistant's command (``(start, end)`` of the tags
    and what they hold), as its parser reads it: between the last ``<command>`` and the last
    ``</command>``. Only when the message ends with ``</command>``, or both tags stand on lines
    of their own in a message with no fenced block or ``<function=`` call (then the thought goes
    on after the command); ``None`` for any other message (prose that names the tags inline and
    goes on is not a command, nor are tags a fenced heredoc writes into an XML file)."""
    if "<command>" not in text:
        return None
    stripped = len(text.rstrip())
    ends = text.endswith("</command>", 0, stripped)
    close = stripped - len("</command>") if ends else text.rfind("</command>")
    start = text.rfind("<command>", 0, close) if close > 0 else -1
    if start < 0:
        return None
    end = close + len("</command>")
    if not ends and not (
        (start == 0 or text[start - 1] == "\n")
        and text[close - 1] == "\n"
        and text.startswith("\n", end)
        and "```" not in text  # (tags on lines of their own inside a heredoc or a file's text)
        and "<function=" not in text
    ):
        return None
    return start, end, text[start + len("<command>") : close].strip()


def command_thought(text: str, tagged: tuple[int, int, str]) -> str:
    """``text`` without its ``tagged`` command (``tagged_command``): SWE-agent's thought."""
    start, end, _ = tagged
    return text[:start] + text[end:] if end < len(text.rstrip()) else text[:start]


def answered_by(actions: list[tuple[str, dict[str, object]]], text: str) -> bool:
    """Whether the user-role ``text`` is the output of ``actions``, the bare fenced command of
    the assistant message before it (``bare_blocks``: SWE-agent): it ends with a shell's
    status lines, and it is not the next task after ``submit`` (a submission ends the episode,
    unless it is answered in one line: "Wrong flag!", and the episode goes on)."""
    if not actions or not facts_prose.is_observation(text, after_action=True):
        return False
    command = str(actions[-1][1].get("command", ""))
    if command.split(None, 1)[:1] != ["submit"]:
        return True
    return "\n" not in facts_prose.observation_body(text).strip()


_LINE_RANGE = re.compile(r"\d+:\d+")


def swe_agent_ops(command: str, open_file: str | None) -> tuple[FileOp, ...]:
    """What SWE-agent's own commands do to files: ``open f [line]`` reads ``f``; ``edit a:b``
    (the new lines follow it) edits the file open when it ran (``open_file``, from the status
    lines before it)."""
    words = command.split(None, 2)
    if len(words) < 2:
        return ()
    if words[0] == "open" and looks_like_path(words[1].strip("\"'")):
        return (FileOp(words[1].strip("\"'"), False, "read"),)
    if words[0] == "edit" and open_file is not None and _LINE_RANGE.fullmatch(words[1]):
        return (FileOp(open_file, True, f"edited lines {words[1].replace(':', '-')}"),)
    return ()


def without_text_actions(text: str) -> str:
    """``text`` without its ``Action: …`` / ``Action Input: …`` blocks (each up to the next
    ``Observation:``, ``Thought:`` or ``Action:`` line), or without the ``<function=…>`` call it
    ends with (``function_call``)."""
    if "<function=" in text:
        call = function_call(text)
        if call is not None:
            return text[: call[0]]
    if "Action" not in text:
        return text
    text = _ACTION_LINE.sub(" ", text)
    return re.sub(r"^Action(?: Input)?:.*$", " ", text, flags=re.M)
