"""What a call's name and arguments alone say, read once per distinct call.

A session calls the same few tools with the same arguments again and again (``read_file`` of
one path, ``run_tests`` of one directory): the shell command a call runs, the files it touches,
how the summary names it and the identifiers its arguments give depend on nothing else, so the
digest reads them once per name and arguments (``planned``) and only the output anew. Separate
from ``_extract`` because it is below it: the call's own reading, without the output or the
session around it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import NamedTuple

from compactkit.compressors import _facts as facts
from compactkit.compressors import _facts_ids as facts_ids
from compactkit.compressors.digest import _files as files
from compactkit.compressors.digest import _shell_files as shell_files
from compactkit.compressors.digest._call_arguments import arguments_text, names_record
from compactkit.compressors.digest._runs import command_line

__all__ = ["CallPlan", "plan_of", "planned"]

CONTENT_KEYS = {"content", "file_text", "text", "old_str", "new_str", "old_string", "new_string"}
"""Arguments holding file content: their identifiers are mostly noise, not read."""
_ID_VALUE = re.compile(r"^[\w.:/@#+-]{3,64}$")


class CallPlan(NamedTuple):
    """What one call's name and arguments say (``plan_of``)."""

    args: dict[str, object]
    """The parsed arguments (read, never changed)."""
    command: str | None
    """The shell command it runs, when it is a shell-like tool."""
    ops: tuple[files.FileOp, ...]
    """The files it touches: its command's, else its arguments'."""
    head: str | None
    """Its entry under commands before the outcome (`` `command` ``, `` `name({…})` ``); ``None``
    for a file tool's call (its files are its outcome)."""
    subject: str
    """What its measurements are listed under: its command line, else ``name({…})``."""
    measures: bool
    """Whether its output can report a measurement (a file's text measures nothing)."""
    source: str
    """What its errors and successes are keyed by: the command, else ``name({…})``, or the
    tool's name for a file tool's call."""
    ids: tuple[str, ...]
    """Its identifier entries: those its plain arguments hold, then the values of its id-like
    arguments (``reservation_id="8JX2WO"``)."""


@functools.lru_cache(maxsize=1024)
def planned(name: str, arguments: str) -> CallPlan:
    """``plan_of`` a call of ``name`` with the JSON ``arguments``, remembered per distinct
    call (bounded: 1,024)."""
    return plan_of(name, arguments_text(arguments))


def plan_of(name: str, args: dict[str, object]) -> CallPlan:
    """What a call of ``name`` with ``args`` does, as the digest lists it."""
    command = files.command_of(name, args)
    if command is not None:
        line = command_line(command)
        ops = tuple(shell_files.shell_file_ops(command))
        head: str | None = facts.code(line, 200)
        measures = not ops or any(op.modified for op in ops)
        subject, source = line, command
    else:
        ops = tuple(files.file_ops(name, args))
        label = f"{name}({_arguments(args)})"
        head = None if ops else facts.code(label, 160)
        measures = not ops
        subject, source = label, name if ops else label
    plain = " ".join(
        [str(v) for k, v in args.items() if k not in CONTENT_KEYS and isinstance(v, str)]
    )
    ids = [
        f"`{ident}` — {kind}"
        for ident, kind in (facts_ids.identifiers_in(plain, prose=True, limit=4) if plain else ())
    ]
    _argument_ids(args, ids)
    return CallPlan(args, command, ops, head, subject, measures, source, tuple(ids))


def _argument_ids(args: Mapping[str, object], out: list[str], depth: int = 0) -> None:
    """Identifiers named by their argument: ``reservation_id="8JX2WO"`` → `` `8JX2WO` ``."""
    for key, value in args.items():
        if isinstance(value, dict) and depth < 2:
            _argument_ids(value, out, depth + 1)
        elif isinstance(value, list) and depth < 2:
            for element in value[:20]:
                if isinstance(element, dict):
                    _argument_ids(element, out, depth + 1)
        elif isinstance(value, str | int) and not isinstance(value, bool):
            text = str(value)
            if (
                names_record(key)
                and _ID_VALUE.match(text)
                and (any(c.isdigit() for c in text) or text.isupper())
            ):
                out.append(f"`{text}` — {facts.clip(key, 40)}")


def _arguments(args: Mapping[str, object]) -> str:
    return json.dumps(args, ensure_ascii=False) if args else ""
