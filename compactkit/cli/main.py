"""The ``compactkit`` command line (contract: docs/cli.md).

Thin: each command parses its flags, calls the library and prints. Exit codes: 0 success,
2 bad input (``ConfigError``/``FormatError``/unreadable file), 1 run-time failure.
With ``--json``, stdout holds a JSON object even when the command fails at run time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import compactkit
from compactkit.cli import compact, convert, count, doctor, inspect, project, recall
from compactkit.cli._common import (
    EXIT_FAILURE,
    EXIT_USAGE,
    Handler,
    _add_profiles_arg,
    _check_model,
    _emit_json,
    _fail,
    _Parser,
    _silence_stdout,
    _UsageExit,
)
from compactkit.cli.eval import _register_eval
from compactkit.errors import CompactkitError, ConfigError
from compactkit.items import snapshot as _snapshot

__all__ = ["main"]

_COMMANDS: tuple[Callable[[Any], None], ...] = (
    count._register_count,
    count._register_models,
    project._register_project,
    convert._register_convert,
    compact._register_compact,
    inspect._register_inspect,
    recall._register_recall,
    recall._register_expand,
    doctor._register_doctor,
    _register_eval,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every command registered."""
    parser = _Parser(
        prog="compactkit",
        description="Govern the context of long-running LLM agents.",
    )
    parser.add_argument(
        "--version", action="version", version=f"compactkit {compactkit.__version__}"
    )
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for register in _COMMANDS:  # in the order `compactkit --help` lists them
        register(subparsers)
    for command in _leaf_parsers(parser):  # the common flags, on every command
        _add_profiles_arg(command)
    return parser


def _leaf_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parsers that run a command (``eval run``, not ``eval``)."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield parser
    for group in groups:
        for child in dict.fromkeys(group.choices.values()):  # aliases share a parser
            yield from _leaf_parsers(child)


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
        with _profiles_file(getattr(args, "profiles", None)), _summary_key():
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
    except RecursionError:  # a backstop: readers refuse deep nesting before it gets here
        message = "the input is nested too deeply to process; flatten the content"
        return _fail(args, message, EXIT_USAGE)


@contextlib.contextmanager
def _profiles_file(path: str | None) -> Iterator[None]:
    """``--profiles FILE``: the default registry reads ``FILE`` for this command, exactly as it
    reads ``$COMPACTKIT_PROFILES`` (the variable and the cached registry are restored after)."""
    if path is None:
        yield
        return
    from compactkit.budget.profiles import PROFILES_ENV, default_registry

    if not Path(path).is_file():
        raise ConfigError(f"--profiles {path!r}: no such file; name a TOML file of model profiles")
    before = os.environ.get(PROFILES_ENV)
    os.environ[PROFILES_ENV] = path
    default_registry.cache_clear()
    try:
        try:
            default_registry()
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(f"{PROFILES_ENV}=", "--profiles ", 1)) from None
        yield
    finally:
        if before is None:
            os.environ.pop(PROFILES_ENV, None)
        else:
            os.environ[PROFILES_ENV] = before
        default_registry.cache_clear()


def summary_key_path() -> Path:
    """Where the CLI keeps its summary key: ``$XDG_CONFIG_HOME/compactkit/summary.key``."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "compactkit" / "summary.key"


@contextlib.contextmanager
def _summary_key() -> Iterator[None]:
    """Seal and verify summaries with a key kept between runs, so that ``compact`` then
    ``project`` in another process still finds the summary (like Jupyter's notebook secret).

    ``$COMPACTKIT_SUMMARY_KEY`` or a key the program set wins; an unusable key file falls back
    to the process's own key (a summary from another run then reads as an ordinary message).
    """
    if os.environ.get(_snapshot.SUMMARY_KEY_ENV) or _snapshot._key_override is not None:
        yield
        return
    key = _load_key_file(summary_key_path())
    if key is None:
        yield
        return
    _snapshot.set_summary_key(key)
    try:
        yield
    finally:
        _snapshot.set_summary_key(None)


def _load_key_file(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip() or None
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another run created it just now
        return _load_key_file(path)
    except OSError:
        return None
    key = secrets.token_hex(32)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key + "\n")
    return key


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
