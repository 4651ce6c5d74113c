"""Runs of a command: when two runs are "the same command", what a run is about, how it is listed.

``family`` (the program and subcommand, or the tool's name), ``scope_of`` (the paths a run is
about), ``covers`` (whether a later run's scope holds an earlier one's) and ``command_line`` (a
multi-line command by its first line). The digest uses them to tell when an error was resolved
by a later successful run; they are separate from ``_extract`` because they read command lines,
not conversation items.
"""

from __future__ import annotations

from compactkit.compressors.digest import _files as files


def family(command: str) -> tuple[str, ...]:
    """What makes two runs "the same command": the program and its subcommand for a shell
    line (``pytest``, ``python -m pytest``, ``git commit``), the tool's name for a call."""
    head = command_line(command)
    if "(" in head and head.endswith(")") and " " not in head.partition("(")[0]:
        return (head.partition("(")[0],)
    words = [w for w in head.split() if "=" not in w or w.startswith("-")]
    out: list[str] = []
    for word in words:
        if word in ("sudo", "time", "env", "uv", "poetry", "run", "npx", "-m"):
            continue
        if out and (word.startswith("-") or files.looks_like_path(word)):
            break
        out.append(word.rsplit("/", 1)[-1])
        if len(out) == 2:
            break
    return tuple(out)


def covers(later: tuple[str, ...], scope: tuple[str, ...]) -> bool:
    """Whether a run over ``later`` covers every path of ``scope`` (a run naming no path is
    about the whole project: ``pytest -q`` covers ``pytest tests/test_a.py``)."""
    if not later:
        return True
    return all(any(p == q or p.startswith(q.rstrip("/") + "/") for q in later) for p in scope)


def scope_of(command: str) -> tuple[str, ...]:
    """The paths a run is about (``pytest tests/a.py`` → ``tests/a.py``; a call's path
    arguments); none: the whole project."""
    return tuple(files.paths_in_command(command_line(command)))


def command_line(command: str) -> str:
    """How a command is listed: a multi-line command (a heredoc, a script) by its first line
    and how many lines follow — its body is the files it writes, listed under files."""
    first, sep, rest = command.partition("\n")
    if not sep:
        return command
    return f"{first.rstrip()} … (+{rest.count(chr(10)) + 1} lines)"
