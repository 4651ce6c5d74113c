"""``compactkit count`` and ``compactkit models``: token counts and the model profiles."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from compactkit.cli._common import EXIT_OK, _add_model_arg, _add_transcript_args, _emit_json, _read


def _register_count(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "count",
        help="the prompt tokens the model's API bills for this request",
        description="Print the prompt tokens the model's API bills for this request: messages, "
        "tool schemas and reply priming.",
    )
    _add_transcript_args(parser)
    _add_model_arg(parser, "the model whose billing to count")
    parser.add_argument(
        "--json", action="store_true", help="print {tokens, exact, encoding, model, notes}"
    )
    parser.set_defaults(handler=_count)


def _count(args: argparse.Namespace) -> int:
    from compactkit.budget.tokens import counter_for

    transcript = _read(args)
    count = counter_for(args.model).count(
        transcript.items, tools=transcript.tools, format=transcript.format
    )
    if args.json:
        _emit_json(
            {
                "tokens": count.tokens,
                "exact": count.exact,
                "encoding": count.encoding,
                "model": args.model,
                "notes": list(count.notes),
            }
        )
    else:
        sys.stdout.write(f"{count.tokens}\n")
    return EXIT_OK


# -- models ----------------------------------------------------------------------------------


def _register_models(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "models",
        help="the model profiles known",
        description="List the model profiles known (bundled, plus $COMPACTKIT_PROFILES).",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.set_defaults(handler=_models)


def _models(args: argparse.Namespace) -> int:
    from compactkit.budget.profiles import default_registry

    registry = default_registry()
    rows = []
    for profile in registry.profiles:
        budget = registry.budget_for(profile.name)
        rows.append(
            {
                "name": profile.name,
                "provider": profile.provider,
                "context_window": profile.context_window,
                "max_output": profile.max_output,
                "input_cap": profile.input_cap,
                "encoding": profile.encoding,
                "exact": profile.exact,
                "counting": profile.counting,
                "usable_input": budget.usable_input,
                "source": profile.source,
            }
        )
    if args.json:
        _emit_json({"models": rows})
        return EXIT_OK
    header = ("name", "window", "max out", "input cap", "encoding", "counting")
    table = [
        (
            r["name"],
            f"{r['context_window']:,}",
            f"{r['max_output']:,}",
            f"{r['input_cap']:,}" if r["input_cap"] else "-",
            r["encoding"] or "(estimate)",
            r["counting"],
        )
        for r in rows
    ]
    widths = [max(len(str(row[i])) for row in [header, *table]) for i in range(len(header))]
    for row in [header, *table]:
        line = "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True))
        sys.stdout.write(line.rstrip() + "\n")
    return EXIT_OK
