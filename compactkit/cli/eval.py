"""``compactkit eval``: score compressors on a suite (``run``), make synthetic cases (``generate``)."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compactkit.cli._common import (
    EXIT_OK,
    _check_base_url,
    _emit_json,
    _error,
    _positive_tokens,
)
from compactkit.errors import ConfigError

__all__ = ["EXIT_GATE"]

EXIT_GATE = 3
"""``compactkit eval run`` exit code when a ``--fail-under`` / ``--fail-over`` gate failed."""

_DEFAULT = ("none", "window", "mask", "digest", "ladder")

_RUN_EPILOG = """\
exit codes: 0 every gate passed, 3 a gate failed (stderr names the compressor, the metric and
the shortfall), 2 bad input (a malformed suite names file, line and field), 1 run-time failure.

Gates apply to every compressor in the run; run just the one you gate (--compressor digest).
--fail-under NAME=VALUE: NAME is a retention class (constraint, artifact_modified,
artifact_read, error, identifier, recall, decision, continuation, update, tool_state),
overall_retention, ratio (compression, x) or judge (0-5); retention values are shares (0.95)
or percents (95%). --fail-over NAME=VALUE: stale_as_current or hallucinated (counts summed
over the suite).

--json prints the report's JSON (the keys of report.json, without "runs") plus
"gates": {"passed": bool, "failures": [{"compressor", "metric", "value", "required"}]} and,
with --report, "reports": {"json", "markdown", "html"} (paths)."""


def _register_eval(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="score compressors on an eval suite, or generate synthetic cases",
        description="Score compressors on eval suites (docs/evals.md).",
    )
    commands = parser.add_subparsers(dest="eval_command", required=True, parser_class=type(parser))
    run = commands.add_parser(
        "run",
        help="run a suite and report per-class retention, ratio, cost",
        description="Compress every case of SUITE with each compressor, score what the "
        "compacted context still holds, print a table and optionally write reports.",
        epilog=_RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "suite",
        metavar="SUITE",
        nargs="?",
        default=None,
        help="a suite file (.jsonl/.yaml) or directory (default: the bundled suite)",
    )
    run.add_argument(
        "--compressor",
        action="append",
        metavar="NAME",
        help="none, window, mask, digest, summary, ladder (repeatable; default: "
        + ", ".join(_DEFAULT)
        + ", plus summary with --summarizer-model)",
    )
    run.add_argument(
        "--repeat",
        type=_positive_tokens,
        default=1,
        metavar="K",
        help="runs per case (mean and spread over them)",
    )
    run.add_argument(
        "--concurrency",
        type=_positive_tokens,
        default=2,
        metavar="N",
        help="runs in flight at once (default 2)",
    )
    run.add_argument(
        "--report", metavar="DIR", help="write report.json, report.md, report.html here"
    )
    run.add_argument(
        "--cache",
        metavar="DIR",
        help="cache results per case x configuration here; a re-run only does what changed",
    )
    run.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fail (exit 3) when NAME's mean is below VALUE",
    )
    run.add_argument(
        "--fail-over",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fail (exit 3) when stale_as_current or hallucinated exceeds VALUE",
    )
    run.add_argument(
        "--summarizer-model",
        action="append",
        metavar="NAME",
        help="the LLM the summary (and ladder) compressor calls; repeat it to compare models "
        "side by side (reported as summary:NAME; the ladder uses the first)",
    )
    run.add_argument(
        "--judge-model",
        metavar="NAME",
        help="LLM mode: a reader and judge model grades each compacted context",
    )
    run.add_argument(
        "--base-url",
        metavar="URL",
        help="OpenAI-compatible API root for the summarizer and judge (key: OPENAI_API_KEY)",
    )
    run.add_argument(
        "--quiet",
        "-q",
        "--no-progress",
        dest="no_progress",
        action="store_true",
        help="no progress bar (default: shown when stderr is a terminal)",
    )
    run.add_argument(
        "--recall",
        action="store_true",
        help="recall mode: also count the probes one recall(query) call over the archive "
        "recovers, beside what the compacted context keeps",
    )
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    run.set_defaults(handler=_run)

    imp = commands.add_parser(
        "import",
        formatter_class=_FormatsHelp,
        help="turn agent logs into an eval suite with mechanically derived probes",
        description="Read agent logs (files, or folders walked recursively; formats detected "
        "unless --format names one) and write one eval case per conversation, its probes "
        "derived by documented rules (docs/evals.md). What cannot be mapped is reported on "
        "stderr, with progress.",
    )
    imp.add_argument("logs", nargs="+", metavar="LOGS", help="log files or folders")
    imp.add_argument(
        "--out", required=True, metavar="SUITE", help="the suite file to write (.jsonl)"
    )
    imp.add_argument(
        "--format",
        default=None,
        metavar="NAME",
        help="the logs' format (default: detected per file); one of: {formats}",
    )
    imp.add_argument(
        "--case-model",
        default=None,
        metavar="MODEL",
        help="the model whose counting the cases use (default: the log's, else gpt-4o)",
    )
    imp.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    imp.set_defaults(handler=_import)

    gen = commands.add_parser(
        "generate",
        help="write seeded synthetic cases with planted, labelled facts",
        description="Generate synthetic agent sessions (one case per domain x style x size x "
        "seed) as a JSONL suite, or one transcript for `compactkit compact`.",
    )
    gen.add_argument(
        "--domain",
        action="append",
        choices=("coding", "data", "support"),
        help="repeatable (default: coding)",
    )
    gen.add_argument(
        "--style",
        action="append",
        choices=("typed", "bash", "editor", "react"),
        help="repeatable (default: typed)",
    )
    gen.add_argument(
        "--size",
        action="append",
        type=_positive_tokens,
        metavar="TOKENS",
        help="approximate size, 2000..1000000 (repeatable; default 30000)",
    )
    gen.add_argument(
        "--seed", action="append", type=int, metavar="N", help="repeatable (default 0)"
    )
    gen.add_argument("--format", choices=("chat", "responses", "anthropic"), default="chat")
    gen.add_argument(
        "--target",
        type=_positive_tokens,
        metavar="TOKENS",
        help="the cases' compression target (default: size / 12)",
    )
    gen.add_argument(
        "--out", metavar="FILE", help="write the cases as JSONL here (default: stdout)"
    )
    gen.add_argument(
        "--transcript", metavar="FILE", help="write the first case's transcript (JSON) here instead"
    )
    gen.set_defaults(handler=_generate)


class _FormatsHelp(argparse.HelpFormatter):
    """Lists the log formats when the help is printed: reading them imports the evals, which
    every other command (``count`` first) would otherwise pay for at start-up."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = super()._get_help_string(action)
        if text and "{formats}" in text:
            text = text.replace("{formats}", ", ".join(_log_formats()))
        return text


def _log_formats() -> list[str]:
    from compactkit.evals.importers import IMPORTERS

    return list(IMPORTERS)


def _import(args: argparse.Namespace) -> int:
    from compactkit.evals import dump_cases
    from compactkit.evals.log_suite import cases_from_logs

    if args.format is not None and args.format not in _log_formats():
        raise ConfigError(
            f"--format {args.format!r} is not a log format; one of: {', '.join(_log_formats())}"
        )

    def progress(done: int, total: int, path: Path) -> None:
        if not args.quiet:
            sys.stderr.write(f"compactkit: [{done + 1}/{total}] {path}\n")

    reports = cases_from_logs(
        args.logs, format=args.format, model=args.case_model, on_file=progress
    )
    cases = [case for report in reports for case in report.cases]
    for report in reports:
        if report.error:
            sys.stderr.write(f"compactkit: skipped {report.path}: {report.error}\n")
        for skipped in report.skipped:
            sys.stderr.write(f"compactkit: {report.path}: not mapped: {skipped}\n")
    if not cases:
        raise ConfigError(
            "no eval case could be made from these logs (see the lines above); name the format "
            "with --format if detection picked the wrong one"
        )
    dump_cases(cases, args.out)
    probes = sum(len(case.probes) for case in cases)
    sys.stderr.write(
        f"compactkit: wrote {len(cases)} cases, {probes} probes to {args.out} "
        f"(run them: compactkit eval run {args.out})\n"
    )
    return EXIT_OK


def bundled_suite() -> Path:
    """The suite ``compactkit eval run`` runs when none is named (shipped with compactkit)."""
    from importlib import resources

    return Path(str(resources.files("compactkit") / "data" / "suites" / "imported-logs.jsonl"))


def _llm(model: str, base_url: str | None) -> Any:
    from compactkit.compressors.summary.llm import OpenAIChatLLM

    api_key = os.environ.get("OPENAI_API_KEY") or ("unused" if base_url else None)
    return OpenAIChatLLM(model, base_url=base_url, api_key=api_key)


def _run(args: argparse.Namespace) -> int:
    from compactkit.evals import (
        Judge,
        check_gates,
        load_suite,
        parse_gates,
        run_suite,
        summarize,
        to_markdown,
        write_reports,
    )

    _check_base_url(args.base_url)
    under = parse_gates(args.fail_under)
    over = parse_gates(args.fail_over, ceilings=True)
    suite = load_suite(args.suite if args.suite is not None else bundled_suite())
    models = list(dict.fromkeys(args.summarizer_model or []))
    llms = {m: _llm(m, args.base_url) for m in models}
    llm = llms[models[0]] if models else None
    names = args.compressor or [*_DEFAULT, *(["summary"] if llm is not None else [])]
    factories, fingerprints = _factories(names, llms, llm, args.base_url)
    judge = Judge(_llm(args.judge_model, args.base_url)) if args.judge_model else None
    if "judge" in under and judge is None:
        raise ConfigError("a judge gate needs LLM mode: give --judge-model")
    results = run_suite(
        suite,
        factories,
        repeat=args.repeat,
        concurrency=args.concurrency,
        cache_dir=args.cache,
        judge=judge,
        fingerprints=fingerprints,
        progress=False if args.no_progress else None,
        recall=args.recall,
    )
    report = summarize(results, suite=suite.name, judged=judge is not None)
    failures = check_gates(report, under, over)
    paths = write_reports(report, args.report) if args.report else {}
    if args.json:
        _emit_json(_json_report(report, failures, paths))
    else:
        sys.stdout.write(to_markdown(report))
        for kind, path in paths.items():
            sys.stdout.write(f"{kind} report: {path}\n")
    for failure in failures:
        _error(f"gate failed: {failure}")
    return EXIT_GATE if failures else EXIT_OK


def _factories(
    names: Sequence[str], llms: dict[str, Any], llm: Any, base_url: str | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The compressor factories to run, by column name, and the fingerprints of those an LLM
    drives (one summary column per summarizer model when there are several)."""
    from compactkit.evals import baseline

    factories: dict[str, Any] = {}
    fingerprints: dict[str, str] = {}
    for name in dict.fromkeys(names):
        if name == "summary" and len(llms) > 1:  # one column per summarizer model
            for model, each in llms.items():
                factories[f"summary:{model}"] = baseline("summary", llm=each)
                fingerprints[f"summary:{model}"] = f"summary/{each!r}"
            continue
        if name == "provider":
            factories[name] = baseline(name, client=_provider_client(base_url))
            continue
        factories[name] = baseline(name, llm=llm)
        if llm is not None and name in ("summary", "ladder"):
            fingerprints[name] = f"{name}/{llm!r}"
    return factories, fingerprints


def _json_report(report: dict[str, Any], failures: Sequence[Any], paths: dict[str, Any]) -> Any:
    """``eval --json``: the report without its runs, the gates, the report files written."""
    out = {k: v for k, v in report.items() if k != "runs"}
    out["gates"] = {
        "passed": not failures,
        "failures": [
            {
                "compressor": f.compressor,
                "metric": f.metric,
                "value": f.value,
                "required": f.required,
            }
            for f in failures
        ],
    }
    if paths:
        out["reports"] = {k: str(v) for k, v in paths.items()}
    return out


def _generate(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from compactkit.evals import SynthSpec, dump_cases, generate

    specs = []
    for domain, style, size, seed in itertools.product(
        args.domain or ["coding"], args.style or ["typed"], args.size or [30_000], args.seed or [0]
    ):
        try:
            specs.append(
                SynthSpec(
                    domain=domain,
                    style=style,
                    size_tokens=size,
                    seed=seed,
                    format=args.format,
                    target_tokens=args.target,
                )
            )
        except ValidationError as exc:
            error = exc.errors()[0]
            raise ConfigError(
                f"--{error['loc'][0]}: {error['msg']}".replace("size_tokens", "size")
            ) from None
    cases = [generate(spec) for spec in specs]
    if args.transcript:
        Path(args.transcript).write_text(
            json.dumps(cases[0].transcript, ensure_ascii=False), encoding="utf-8"
        )
    elif args.out:
        dump_cases(cases, args.out)
    else:
        for case in cases:
            sys.stdout.write(case.model_dump_json(exclude_none=True) + "\n")
    return EXIT_OK


def _provider_client(base_url: str | None) -> Any:
    """The client the ``provider`` compressor compacts through: OpenAI's (``--base-url``, key
    from ``OPENAI_API_KEY``), or offline an in-process fake of its compact endpoint."""
    if base_url is None:
        from compactkit.evals import FakeCompactEndpoint

        return FakeCompactEndpoint().client()
    import openai

    return openai.OpenAI(base_url=base_url, max_retries=0)
