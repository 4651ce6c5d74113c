"""``compactkit project``: this turn's prompt under a budget."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from compactkit.cli._common import (
    EXIT_FAILURE,
    EXIT_OK,
    _add_model_arg,
    _add_transcript_args,
    _clamp_budget,
    _conversation_json,
    _emit_json,
    _error,
    _positive_tokens,
    _read,
)
from compactkit.errors import BudgetError
from compactkit.formats.transcript import (
    Transcript,
    dump_transcript,
)


def _register_project(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "project",
        help="the prompt the projector would send this turn, under the budget",
        description="Print the prompt the projector would send this turn: what fits the budget "
        "(default: the model's usable input budget). Never mutates anything.",
    )
    _add_transcript_args(parser)
    _add_model_arg(parser, "the model the prompt is for")
    parser.add_argument(
        "--budget",
        type=_positive_tokens,
        default=None,
        help="the token ceiling on the whole request (default: the model's usable input)",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object with the report")
    parser.set_defaults(handler=_project)


def _project(args: argparse.Namespace) -> int:
    from compactkit.governance.projector import ContextProjector
    from compactkit.items import Message
    from compactkit.items.snapshot import (
        DEFAULT_SUMMARY_ROLE,
        MemorySnapshot,
        is_summary_message,
    )

    transcript = _read(args)
    snapshot = MemorySnapshot.from_items(transcript.items)
    # A summary read back keeps the role it was written with (it may be a user-side message).
    marked = [item for item in transcript.items if is_summary_message(item)]
    role = marked[0].role if marked and isinstance(marked[0], Message) else DEFAULT_SUMMARY_ROLE
    if role == "assistant":  # a summary may not speak as the model; user-side is the safe side
        role = "user"
    options: dict[str, Any] = {"summary_role": role}
    clamped = False
    if args.budget is not None:
        options["budget"], clamped = _clamp_budget(args.budget, args.model, "--budget")
    projector = ContextProjector.for_model(args.model, **options)
    try:
        projection = projector.project(snapshot, tools=transcript.tools)
    except BudgetError as exc:
        if args.json:
            _emit_json(
                {"error": str(exc), "part": exc.part, "tokens": exc.tokens, "budget": exc.budget}
            )
        _error(str(exc))
        return EXIT_FAILURE
    if not args.json:  # the request as it would be sent, in the transcript's format
        _emit_json(dump_transcript(replace(transcript, items=list(projection.items))))
        return EXIT_OK
    conversation = _conversation_json(
        dump_transcript(Transcript(list(projection.items), [], transcript.format))
    )
    report = projection.report
    _emit_json(
        {
            **conversation,  # "messages", plus "system"/"instructions" where the format has them
            "tokens": projection.tokens,
            "budget": projection.budget,
            "clamped": clamped,
            "report": {
                "kept": report.kept,
                "masked": report.masked,
                "omitted": report.omitted,
                "notes": list(report.notes),
            },
        }
    )
    return EXIT_OK
