"""The ``compactkit`` command line (contract: docs/cli.md).

Thin: each command parses its flags, calls the library and prints. Exit codes: 0 success,
2 bad input (``ConfigError``/``FormatError``/unreadable file), 1 run-time failure.
With ``--json``, stdout holds a JSON object even when the command fails at run time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors import (
    DigestCompressor,
    LadderCompressor,
    MaskingCompressor,
    MemoryCompressor,
    WindowedCompressor,
)
from compactkit.errors import BudgetError, CompactkitError, ConfigError
from compactkit.formats.chat import items_to_chat
from compactkit.formats.transcript import (
    FORMATS,
    Dropped,
    Transcript,
    dump_transcript,
    load_transcript,
)
from compactkit.items import Item, Tool

__all__ = ["main"]

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


# -- commands: each adds its parser and handler --------------------------------------------

_COMMANDS: list[Callable[[Any], None]] = []


def _command(register: Callable[[Any], None]) -> Callable[[Any], None]:
    _COMMANDS.append(register)
    return register


# -- count -----------------------------------------------------------------------------------


@_command
def _register_count(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "count",
        help="the prompt tokens the model's API bills for this request",
        description="Print the prompt tokens the model's API bills for this request: messages, "
        "tool schemas and reply priming.",
    )
    _add_transcript_args(parser)
    parser.add_argument("--model", required=True, help="the model whose billing to count")
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


@_command
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


# -- project -------------------------------------------------------------------------------


def _positive_tokens(value: str) -> int:
    try:
        tokens = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of tokens, got {value!r}") from None
    if tokens <= 0:
        raise argparse.ArgumentTypeError(f"the budget must be positive, got {tokens}")
    return tokens


@_command
def _register_project(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "project",
        help="the prompt the projector would send this turn, under the budget",
        description="Print the prompt the projector would send this turn: what fits the budget "
        "(default: the model's usable input budget). Never mutates anything.",
    )
    _add_transcript_args(parser)
    parser.add_argument("--model", required=True, help="the model the prompt is for")
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
    from compactkit.items.snapshot import MemorySnapshot, is_summary_message

    transcript = _read(args)
    snapshot = MemorySnapshot.from_items(transcript.items)
    # A summary read back keeps the role it was written with (it may be a user-side message).
    marked = [item for item in transcript.items if is_summary_message(item)]
    role = marked[0].role if marked and isinstance(marked[0], Message) else "system"
    if role == "assistant":  # a summary may not speak as the model; user-side is the safe side
        role = "user"
    options: dict[str, Any] = {"summary_role": role}
    if args.budget is not None:
        options["budget"] = args.budget
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
            "report": {
                "kept": report.kept,
                "masked": report.masked,
                "omitted": report.omitted,
                "notes": list(report.notes),
            },
        }
    )
    return EXIT_OK


# -- convert ---------------------------------------------------------------------------------


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


@_command
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


# -- compact ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _CompactOptions:
    """What a compressor factory gets from ``compactkit compact``'s flags."""

    target: int
    counter: TokenCounter
    tools: Sequence[Tool]
    summarizer_model: str | None
    base_url: str | None


def _summary_compressor(options: _CompactOptions, **sizing: Any) -> MemoryCompressor:
    try:
        from compactkit.compressors.summary import SummaryCompressor
        from compactkit.compressors.summary.llm import OpenAIChatLLM
    except ImportError as exc:  # pragma: no cover - the module ships with compactkit
        raise ConfigError(f"the summary compressor is not available yet ({exc})") from exc
    from compactkit.budget.profiles import budget_for

    if not options.summarizer_model:
        raise ConfigError(
            "the summary compressor calls an LLM: name it with --summarizer-model "
            "(and --base-url for a server other than OpenAI)"
        )
    api_key = os.environ.get("OPENAI_API_KEY") or ("unused" if options.base_url else None)
    llm = OpenAIChatLLM(options.summarizer_model, base_url=options.base_url, api_key=api_key)
    try:  # the summarizer's own input limit, when its profile is known
        window = budget_for(options.summarizer_model).usable_input
    except ConfigError:
        window = 32_000
    return SummaryCompressor(
        llm,
        summarizer_window_tokens=window,
        counter=options.counter,
        tools=options.tools,
        **sizing,
    )


def _ladder(options: _CompactOptions) -> MemoryCompressor:
    summary = None
    if options.summarizer_model:
        summary = _summary_compressor(options, target_tokens=options.target)
    return LadderCompressor(
        options.target, summary=summary, counter=options.counter, tools=options.tools
    )


_COMPRESSORS: dict[str, Callable[[_CompactOptions], MemoryCompressor]] = {
    "window": lambda o: WindowedCompressor(max_tokens=o.target, counter=o.counter, tools=o.tools),
    "mask": lambda o: MaskingCompressor(target_tokens=o.target, counter=o.counter, tools=o.tools),
    "digest": lambda o: DigestCompressor(target_tokens=o.target, counter=o.counter, tools=o.tools),
    "summary": lambda o: _summary_compressor(o, target_tokens=o.target),
    "ladder": _ladder,
}
"""``--compressor`` name -> factory; add an entry to offer another compressor."""


@_command
def _register_compact(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compact",
        help="compact the transcript's history with a compressor",
        description="Compact the transcript's history (everything but the system prompt) with "
        "the named compressor, down to --target tokens (the whole request). A summary written "
        "by compactkit earlier is read back and merged into, never treated as a message.",
    )
    _add_transcript_args(parser)
    parser.add_argument("--model", required=True, help="the model the conversation is for")
    parser.add_argument(
        "--compressor", required=True, choices=sorted(_COMPRESSORS), help="how to compact"
    )
    parser.add_argument(
        "--target",
        type=_positive_tokens,
        default=None,
        help="the token count to get under (default: the model profile's compaction target)",
    )
    parser.add_argument(
        "--summarizer-model", default=None, help="the LLM that writes summaries (summary, ladder)"
    )
    parser.add_argument(
        "--base-url", default=None, help="the summarizer's OpenAI-compatible API root"
    )
    parser.add_argument("--out", default=None, help="write the compacted messages to this file")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print {messages, summary, tokens_before, tokens_after, folded, outcome, error}",
    )
    _add_output_format_args(parser)
    parser.set_defaults(handler=_compact)


def _compact(args: argparse.Namespace) -> int:
    from compactkit.budget.profiles import budget_for
    from compactkit.budget.tokens import counter_for
    from compactkit.items import FunctionCallOutput, Message
    from compactkit.items.snapshot import MemorySnapshot, is_summary_message

    transcript = _read(args)
    target = args.target if args.target is not None else budget_for(args.model).target_tokens
    options = _CompactOptions(
        target=target,
        counter=counter_for(args.model),
        tools=tuple(transcript.tools),
        summarizer_model=args.summarizer_model,
        base_url=args.base_url,
    )
    compressor = _COMPRESSORS[args.compressor](options)
    snapshot = MemorySnapshot.from_items(transcript.items)
    result = compressor.compress(snapshot)

    marked = [item for item in transcript.items if is_summary_message(item)]
    role = marked[0].role if marked and isinstance(marked[0], Message) else "system"
    if role == "assistant":  # a summary may not speak as the model
        role = "user"
    rendered = result.snapshot.render_items(summary_role=role)
    messages = _dump_for_output(Transcript(rendered, [], transcript.format), args)
    answered = {i.call_id for i in result.snapshot.items if isinstance(i, FunctionCallOutput)}
    removed = [
        item
        for item in result.folded
        if not (isinstance(item, FunctionCallOutput) and item.call_id in answered)
    ]  # a masked output was replaced, not removed
    stats = result.stats
    target_met = stats.tokens_after is not None and stats.tokens_after <= target
    if args.out is not None:
        try:
            with open(args.out, "w", encoding="utf-8") as handle:
                handle.write(_json_text(messages, "utf-8"))
        except OSError as exc:
            raise ConfigError(
                f"cannot write --out {args.out!r}: {exc.strerror or exc}; "
                "name a file in a writable directory"
            ) from exc
    if args.json:
        _emit_json(
            {
                **_conversation_json(messages),  # plus "system"/"instructions" where kept apart
                "summary": result.snapshot.summary,
                "tokens_before": stats.tokens_before,
                "tokens_after": stats.tokens_after,
                "folded": _message_count(removed),
                "outcome": result.outcome,
                "error": result.error,
                "compressor": stats.compressor,
                "target": target,
                "target_met": target_met,
                "details": json.loads(json.dumps(stats.details, default=str)),
            }
        )
    elif args.out is None:
        _emit_json(messages)
    if result.outcome == "failed":
        _error(result.error or "compaction failed")
        return EXIT_FAILURE
    if result.error:
        sys.stderr.write(f"compactkit: warning: {result.error}\n")
    if not target_met:
        sys.stderr.write(
            f"compactkit: warning: {stats.compressor} left {stats.tokens_after:,} tokens, over "
            f"the target {target:,} (the ladder fails instead of stopping short)\n"
        )
    return EXIT_OK


def _message_count(items: Sequence[Item]) -> int:
    """How many chat messages ``items`` make (an assistant turn's calls share one message)."""
    return len(items_to_chat(items, lossy=True))


# -- inspect ---------------------------------------------------------------------------------


@_command
def _register_inspect(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="show a session stored by SQLMemory (or list the sessions)",
        description="Show what an SQL database holds for one session — summary, active items, "
        "archived items and compaction history (newest first) — or list the sessions. "
        "Read-only: never creates or migrates tables.",
    )
    parser.add_argument("url", help="database URL (sqlite:///agent.db, postgresql://...)")
    parser.add_argument("session_id", nargs="?", help="the session to show")
    parser.add_argument("--list", action="store_true", help="list the sessions instead")
    parser.add_argument(
        "--prefix", default="compactkit_", help="table name prefix (default: compactkit_)"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.set_defaults(handler=_inspect)


def _inspect(args: argparse.Namespace) -> int:
    from pathlib import Path

    try:
        from sqlalchemy import make_url
        from sqlalchemy.exc import ArgumentError

        from compactkit.sql.memory import SQLMemory, list_sql_sessions
    except ImportError as exc:
        raise ConfigError(f"{exc}") from exc
    from compactkit.items import dump_items

    if args.list == (args.session_id is not None):
        raise ConfigError("give either a SESSION_ID or --list")
    try:
        url = make_url(args.url)
    except ArgumentError as exc:
        raise ConfigError(f"not a database URL: {args.url!r}") from exc
    shown = url.render_as_string(hide_password=True)
    database = url.database or ":memory:"
    if (
        url.get_backend_name() == "sqlite"
        and database != ":memory:"
        and not Path(database).is_file()
    ):
        raise ConfigError(f"no SQLite database file at {database!r}")  # (connecting creates one)
    if args.list:
        infos = list_sql_sessions(url, table_prefix=args.prefix)
        rows = [info.model_dump(mode="json") for info in infos]
        if args.json:
            _emit_json({"sessions": rows})
        else:
            _print_session_table(rows)
        return EXIT_OK
    memory = SQLMemory(url, args.session_id, table_prefix=args.prefix, create_schema=False)
    info = memory.info()
    if info is None:
        raise ConfigError(
            f"no session {args.session_id!r} in {shown} (table prefix {args.prefix!r}); "
            f"list them with: compactkit inspect URL --list"
        )
    snapshot = memory.snapshot()
    report = {
        "session_id": info.session_id,
        "version": snapshot.version,
        "created_at": info.model_dump(mode="json")["created_at"],
        "updated_at": info.model_dump(mode="json")["updated_at"],
        "saved_state": info.saved_state,
        "summary": snapshot.summary,
        "active": dump_items(snapshot.items),
        "archived": dump_items(memory.archived()),
        "compactions": [r.model_dump(mode="json") for r in memory.compactions()],
    }
    if args.json:
        _emit_json(report)
    else:
        _print_session(report)
    return EXIT_OK


def _print_session_table(rows: list[dict[str, Any]]) -> None:
    header = ("session", "version", "active", "archived", "compactions", "saved", "updated")
    table = [
        (
            r["session_id"],
            r["version"],
            r["active_items"],
            r["archived_items"],
            r["compactions"],
            "yes" if r["saved_state"] else "no",
            r["updated_at"][:19],
        )
        for r in rows
    ]
    widths = [max(len(str(row[i])) for row in [header, *table]) for i in range(len(header))]
    for row in [header, *table]:
        line = "  ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True))
        sys.stdout.write(line.rstrip() + "\n")


def _print_session(report: dict[str, Any]) -> None:
    def line(item: dict[str, Any]) -> str:
        from compactkit.items import item_text, load_items

        (loaded,) = load_items([item])
        who = getattr(loaded, "role", None) or loaded.type
        text = " ".join(item_text(loaded).split())
        pin = " (pinned)" if loaded.pinned else ""
        return f"  #{loaded.seq} {who}{pin}: {text[:100]}{'…' if len(text) > 100 else ''}\n"

    out = sys.stdout
    out.write(
        f"session {report['session_id']}  version {report['version']}  "
        f"created {report['created_at'][:19]}  updated {report['updated_at'][:19]}\n"
    )
    summary = report["summary"]
    out.write(f"summary ({len(summary)} chars):\n")
    out.writelines(f"  {row}\n" for row in (summary.splitlines() or ["(none)"]))
    for key in ("active", "archived"):
        out.write(f"{key} items ({len(report[key])}):\n")
        out.writelines(line(item) for item in report[key])
    out.write(f"compactions ({len(report['compactions'])}, newest first):\n")
    for c in report["compactions"]:
        span = f"seq {c['first_seq']}-{c['last_seq']}" if c["first_seq"] is not None else "-"
        tokens = f"  tokens {c['tokens_before']}→{c['tokens_after']}" if c["tokens_before"] else ""
        undone = "  (undone)" if c["undone_at"] else ""
        error = f"  error: {c['error']}" if c["error"] else ""
        out.write(
            f"  #{c['id']} {c['created_at'][:19]} {c['strategy']} {c['outcome']}  {span} "
            f"({c['archived']} archived)  items {c['items_before']}→{c['items_after']}"
            f"{tokens}{undone}{error}\n"
        )


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
            f"ones, and a TOML file named by ${PROFILES_ENV} adds one (see docs/models.md)"
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
