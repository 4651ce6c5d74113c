"""What every command shares: the parser, exit codes, JSON output, errors, reading transcripts."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from compactkit.errors import ConfigError
from compactkit.formats.transcript import (
    FORMATS,
    Dropped,
    Transcript,
    dump_transcript,
    load_transcript,
)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2

Handler = Callable[[argparse.Namespace], int]


class _UsageExit(SystemExit):
    """argparse's exit on a usage error, carrying the one-line message."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_USAGE)
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits 2 on usage errors, as the contract says
        message = f"{message} (see: {self.prog} --help)"
        _error(message)
        raise _UsageExit(message)


def _json_text(value: Any, encoding: str | None) -> str:
    """``value`` as indented JSON text that ``encoding`` can write.

    Text is kept readable; a character the encoding cannot take (a lone surrogate from a cut
    emoji, Arabic on a cp1252 console) is written as a JSON ``\\u`` escape instead, which reads
    back as the same value.
    """
    text = json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    encoding = encoding or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        # Outside JSON strings everything is ASCII, so only string contents are escaped.
        text = "".join(c if _encodable(c, encoding) else _json_escape(c) for c in text)
    return text


def _encodable(char: str, encoding: str) -> bool:
    try:
        char.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON spells characters beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _emit_json(value: Any) -> None:
    sys.stdout.write(_json_text(value, getattr(sys.stdout, "encoding", None)))


def _conversation_json(conversation: Any) -> dict[str, Any]:
    """A dumped conversation as ``{"messages": [...]}``, plus ``system`` (Anthropic) or
    ``instructions`` (Responses) where the format keeps them outside the messages."""
    if isinstance(conversation, list):
        return {"messages": conversation}
    fields: dict[str, Any] = dict(conversation)
    if "input" in fields:  # Responses: the conversation is "input"
        fields["messages"] = fields.pop("input")
    return fields


def _error(message: str) -> None:
    sys.stderr.write(f"compactkit: error: {message}\n")


def _read(args: argparse.Namespace) -> Transcript:
    try:
        return load_transcript(args.transcript, format=getattr(args, "format", None))
    except OSError as exc:
        raise ConfigError(
            f"cannot read the transcript {args.transcript!r}: {exc.strerror or exc}"
        ) from exc


def _add_transcript_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("transcript", help="conversation file (JSON, JSONL); '-' reads stdin")
    parser.add_argument(
        "--format",
        choices=("chat", "responses", "anthropic"),
        default=None,
        help="the transcript's format (default: detected)",
    )


# -- count -----------------------------------------------------------------------------------


def _positive_tokens(value: str) -> int:
    """A token count as people write it: ``8000``, ``8_000``, ``8,000``, ``8k``, ``1.5k``."""
    text = value.strip().replace("_", "").replace(",", "")
    scale = 1
    if text[-1:] in ("k", "K"):
        text, scale = text[:-1], 1000
    try:
        number = float(text) * scale if scale != 1 else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of tokens (8000, 8_000 or 8k), got {value!r}"
        ) from None
    if number != int(number):
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, got {value!r}")
    tokens = int(number)
    if tokens <= 0:
        raise argparse.ArgumentTypeError(f"the budget must be positive, got {tokens}")
    return tokens


def _add_output_format_args(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    """``--to FORMAT`` and ``--lossy``, for any command that writes a conversation."""
    parser.add_argument(
        "--to",
        choices=FORMATS,
        required=required,
        default=None,
        help="the output format" + ("" if required else " (default: the input's format)"),
    )
    parser.add_argument(
        "--lossy",
        action="store_true",
        help="drop what the output format cannot express (reported on stderr) instead of failing",
    )


def _dump_for_output(transcript: Transcript, args: argparse.Namespace) -> Any:
    """The transcript as JSON in ``--to``'s format, reporting what ``--lossy`` dropped."""

    def report(dropped: Dropped) -> None:
        sys.stderr.write(f"compactkit: dropped {dropped}\n")

    return dump_transcript(
        transcript,
        to=getattr(args, "to", None),
        lossy=getattr(args, "lossy", False),
        on_drop=report,
    )


def _add_model_arg(parser: argparse.ArgumentParser, help: str) -> None:
    """``-m/--model MODEL`` (required), the same on every command that takes one."""
    parser.add_argument("-m", "--model", required=True, help=help)


def _add_profiles_arg(parser: argparse.ArgumentParser) -> None:
    """``--profiles FILE``: model profiles from a TOML file, as ``$COMPACTKIT_PROFILES`` does."""
    parser.add_argument(
        "--profiles",
        metavar="FILE",
        default=None,
        help="load model profiles from this TOML file (like $COMPACTKIT_PROFILES; docs/models.md)",
    )


def _check_base_url(url: str | None) -> None:
    """Refuse a ``--base-url`` the ``openai`` SDK cannot send to, before any request is tried.

    A malformed URL is bad input (exit 2), not an unreachable server worth retrying.
    """
    if url is None:
        return
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"--base-url {url!r} is not an http(s) URL; give the API root the openai SDK takes, "
            "for example https://api.openai.com/v1 or http://localhost:8000/v1"
        )


def _clamp_budget(tokens: int, model: str, flag: str) -> tuple[int, bool]:
    """``tokens`` capped at ``model``'s usable input budget, and whether it was capped.

    A ceiling above what the model accepts means the model's own limit; a warning says so.
    """
    from compactkit.budget.profiles import budget_for

    usable = budget_for(model).usable_input
    if tokens <= usable:
        return tokens, False
    sys.stderr.write(
        f"compactkit: warning: {flag} {tokens:,} is above {model}'s usable input budget; "
        f"clamped to {usable:,}\n"
    )
    return usable, True


def _check_model(model: str) -> None:
    """Raise ``ConfigError`` saying how to fix it, in command-line terms, unless a profile
    matches ``model``."""
    from compactkit.budget.profiles import PROFILES_ENV, default_registry

    registry = default_registry()  # (its own errors, a broken TOML file, are not about `model`)
    try:
        registry.get(model)
    except ConfigError:
        raise ConfigError(
            f"unknown model {model!r}: no profile matches it; `compactkit models` lists the known "
            f"ones, and a TOML file named by --profiles (or ${PROFILES_ENV}) adds one "
            "(see docs/models.md)"
        ) from None


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    """Report a failure: one line on stderr, and with ``--json`` a JSON object on stdout."""
    if getattr(args, "json", False):
        _emit_json({"error": message})
    _error(message)
    return code


def _silence_stdout() -> None:
    """Point stdout at the null device, so that flushing it at exit raises nothing more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (tests, embedding): nothing to flush to
        pass
