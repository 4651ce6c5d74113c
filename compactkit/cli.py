"""The ``compactkit`` command line (contract: docs/cli.md).

Thin: each command parses its flags, calls the library and prints. Exit codes: 0 success,
2 bad input (``ConfigError``/``FormatError``/unreadable file), 1 run-time failure.
With ``--json``, stdout holds a JSON object even when the command fails at run time.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from compactkit.errors import CompactkitError, ConfigError
from compactkit.transcript import Transcript, load_transcript

__all__ = ["main"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits 2 on usage errors, as the contract says
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"compactkit: error: {message}\n")


def _emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def _error(message: str) -> None:
    sys.stderr.write(f"compactkit: error: {message}\n")


def _read(args: argparse.Namespace) -> Transcript:
    return load_transcript(args.transcript, format=getattr(args, "format", None))


def _add_transcript_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("transcript", help="conversation file (JSON, JSONL); '-' reads stdin")
    parser.add_argument(
        "--format",
        choices=("chat", "responses", "anthropic"),
        default=None,
        help="the transcript's format (default: detected)",
    )


# -- commands: each adds its parser and handler --------------------------------------------

_COMMANDS: list[Callable[[Any], None]] = []


def _command(register: Callable[[Any], None]) -> Callable[[Any], None]:
    _COMMANDS.append(register)
    return register


# -- entry point ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every command registered."""
    parser = _Parser(
        prog="compactkit",
        description="Govern the context of long-running LLM agents.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for register in _COMMANDS:
        register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except OSError as exc:
        _error(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        return EXIT_USAGE
    except CompactkitError as exc:
        _error(str(exc))
        return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
