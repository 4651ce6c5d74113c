"""``compactkit compact``: fold a transcript's history into a summary."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from compactkit import compressors  # its names load on first use: `count` does not pay for them
from compactkit.budget.tokens import TokenCounter
from compactkit.cli._common import (
    EXIT_FAILURE,
    EXIT_OK,
    _add_model_arg,
    _add_output_format_args,
    _add_transcript_args,
    _check_base_url,
    _clamp_budget,
    _conversation_json,
    _dump_for_output,
    _emit_json,
    _error,
    _json_text,
    _positive_tokens,
    _read,
)
from compactkit.cli._progress import Progress, _add_quiet_arg
from compactkit.errors import ConfigError
from compactkit.formats.chat import items_to_chat
from compactkit.formats.transcript import (
    Transcript,
)
from compactkit.items import Item, Tool

if TYPE_CHECKING:
    from compactkit.compressors import MemoryCompressor
    from compactkit.items.snapshot import CompactResult, MemorySnapshot, SummaryRole


@dataclass(frozen=True)
class _CompactOptions:
    """What a compressor factory gets from ``compactkit compact``'s flags."""

    target: int
    counter: TokenCounter
    tools: Sequence[Tool]
    summarizer_model: str | None
    base_url: str | None
    keep_last_groups: int | None = None
    on_progress: Callable[[int, int], None] | None = None
    """``SummaryCompressor(on_progress=...)``: (chunks done, total) as the summarizer works."""
    dry_run: bool = False
    """A preview: the summarizer is never called, so it needs no API key."""


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
    api_key = os.environ.get("OPENAI_API_KEY") or (
        "unused" if options.base_url or options.dry_run else None
    )
    if api_key is None:  # say it in command-line terms, not the library's api_key=
        raise ConfigError(
            "the summarizer needs an API key: set OPENAI_API_KEY, or give --base-url for a "
            "local server that needs none"
        )
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
        on_progress=options.on_progress,
        **sizing,
    )


def _ladder(options: _CompactOptions) -> MemoryCompressor:
    summary = None
    if options.summarizer_model:
        summary = _summary_compressor(options, target_tokens=options.target)
    ladder = compressors.LadderCompressor(
        options.target, summary=summary, counter=options.counter, tools=options.tools
    )
    if options.keep_last_groups is None:
        return ladder
    return replace(ladder, keep_last_groups=options.keep_last_groups)


def _mask(options: _CompactOptions) -> MemoryCompressor:
    mask = compressors.MaskingCompressor(
        target_tokens=options.target, counter=options.counter, tools=options.tools
    )
    if options.keep_last_groups is None:
        return mask
    return replace(mask, keep_last_groups=options.keep_last_groups)


_COMPRESSORS: dict[str, Callable[[_CompactOptions], MemoryCompressor]] = {
    "window": lambda o: compressors.WindowedCompressor(
        max_tokens=o.target, counter=o.counter, tools=o.tools
    ),
    "mask": _mask,
    "digest": lambda o: compressors.DigestCompressor(
        target_tokens=o.target, counter=o.counter, tools=o.tools
    ),
    "summary": lambda o: _summary_compressor(o, target_tokens=o.target),
    "ladder": _ladder,
}
"""``--compressor`` name -> factory; add an entry to offer another compressor."""


def _count(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {number}")
    return number


def _register_compact(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compact",
        help="compact the transcript's history with a compressor",
        description="Compact the transcript's history (everything but the system prompt) with "
        "the named compressor, down to --target tokens (the whole request). A summary written "
        "by compactkit earlier is read back and merged into, never treated as a message.",
    )
    _add_transcript_args(parser)
    _add_model_arg(parser, "the model the conversation is for")
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
        "--keep-last-groups",
        type=_count,
        default=None,
        metavar="N",
        help="mask and ladder: tool outputs in the newest N turns are never masked (default 10)",
    )
    parser.add_argument(
        "--summarizer-model", default=None, help="the LLM that writes summaries (summary, ladder)"
    )
    parser.add_argument(
        "--base-url", default=None, help="the summarizer's OpenAI-compatible API root"
    )
    parser.add_argument("--out", default=None, help="write the compacted messages to this file")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="report what the compaction would do (kept, masked, folded, tokens, summarizer "
        "calls) without calling the summarizer or writing anything",
    )
    _add_quiet_arg(parser)
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
    from compactkit.items import FunctionCallOutput
    from compactkit.items.snapshot import (
        MemorySnapshot,
    )

    _check_compact_args(args)
    transcript = _read(args)
    clamped = False
    if args.target is None:
        target = budget_for(args.model).target_tokens
    else:
        target, clamped = _clamp_budget(args.target, args.model, "--target")
    with Progress("summarizing", quiet=args.quiet) as progress:

        def on_progress(done: int, total: int) -> None:
            what = f"chunk {done + 1} of {total}" if done < total else f"{total} chunks read"
            progress.update(done, total, what)

        options = _CompactOptions(
            target=target,
            counter=counter_for(args.model),
            tools=tuple(transcript.tools),
            summarizer_model=args.summarizer_model,
            base_url=args.base_url,
            keep_last_groups=args.keep_last_groups,
            on_progress=on_progress if progress.shown else None,
            dry_run=args.dry_run,
        )
        compressor = _COMPRESSORS[args.compressor](options)
        snapshot = MemorySnapshot.from_items(transcript.items)
        if args.dry_run:
            return _dry_run(compressor, snapshot, options, args.json, clamped)
        result = compressor.compress(snapshot)

    rendered = result.snapshot.render_items(summary_role=_summary_role(transcript.items))
    messages = _dump_for_output(Transcript(rendered, [], transcript.format), args)
    # Only history is compacted: the tool schemas go back out too. --out and stdout carry the
    # conversation as a transcript reads it back ({"messages", "tools"} when there are tools).
    conversation = _dump_for_output(
        Transcript(rendered, list(transcript.tools), transcript.format), args
    )
    tools = (
        _dump_for_output(Transcript([], list(transcript.tools), transcript.format), args)
        if transcript.tools
        else None
    )
    answered = {i.call_id for i in result.snapshot.items if isinstance(i, FunctionCallOutput)}
    removed = [
        item
        for item in result.folded
        if not (isinstance(item, FunctionCallOutput) and item.call_id in answered)
    ]  # a masked output was replaced, not removed
    stats = result.stats
    target_met = stats.tokens_after is not None and stats.tokens_after <= target
    if args.out is not None:
        _write_out(args.out, conversation)
    if args.json:
        _emit_json(
            {
                **_conversation_json(messages),  # plus "system"/"instructions" where kept apart
                **(
                    {"tools": tools["tools"]}
                    if isinstance(tools, dict) and "tools" in tools
                    else {}
                ),
                "summary": result.snapshot.summary,
                "tokens_before": stats.tokens_before,
                "tokens_after": stats.tokens_after,
                "folded": _message_count(removed),
                "outcome": result.outcome,
                "error": result.error,
                "compressor": stats.compressor,
                "target": target,
                "clamped": clamped,
                "target_met": target_met,
                "details": json.loads(json.dumps(stats.details, default=str)),
            }
        )
    elif args.out is None:
        _emit_json(conversation)
    return _exit_status(result, target, target_met)


def _check_compact_args(args: argparse.Namespace) -> None:
    """Options of ``compact`` that contradict each other: a ``ConfigError`` naming the fix."""
    if args.keep_last_groups is not None and args.compressor not in ("mask", "ladder"):
        raise ConfigError(  # silently ignoring it would look like it had no effect
            f"--keep-last-groups applies to --compressor mask and ladder, not "
            f"{args.compressor}; drop it or pick one of those"
        )
    _check_base_url(args.base_url)
    if args.dry_run and args.out is not None:
        raise ConfigError("--dry-run writes nothing: drop --out, or drop --dry-run to write it")


def _summary_role(items: Sequence[Item]) -> SummaryRole:
    """The role the transcript's own summary had (a summary may not speak as the model)."""
    from compactkit.items import Message
    from compactkit.items.snapshot import DEFAULT_SUMMARY_ROLE, is_summary_message

    marked = [item for item in items if is_summary_message(item)]
    role = marked[0].role if marked and isinstance(marked[0], Message) else DEFAULT_SUMMARY_ROLE
    return "user" if role == "assistant" else role


def _write_out(path: str, conversation: object) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(_json_text(conversation, "utf-8"))
    except OSError as exc:
        raise ConfigError(
            f"cannot write --out {path!r}: {exc.strerror or exc}; "
            "name a file in a writable directory"
        ) from exc


def _exit_status(result: CompactResult, target: int, target_met: bool) -> int:
    """The exit code, after the error or warning the result calls for."""
    stats = result.stats
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


def _dry_run(
    compressor: MemoryCompressor,
    snapshot: MemorySnapshot,
    options: _CompactOptions,
    as_json: bool,
    clamped: bool,
) -> int:
    """``--dry-run``: the preview, on stdout; nothing is called or written."""
    from compactkit.compressors.preview import preview_compaction

    preview = preview_compaction(compressor, snapshot, counter=options.counter, tools=options.tools)
    if as_json:
        _emit_json({**preview.to_json(), "target": options.target, "clamped": clamped})
        return EXIT_OK
    shown = preview.to_json()
    after = f"{preview.tokens_after:,}" + (" (estimate)" if preview.estimated else "")
    lines = [
        f"dry run: {preview.compressor} would "
        + ("compact" if preview.changed else "change nothing"),
        f"tokens: {preview.tokens_before:,} -> {after} (target {options.target:,})",
        f"kept: {len(preview.kept)} items {shown['kept']}".rstrip(),
        f"masked: {len(preview.masked)} items {shown['masked']}".rstrip(),
        f"folded: {len(preview.folded)} items {shown['folded']}".rstrip(),
        f"summarizer calls: {preview.summarizer_calls} "
        f"(~{preview.summarizer_input_tokens:,} input tokens)",
        "cost: " + ("unknown" if preview.cost is None else f"${preview.cost:.6f}"),
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def _message_count(items: Sequence[Item]) -> int:
    """How many chat messages ``items`` make (an assistant turn's calls share one message)."""
    return len(items_to_chat(items, lossy=True))
