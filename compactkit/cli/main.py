"""The ``compactkit`` command line (contract: docs/cli.md).

Thin: each command parses its flags, calls the library and prints. Exit codes: 0 success,
2 bad input (``ConfigError``/``FormatError``/unreadable file), 1 run-time failure.
With ``--json``, stdout holds a JSON object even when the command fails at run time.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from compactkit.cli import compact, convert, count, inspect, project
from compactkit.cli._common import (
    EXIT_FAILURE,
    EXIT_USAGE,
    Handler,
    _check_model,
    _emit_json,
    _fail,
    _Parser,
    _silence_stdout,
    _UsageExit,
)
from compactkit.cli.eval import _register_eval
from compactkit.errors import CompactkitError, ConfigError

__all__ = ["main"]

_COMMANDS: tuple[Callable[[Any], None], ...] = (
    count._register_count,
    count._register_models,
    project._register_project,
    convert._register_convert,
    compact._register_compact,
    inspect._register_inspect,
    _register_eval,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every command registered."""
    parser = _Parser(
        prog="compactkit",
        description="Govern the context of long-running LLM agents.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for register in _COMMANDS:  # in the order `compactkit --help` lists them
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except _UsageExit as exc:
        if "--json" in argv:  # a script asked for JSON: it gets the error as JSON too
            _emit_json({"error": exc.message})
        raise
    handler: Handler = args.handler
    try:
        if getattr(args, "model", None) is not None:
            _check_model(args.model)
        return handler(args)
    except BrokenPipeError:  # the reader went away (``compactkit models | head``): stop quietly
        _silence_stdout()
        return EXIT_FAILURE
    except ConfigError as exc:
        return _fail(args, str(exc), EXIT_USAGE)
    except OSError as exc:
        return _fail(args, f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), EXIT_USAGE)
    except CompactkitError as exc:
        return _fail(args, str(exc), EXIT_FAILURE)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
