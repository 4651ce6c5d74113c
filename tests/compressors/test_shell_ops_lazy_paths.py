"""A simple shell command's files: its words are read as paths only for a program the digest
has a rule for (``SHELL_COMMANDS``) or reads by its own function (``python -c``, editors). The
files found are exactly those of the plain reading, which read every word first."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors.digest import _shell_files as shell_files
from compactkit.compressors.digest._files import FileOp, looks_like_path

PROPERTY = settings(deadline=None, max_examples=1500)


def _plain_simple_ops(part: str) -> list[FileOp]:
    """``_simple_ops`` as it read every command: every word checked for a path first."""
    tokens = shell_files._command_tokens(part)
    if not tokens:
        return []
    program, rest = tokens[0].rsplit("/", 1)[-1], tokens[1:]
    targets = shell_files._redirect_targets(rest)
    verb = "appended (>>)" if ">>" in part else "written (>)"
    ops = [FileOp(t, True, verb) for t in targets]
    paths = [t for t in rest if looks_like_path(t) and t not in targets and not t.startswith(">")]
    special = shell_files._SPECIAL_PROGRAMS.get(program)
    found = special(program, rest, paths) if special is not None else None
    if found is not None:
        return ops + found
    rule = shell_files._rule_for(program, rest)
    if rule is None or not paths:
        return ops
    return ops + shell_files._rule_ops(rule, program, rest, paths)


# Programs with a row (a git subcommand's among them), read by their own function, and none.
_PROGRAMS = [
    *sorted({key.split()[0] for key in shell_files.SHELL_COMMANDS}),
    "git add",
    "git mv",
    "git rm",
    "git checkout",
    "python",
    "python3",
    "str_replace_editor",
    "edit_file",
    "create",
    "cd",
    "ls",
    "echo",
    "pytest",
    "/usr/bin/sed",
    "FOO=1 sudo cp",
    "env mv",
]
_WORDS = [
    "-i",
    "-n",
    "-c",
    "-r",
    "-f",
    "-pi",
    "-e",
    "--force",
    "view",
    "str_replace",
    "s/a/b/",
    "'s|x|y|'",
    "pattern",
    "src/a.py",
    "b.txt",
    "./c",
    "dir/",
    "x=1",
    ">",
    ">>",
    "2>",
    "out.log",
    ">f.txt",
    "2>/dev/null",
    "<",
    "in.txt",
    "\"print(open('w.py', 'w'))\"",
    "https://x.io/a.py",
    "..",
]


@PROPERTY
@given(st.sampled_from(_PROGRAMS), st.lists(st.sampled_from(_WORDS), max_size=6))
def test_a_commands_files_are_those_every_word_read_as_a_path_gives(
    program: str, words: list[str]
) -> None:
    part = " ".join([program, *words])
    assert shell_files._simple_ops(part) == _plain_simple_ops(part)
