"""Files a shell command touches: what the digest records of a shell tool's command line.

``shell_file_ops`` reads a command line (common coreutils by the ``SHELL_COMMANDS`` table,
``sed -i``/``perl -pi``, redirections, heredocs, patches applied through the shell, scripts run
through ``python -c``/``python - <<EOF`` that write files), ``split_commands`` splits it into
simple commands, and ``shell_edits`` reads the text it writes into a file. They are separate from
``_files`` (which reads structured tool calls' arguments) because parsing a shell line is a
concern of its own, with its own table of programs; both make the same ``FileOp``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Literal, NamedTuple

from compactkit.compressors.digest._files import EDITOR_COMMANDS, FileOp, looks_like_path, patch_ops
from compactkit.compressors.digest._shell_words import DOUBLE_QUOTED, shell_words

_SCRIPTS = re.compile(r"^(?:python[\d.]*|node|ruby|perl|bash|sh)$")
_PATCHERS = re.compile(r"^(?:patch|apply_patch|applypatch)$")
_HEREDOC = re.compile(
    r"<<-?[ \t]*(['\"]?)([A-Za-z_][\w-]*)\1([^\n]*)\n(.*?)(?:\n[ \t]*\2[ \t]*(?=\n|$)|\Z)", re.S
)
# What ``_HEREDOC`` matches, read in two steps: its opening ``<<EOF`` line, then the first line
# that holds only its delimiter (or the end of the command). The lazy body of the one pattern is
# tried at every character of the body (a script of thousands); the closing line's pattern is
# tried only at each line break.
_HEREDOC_OPENING = re.compile(r"<<-?[ \t]*(['\"]?)([A-Za-z_][\w-]*)\1([^\n]*)\n")
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


class Heredoc(NamedTuple):
    """One heredoc of a command line (``_HEREDOC``'s match)."""

    start: int
    """Where its ``<<`` is."""
    end: int
    """Where what follows its closing line (or the command's end) starts."""
    delimiter: str
    rest: str
    """What follows the delimiter on its opening line."""
    body: str


def heredocs(command: str) -> list[Heredoc]:
    """The heredocs of a command line, in order: ``_HEREDOC.finditer(command)``.

    Its opening line is found by ``_HEREDOC_OPENING`` (the pattern's own start, which then
    always matches: a body ends at a closing line, else at ``\\Z``), and its body ends at the
    first closing line after it, found by a pattern of the delimiter
    (tests/compressors/test_shell_heredocs.py: the same spans and groups as the pattern).
    """
    found: list[Heredoc] = []
    if "<<" not in command:
        return found
    position = 0
    while (opening := _HEREDOC_OPENING.search(command, position)) is not None:
        delimiter = opening.group(2)
        closing = _closing_line(delimiter).search(command, opening.end())
        body_end = len(command) if closing is None else closing.start()
        position = len(command) if closing is None else closing.end()
        body = command[opening.end() : body_end]
        found.append(Heredoc(opening.start(), position, delimiter, opening.group(3), body))
    return found


@functools.lru_cache(maxsize=256)
def _closing_line(delimiter: str) -> re.Pattern[str]:
    """``_HEREDOC``'s closing line for ``delimiter``: a line break, then the delimiter alone
    on its line (spaces and tabs around it), before a line break or the end."""
    return re.compile(rf"\n[ \t]*{re.escape(delimiter)}[ \t]*(?=\n|$)")


def shell_file_ops(command: str) -> list[FileOp]:
    """Files a shell command reads or modifies: common coreutils, ``sed -i``/``perl -pi``,
    redirections (``> f``, ``>> f``, ``>f``), heredocs (``cat > f <<EOF``), patches applied
    through ``git apply``/``patch``/``apply_patch`` with the diff inline, and scripts run
    through ``python - <<EOF`` / ``python -c`` that write files."""
    ops: list[FileOp] = []
    bodies: list[tuple[str, str]] = []  # (the line that opened the heredoc, its body)
    pieces: list[str] = []  # the command with each heredoc's body lifted out
    done = 0
    for heredoc in heredocs(command):
        line_start = command.rfind("\n", 0, heredoc.start) + 1
        bodies.append((command[line_start : heredoc.start], heredoc.body))
        pieces += [command[done : heredoc.start], f"<<{heredoc.delimiter}{heredoc.rest}\n"]
        done = heredoc.end
    text = "".join([*pieces, command[done:]]) if bodies else command
    for intro, body in bodies:
        program = _program(intro)
        if _PATCHERS.match(program) or re.search(r"\bgit\s+apply\b", intro):
            ops += list(patch_ops(body))
        elif _SCRIPTS.match(program):
            ops += _script_ops(body)
    for part in split_commands(text):
        ops += _part_ops(part)
    return _unique(ops)


_SEPARATOR = re.compile(r"&&|\|\||[;|\n]|(?<![<>&\d])&(?![>&])")
_QUOTED = re.compile(rf"""'[^']*'|{DOUBLE_QUOTED}|\\.""", re.S)


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


def _program(line: str) -> str:
    for part in reversed(re.split(r"&&|\|\||;|\|", line)):
        tokens = part.split()
        while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
            tokens = tokens[1:]
        if tokens:
            return tokens[0].rsplit("/", 1)[-1]
    return ""


# What every ``_SCRIPT_WRITES`` match holds (one per alternative): a script holding none writes
# no file this way, and is not scanned (its names make the patterns try most positions).
_SCRIPT_WRITE_WORDS = ("open(", "Path(", "shutil.", "os.", "writeFileSync(")


def _script_ops(script: str) -> list[FileOp]:
    ops: list[FileOp] = []
    if not any(word in script for word in _SCRIPT_WRITE_WORDS):
        return ops
    variables = (  # every ``_SCRIPT_PATH_VAR`` match holds "Path("
        {m.group("var"): m.group("path") for m in _SCRIPT_PATH_VAR.finditer(script)}
        if "Path(" in script
        else {}
    )
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


@functools.lru_cache(maxsize=4096)
def _part_ops(part: str) -> tuple[FileOp, ...]:
    """The files one simple command (no ``&&``, ``|``, ``;``) reads and modifies (see
    ``_simple_ops``), remembered per command: a session runs the same few again and again
    (``cd /testbed``, ``head -20``, ``cat > test_fix.py``). Bounded: 4,096."""
    return tuple(_simple_ops(part))


def _simple_ops(part: str) -> list[FileOp]:
    """The files one simple command reads and modifies: its redirections, a ``python -c``
    script's writes, an editor command's file, and its path arguments as its
    ``SHELL_COMMANDS`` row says."""
    tokens = _command_tokens(part)
    if not tokens:
        return []
    program, rest = tokens[0].rsplit("/", 1)[-1], tokens[1:]
    targets = _redirect_targets(rest)
    verb = "appended (>>)" if ">>" in part else "written (>)"
    ops = [FileOp(t, True, verb) for t in targets]
    special = _SPECIAL_PROGRAMS.get(program)
    rule = _rule_for(program, rest) if special is None else None
    if special is None and rule is None:
        return ops  # (most commands: ``cd``, ``ls``, ``python x.py``: their words are not read)
    paths = [t for t in rest if looks_like_path(t) and t not in targets and not t.startswith(">")]
    if special is not None:
        found = special(program, rest, paths)
        if found is not None:
            return ops + found
        rule = _rule_for(program, rest)
    if rule is None or not paths:
        return ops
    return ops + _rule_ops(rule, program, rest, paths)


def _command_tokens(part: str) -> list[str]:
    """A simple command's words, without its environment assignments and prefix programs
    (``FOO=1 sudo sed …`` → ``sed …``)."""
    tokens = shell_words(part)  # shlex.split's words
    if tokens is None:  # (where shlex.split raises: an unclosed quote)
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
    action = rest[0] if rest and rest[0] in EDITOR_COMMANDS else program
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


# -- edits written through the shell ------------------------------------------------------------

_REPLACE_CALL = re.compile(
    r"""\.replace\(\s*(['"])(.*?)(?<!\\)\1\s*,\s*(['"])(.*?)(?<!\\)\3""", re.S
)
_SED_SUB = re.compile(r"""(?:^|\s)['"]?s([/|#,])(.+?)\1(.*?)\1""")


def shell_edits(command: str) -> list[tuple[str, str]]:
    """``(old text, new text)`` pairs a shell command writes: a heredoc's body (new text only),
    ``sed``/``perl`` ``s/old/new/``, a script's ``.replace('old', 'new')``, a diff's ``-``/``+``
    lines. Used to read settings changed in config files through the shell."""
    edits: list[tuple[str, str]] = []
    for heredoc in heredocs(command):
        body = heredoc.body
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
