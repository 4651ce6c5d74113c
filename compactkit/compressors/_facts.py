"""Exact facts in conversation items: the deterministic extractors behind the digest.

Each function reads text or one item and returns verbatim fragments; none of them paraphrases.
They favour recall on the fact classes LLM summaries lose most often (Factory's artifact trail,
"Lost in Compaction"): file paths and what was done to them, commands and their outcome, error
strings, identifiers, user constraints and values that changed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

_WS = re.compile(r"\s+")


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = _WS.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def code(text: str, limit: int = 120) -> str:
    """``text`` clipped and quoted as Markdown inline code."""
    return "`" + clip(text, limit).replace("`", "'") + "`"


# -- errors and outcomes ---------------------------------------------------------------------

_ERROR_LINE = re.compile(
    r"""^(?:
        (?:FAILED|ERROR)\ \S.*                              # pytest short summary
      | error(?:\[E\d+\])?:\ .+                             # rustc, generic
      | \S+:\d+(?::\d+)?:\ (?:error|fatal\ error):\ .+      # mypy, gcc, tsc
      | (?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception):\ ?.*      # an exception line
      | (?:Error|ERROR|fatal|FATAL|npm\ ERR!):?\ .+         # Error: …, fatal: …
      | .*(?:command\ not\ found|No\ such\ file\ or\ directory|Permission\ denied).*
    )$""",
    re.VERBOSE,
)
_TRACEBACK = "Traceback (most recent call last):"
_EXIT = re.compile(
    r"(?:exit code|exit status|exited with(?: code| status)?|returncode|return code|exit_code)"
    r"[\s:=]+(-?\d+)",
    re.IGNORECASE,
)
_PYTEST_SUMMARY = re.compile(r"^=+ (.*\b(?:passed|failed|error|errors|skipped)\b.*?) in [\d.]+s")


def errors_in(text: str, limit: int = 5) -> list[str]:
    """Error strings in ``text``, verbatim (one line each), in order, at most ``limit``.

    A Python traceback contributes its final exception line; pytest its FAILED/ERROR lines;
    compilers and type checkers their ``error:`` lines; shells their ``Error:``/``fatal:``
    lines and "command not found"-style failures.
    """
    found: list[str] = []
    lines = text.splitlines()
    in_traceback = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(_TRACEBACK):
            in_traceback = True
            continue
        if in_traceback:
            if not line[:1].isspace() and stripped and not stripped.startswith("During handling"):
                in_traceback = False
                if stripped not in found:
                    found.append(clip(stripped, 240))
            continue
        if _ERROR_LINE.match(stripped) and clip(stripped, 240) not in found:
            found.append(clip(stripped, 240))
    return found[:limit] if len(found) <= limit else found[: limit - 1] + found[-1:]


def last_error(text: str) -> str | None:
    """The last error string of ``text`` (see ``errors_in``), clipped to 160 characters."""
    errors = errors_in(text, limit=50)
    return clip(errors[-1], 160) if errors else None


def outcome_of(text: str) -> tuple[str, bool | None]:
    """A one-line outcome of a command's output, and whether it succeeded (``None``: unknown).

    From the exit code, a pytest summary line and the last error line, whichever are present.
    """
    parts: list[str] = []
    ok: bool | None = None
    exits = list(_EXIT.finditer(text))
    exit_match = exits[-1] if exits else None  # the last one: a tool's own trailer
    if exit_match:
        code_value = int(exit_match.group(1))
        ok = code_value == 0
        parts.append(f"exit {code_value}")
    summary = next((m.group(1) for m in map(_PYTEST_SUMMARY.match, text.splitlines()) if m), None)
    if summary:
        parts.append(summary)
        if ok is None:
            ok = not re.search(r"\b(?:failed|error|errors)\b", summary)
    error = last_error(text)
    if error and (ok is not True or not summary):
        parts.append(error)
        ok = False if ok is None else ok
    if not parts:
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        parts.append(f"output: {clip(first, 100)}" if first else "no output")
    return "; ".join(parts), ok


# -- identifiers -----------------------------------------------------------------------------

_URL = re.compile(r"https?://[^\s<>\"'`)\]}]+")
_SHA = re.compile(r"(?<![\w/.-])(?<!0x)[0-9a-f]{7,40}(?![\w-])")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_TICKET = re.compile(r"\b([A-Z][A-Z0-9]{1,9})-(\d{1,6})\b")
_ISSUE = re.compile(r"(?:(?<=\s)|^)#(\d{2,6})\b|\b(?:issue|PR|pull request) #?(\d{1,6})\b", re.I)
_PREFIXED = re.compile(
    r"\b(?:req|run|msg|resp|job|build|deploy|order|user|usr|cus|evt|txn|sess|trace|span|inc)"
    r"[_-](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{4,}\b"
)
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:[-+][\w.]+)?(?![\w.])")
_GIT_COMMIT = re.compile(r"^\[([\w./-]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
_NOT_TICKETS = {"UTF", "ISO", "SHA", "HTTP", "CP", "TLS", "SSL", "MD", "AES", "GPT", "X"}


def identifiers_in(text: str, *, prose: bool, limit: int = 8) -> list[tuple[str, str]]:
    """``(identifier, kind)`` pairs in ``text``, in order, without duplicates, at most ``limit``.

    Kinds: ``url``, ``commit`` (git's ``[branch sha] message`` lines, with the message),
    ``sha``, ``uuid``, ``ticket``, ``issue``, ``id``, ``version``. Issues and versions are only
    taken from ``prose`` (messages and call arguments), where they are rarely noise.
    """
    found: dict[str, str] = {}
    for branch, sha, message in _GIT_COMMIT.findall(text):
        found[sha] = f"commit on {branch}: {clip(message, 80)}"
    urls = [url.rstrip(".,;:!?") for url in _URL.findall(text)]
    for url in urls:
        found.setdefault(url, "url")
    inside_urls = " ".join(urls)
    for uuid in _UUID.findall(text):
        found.setdefault(uuid, "uuid")
    for sha in _SHA.findall(text):
        uuids = [u for u, kind in found.items() if kind == "uuid"]
        if (
            re.search(r"\d", sha)
            and re.search(r"[a-f]", sha)
            and sha not in inside_urls
            and not any(sha in u for u in uuids)
        ):
            found.setdefault(sha, "sha")
    for prefix, number in _TICKET.findall(text):
        if prefix not in _NOT_TICKETS:
            found.setdefault(f"{prefix}-{number}", "ticket")
    for match in _PREFIXED.finditer(text):
        found.setdefault(match.group(0), "id")
    if prose:
        for hashed, named in _ISSUE.findall(text):
            found.setdefault(f"#{hashed or named}", "issue")
        for version in _VERSION.findall(text):
            if version not in inside_urls:
                found.setdefault(version, "version")
    return list(found.items())[:limit]


# -- values ----------------------------------------------------------------------------------

_VALUE = (
    r"(?:-?\d[\d_]*(?:\.\d+)?(?:\s?(?:%|ms|s|sec|seconds|minutes|min|h|hours|KB|MB|GB)\b)?"
    r"|true|false|True|False|none|None|null"
    r"|`[^`\n()]{1,40}`|\"[^\"\n]{1,60}\"|'[^'\n]{1,60}')"
)
_NAME = r"`?([A-Za-z_][\w.-]{1,60}?)`?"
_SET_PHRASE = re.compile(
    r"\b(?:set|change|bump|raise|lower|increase|decrease|reduce|update|cap|limit)\s+"
    rf"(?:the\s+)?{_NAME}\s+(?:from\s+(?P<old>{_VALUE})\s+)?(?:to|at)\s+(?P<new>{_VALUE})"
    r"(?!\w|\.\d)",
    re.IGNORECASE,
)
# `name = value` / `name: value` ending its clause (so "x: 3 requests" is not a setting).
_ASSIGNMENT = re.compile(
    rf"(?:^|(?<=[\s(,]))`?([A-Za-z_][\w.-]*)`?\s?(?:=|:)\s?({_VALUE})"
    r"(?=\s*$|[,;)]|\.(?:\s|$)|\s\()"
)
_CONFIG_LINE = re.compile(r"^\s*\"?([A-Za-z_][\w.-]*)\"?\s*[=:]\s*(.+?)\s*,?\s*$")
_PY_CONSTANT = re.compile(r"^([A-Z][A-Z0-9_]*)\s*(?::\s*[\w\[\], |]+)?\s*=\s*([^()\n]{1,60})$")
_STOP_NAMES = {"it", "this", "that", "them", "the", "value", "default", "http", "https", "e", "i"}
CONFIG_FILE = re.compile(
    r"(?:\.(?:toml|ini|cfg|conf|env|ya?ml|json|properties)|(?:^|/)(?:settings|config)\.py)$"
)


def _plain_name(name: str) -> bool:
    return name.lower() not in _STOP_NAMES and (
        "_" in name or "." in name or name.isupper() or any(c.isdigit() for c in name)
    )


def values_in_prose(text: str) -> list[tuple[str, str, str | None]]:
    """``(name, new value, old value or None)`` stated in prose: "set `retries` to 5", "change
    timeout from 10 to 30", "MAX_WORKERS = 8", "`pool_size: 4`". Fenced code is skipped."""
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    found: list[tuple[str, str, str | None]] = []
    for match in _SET_PHRASE.finditer(text):
        name = match.group(1)
        if name.lower() not in _STOP_NAMES:
            found.append((name, match.group("new").strip("`"), _strip(match.group("old"))))
    for line in text.splitlines():
        for name, value in _ASSIGNMENT.findall(line):
            quoted = f"`{name}`" in line
            if (quoted or _plain_name(name)) and not name.startswith(("http", "https")):
                found.append((name, value.strip("`"), None))
    return found


def _strip(value: str | None) -> str | None:
    return None if value is None else value.strip("`")


def config_values(text: str, path: str, limit: int = 12) -> list[tuple[str, str]]:
    """``(key, value)`` settings in a config file's text: ``key = value``/``key: value`` lines
    (TOML, INI, YAML, .env, JSON), or ``UPPER_CASE = value`` constants in a Python module."""
    found: list[tuple[str, str]] = []
    python = path.endswith(".py")
    for line in text.splitlines():
        if line.lstrip().startswith(("#", "//", ";", "[", "-")):
            continue
        match = _PY_CONSTANT.match(line.strip()) if python else _CONFIG_LINE.match(line)
        if not match:
            continue
        value = match.group(2).strip().rstrip(",")
        if len(value) <= 60 and value not in ("{", "[") and "(" not in value:
            found.append((match.group(1), value))
    return found[:limit]


# -- files and commands in tool calls --------------------------------------------------------

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
_READ_TOOL = re.compile(r"read|view|cat|open|show|get_?file|grep|search|find|glob|list|ls", re.I)
_LISTING_TOOL = re.compile(r"list_?dir|list_?files|^ls$|glob|tree", re.I)
_WRITE_TOOL = re.compile(
    r"write|edit|create|patch|replace|insert|append|delete|remove|move|rename|save|modify", re.I
)
_SHELL_TOOL = re.compile(r"shell|bash|terminal|exec|command|run|sh$|cmd|powershell", re.I)
_PATCH_FILE = re.compile(
    r"^\*\*\* (Update|Add|Delete) File: (.+)$|^\+\+\+ (?:b/)?(.+)$|^--- (?:a/)?(.+)$", re.M
)


@dataclass(frozen=True)
class FileOp:
    """One thing a call did to a file."""

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


def file_ops(name: str, args: dict[str, object]) -> list[FileOp]:
    """The file operations a structured (non-shell) tool call performs."""
    paths = [str(args[k]) for k in _PATH_KEYS if isinstance(args.get(k), str)]
    for key in _LIST_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            paths += [str(v) for v in value if isinstance(v, str)]
    action = next(
        (
            str(args[k])
            for k in ("command", "action", "operation", "mode")
            if isinstance(args.get(k), str)
            and str(args[k]) in _EDITOR_COMMANDS | {"read", "write", "append"}
        ),
        "",
    )
    patch = next(
        (args[k] for k in ("patch", "diff", "input") if isinstance(args.get(k), str)), None
    )
    if isinstance(patch, str) and ("*** " in patch or "+++ " in patch):
        return list(_patch_ops(patch))
    if _LISTING_TOOL.search(name):
        return []  # a directory listing reads no file
    paths = [p for p in paths if p.strip() and p not in (".", "..") and not p.endswith("/")]
    if not paths:
        return []
    old = next(
        (
            args[k]
            for k in ("old_str", "old_string", "old", "search", "find")
            if isinstance(args.get(k), str)
        ),
        None,
    )
    new = next(
        (
            args[k]
            for k in ("new_str", "new_string", "new", "replace", "replacement")
            if isinstance(args.get(k), str)
        ),
        None,
    )
    content = next(
        (
            args[k]
            for k in ("content", "file_text", "text", "contents", "data")
            if isinstance(args.get(k), str)
        ),
        None,
    )
    modified = bool(
        re.search(r"write|edit|create|replace|insert|delete|remove|undo|rename|append", action)
    ) or (not action and (bool(_WRITE_TOOL.search(name)) or old is not None or content is not None))
    if not modified and not _READ_TOOL.search(name) and not action:
        return []
    if not modified:
        what = "read"
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
        return [FileOp(p, False, what) for p in paths]
    if "delete" in action or (not action and re.search(r"delete|remove", name, re.I)):
        what = "deleted"
    elif isinstance(old, str) and isinstance(new, str):
        what = f"edited {code(old, 40)} → {code(new, 40)}"
    elif ("insert" in action and isinstance(new, str)) or isinstance(args.get("insert_line"), int):
        what = f"inserted {code(str(new or args.get('new_str') or ''), 60)} at line {args.get('insert_line')}"
    elif isinstance(content, str):
        lines = content.count("\n") + (0 if content.endswith("\n") else 1)
        what = f"{'created' if 'create' in (action or name.lower()) else 'wrote'} ({lines} lines)"
    else:
        what = action or name
    return [FileOp(p, True, what) for p in paths]


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


_SHELL_READ = {
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "wc",
    "nl",
    "grep",
    "rg",
    "diff",
    "sed",
    "awk",
    "bat",
}
_SHELL_WRITE = {"rm", "touch", "tee", "mv", "cp", "mkdir", "truncate", "chmod"}


def shell_file_ops(command: str) -> list[FileOp]:
    """Files a shell command reads or modifies (common coreutils, ``sed -i``, redirections)."""
    ops: list[FileOp] = []
    for part in re.split(r"&&|\|\||;|\|", command):
        try:
            tokens = shlex.split(part)
        except ValueError:
            tokens = part.split()
        while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
            tokens = tokens[1:]  # environment assignments
        if not tokens:
            continue
        program, rest = tokens[0].rsplit("/", 1)[-1], tokens[1:]
        targets = {
            rest[index + 1]
            for index, token in enumerate(rest[:-1])
            if token in (">", ">>", "1>", "2>", "&>")
        }
        ops += [FileOp(t, True, f"written by {code(part.strip(), 80)}") for t in sorted(targets)]
        paths = [t for t in rest if looks_like_path(t) and t not in targets]
        if (
            program in ("grep", "rg")
            and paths
            and not rest[0].startswith("-")
            and rest[0] == paths[0]
        ):
            paths = paths[1:]  # the pattern
        if program == "git" and rest[:1] in (["checkout"], ["restore"]) and "--" in rest:
            ops += [FileOp(p, True, "reverted (git checkout)") for p in paths]
        elif program == "sed" and any(t.startswith("-i") for t in rest):
            ops += [FileOp(p, True, f"edited by {code(part.strip(), 80)}") for p in paths]
        elif program in _SHELL_WRITE and paths:
            what = {"rm": "deleted", "touch": "created (touch)", "tee": "written (tee)"}
            if program in ("mv", "cp") and len(paths) >= 2:
                ops.append(
                    FileOp(
                        paths[-1],
                        True,
                        f"{'moved' if program == 'mv' else 'copied'} from {paths[0]}",
                    )
                )
                if program == "mv":
                    ops.append(FileOp(paths[0], True, f"moved to {paths[-1]}"))
            else:
                ops += [FileOp(p, True, what.get(program, f"{program}")) for p in paths]
        elif program in _SHELL_READ:
            ops += [FileOp(p, False, f"read ({program})") for p in paths]
    return ops


# -- sentences -------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(])|\n+")
CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|don't|do not|never|always|only|should|shouldn't|avoid|prefer|make sure"
    r"|ensure|keep|no longer|instead|please|need to|needs to|required?|without|can't|cannot"
    r"|use|stick to|at most|at least|no more than|not allowed|forbidden|no|not)\b",
    re.IGNORECASE,
)
DECISION = re.compile(
    r"\b(?:decid\w*|chose|choose|going with|go with|decision|instead of|because|abandon\w*"
    r"|switch\w* (?:to|back)|won't work|doesn't work|didn't work|does not work|root cause"
    r"|the (?:fix|problem|issue|cause|culprit) (?:is|was)|rather than|giving up on|dropping"
    r"|let's use|we'll use|I'll use|plan is|approach)\b",
    re.IGNORECASE,
)
NEXT_STEP = re.compile(r"\b(?:next|then I'll|I'll now|remaining|todo|still need|next step)\b", re.I)
TRIVIAL = re.compile(
    r"^(?:ok(?:ay)?|yes|yep|yeah|no|nope|thanks?(?: you)?|thx|continue|go on|go ahead|proceed"
    r"|sure|great|lgtm|done|next|cool|nice|perfect)[.! ]*$",
    re.IGNORECASE,
)


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def unwrap(text: str) -> str:
    """Hard-wrapped lines joined into paragraphs; list items and blank lines still break."""
    out: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if out and out[-1] and stripped and not _LIST_ITEM.match(line):
            out[-1] += " " + stripped
        else:
            out.append(stripped)
    return "\n".join(out).strip()


def list_item(paragraph: str) -> str | None:
    """The text of a Markdown list item (marker removed), or ``None`` for other paragraphs."""
    return _LIST_ITEM.sub("", paragraph).strip() if _LIST_ITEM.match(paragraph) else None


def paragraphs(text: str) -> list[str]:
    """``text``'s paragraphs with hard wraps joined (list items are paragraphs too)."""
    return [p for p in unwrap(text).splitlines() if p.strip()]


def sentences(text: str) -> list[str]:
    """``text`` split into sentences and list items, fenced code removed, hard wraps joined."""
    text = unwrap(re.sub(r"```.*?```", " ", text, flags=re.DOTALL))
    out = []
    for piece in _SENTENCE_END.split(text):
        piece = _LIST_ITEM.sub("", piece).strip().lstrip("#> ").strip()
        if len(piece) >= 8:
            out.append(piece)
    return out
