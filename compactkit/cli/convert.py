"""``compactkit convert``: a transcript in another provider's format."""

from __future__ import annotations

import argparse
from typing import Any

from compactkit.cli._common import (
    EXIT_OK,
    _add_output_format_args,
    _add_transcript_args,
    _dump_for_output,
    _emit_json,
    _read,
)


def _register_convert(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="the same conversation in another provider's format",
        description="Print the conversation in another provider's format. What the target "
        "cannot express is an error (exit 2) unless --lossy drops it and reports it on stderr.",
    )
    _add_transcript_args(parser)
    _add_output_format_args(parser, required=True)
    parser.set_defaults(handler=_convert)


def _convert(args: argparse.Namespace) -> int:
    _emit_json(_dump_for_output(_read(args), args))
    return EXIT_OK
