"""Benchmark: governing a plain message list in a loop on REAL agent trajectories (issue 35).

``bench_plain_lists.py`` measures the plain-list paths on a deterministic synthetic session.
This one runs the same loop on what real agents wrote: 10,000 OpenAI Chat Completions messages
of 62 mini-SWE-agent SWE-bench runs (deepseek-chat, bash tool calls with their real, untrimmed
outputs), concatenated as one long-running agent's session (``data/README.md``: source, commit,
licence). Before every model call the loop governs the whole list and keeps ``turn.history``
(``messages = [*turn.history, *new]``, as the README's loop does), with ``MessageCompactor``
(stateful) and with the stateless ``compact_messages``, against one raw tokenization pass of the
session (every message's text encoded once), measured in the same run. Targets, as for the
synthetic session: the whole session <= 3x the raw pass; flat (mean of the last tenth of the
calls / the first tenth <= 1.2); stateless <= 1.5x stateful. Times are the thread's CPU time;
compactkit's encoding and the modules its first compaction imports are loaded before the loops
(``bench_plain_lists.warm_up``), as the raw pass's encoding is.

Beside the totals: how many calls compacted, the share of the time they took, and the mean of
the calls that did not (where the time goes on real sessions: their outputs are large and their
commands many, so each fold reads and summarises more than on the synthetic session).

Also on the real session, as ``bench_plain_lists.py`` measures them on the synthetic one:
**the cold call** (one ``compact_messages`` with compaction off on the whole list in a fresh
process, against LangChain ``trim_messages`` with its approximate counter from the same dicts
and on LangChain messages built before the call; process CPU time of the call alone, median of
fresh processes; target <= 2x) and **memory** (the session governed to the end by
``MessageCompactor``, the list kept whole, against the raw dicts; tracemalloc in a fresh process
each; target <= 1.5x). Tool-heavy sessions hold more items per message than the synthetic one.

The raw pass is measured three times in each run (before each loop and after the last) and each
loop is divided by the fastest, as ``bench_plain_lists.py`` does: the process's first pass also
builds tiktoken's encoding (+0.15 s), which a single measure counted in the first run's ratio.

Your own trajectories: ``--messages FILE`` (JSON lines of Chat Completions messages, ``.xz``
allowed; or ``COMPACTKIT_BENCH_MESSAGES=FILE``, which the fresh processes inherit) replaces the
bundled session in every part, so anyone can re-measure the claims on an agent we never saw.

Run: ``python evals/benchmarks/bench_real_sessions.py`` (``--tiny`` for CI's smoke run).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import statistics
from pathlib import Path
from typing import Any

import bench_plain_lists
from bench_plain_lists import HERE, MODEL, Loop, cold, fresh_process, raw_pass, run_loop, warm_up

from compactkit.integrations import MessageCompactor, compact_messages

DATA = Path(__file__).resolve().parent / "data" / "mini-swe-agent-deepseek.jsonl.xz"


def real_session(total: int) -> list[tuple[dict[str, Any], bool]]:
    """The first ``total`` messages of the bundled real session, each with whether a model call
    comes right after it (before every assistant message, as the agent called its model)."""
    path = Path(os.environ.get("COMPACTKIT_BENCH_MESSAGES") or DATA)
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        messages = [json.loads(line) for line, _ in zip(lines, range(total), strict=False)]
    return [
        (message, index + 1 < len(messages) and messages[index + 1]["role"] == "assistant")
        for index, message in enumerate(messages)
    ]


def _source() -> str:
    own = os.environ.get("COMPACTKIT_BENCH_MESSAGES")
    return f"your trajectories ({Path(own).name})" if own else "real mini-SWE-agent runs"


def _fresh(pairs: list[tuple[dict[str, Any], bool]]) -> list[tuple[dict[str, Any], bool]]:
    return [(dict(message), call) for message, call in pairs]


def measure(size: int, runs: int) -> dict[str, Any]:
    pairs = real_session(size)
    messages = [message for message, _ in pairs]
    warm_up(MessageCompactor, compact_messages)
    rows: list[dict[str, Any]] = []
    for _ in range(runs):
        passes = []
        cold()
        passes.append(raw_pass(messages))
        cold()
        stateful = run_loop(_fresh(pairs), MessageCompactor(MODEL))
        cold()
        passes.append(raw_pass(messages))
        cold()
        stateless = run_loop(_fresh(pairs), lambda ms: compact_messages(ms, model=MODEL))
        cold()
        passes.append(raw_pass(messages))
        raw = min(passes)
        rows.append(
            {
                "raw": raw,
                "raw_passes": passes,
                "stateful": _loop(stateful, raw),
                "stateless": _loop(stateless, raw),
            }
        )
    return {"messages": len(pairs), "calls": rows[0]["stateful"]["calls"], "runs": rows}


def _loop(loop: Loop, raw: float) -> dict[str, Any]:
    return {
        "seconds": loop.total,
        "x_raw": loop.total / raw,
        "flatness": loop.flatness,
        "calls": loop.calls,
        "compactions_first_last_tenth": list(loop.compactions),
        "compaction_share_first_last_tenth": list(loop.compaction_share),
        "plain_call_ms_first_last_tenth": [t * 1e3 for t in loop.plain],
    }


_COLD = """
import json, sys, time
sys.path.insert(0, {here!r})
from bench_real_sessions import real_session
messages = [m for m, _ in real_session({size})]
kind = {kind!r}
if kind == "compactkit":
    from compactkit.integrations import compact_messages
    start = time.process_time()
    compact_messages(messages, model={model!r}, compaction=False)
else:
    from langchain_core.messages import convert_to_messages
    from langchain_core.messages.utils import count_tokens_approximately, trim_messages
    from compactkit.budget import budget_for
    budget = budget_for({model!r}).usable_input
    options = dict(max_tokens=budget, token_counter=count_tokens_approximately, strategy="last",
                   include_system=True, start_on="human")
    trim_messages(convert_to_messages(messages[:2]), **options)  # its imports: not timed
    ready = convert_to_messages(messages) if kind == "trim_messages, messages ready" else None
    start = time.process_time()
    trim_messages(ready if ready is not None else convert_to_messages(messages), **options)
print(json.dumps(time.process_time() - start))
"""

COLD_KINDS = ("compactkit", "trim_messages", "trim_messages, messages ready")


def cold_call(size: int, runs: int) -> dict[str, Any]:
    """Each kind's call in ``runs`` fresh processes, the kinds interleaved: CPU seconds."""
    seconds: dict[str, list[float]] = {kind: [] for kind in COLD_KINDS}
    for _ in range(runs):
        for kind in COLD_KINDS:
            code = _COLD.format(here=str(HERE), size=size, kind=kind, model=MODEL)
            seconds[kind].append(fresh_process(code))
    return {"messages": size, "seconds": seconds}


def memory(size: int) -> dict[str, Any]:
    return bench_plain_lists.memory(size, session="bench_real_sessions.real_session")


def report_cold(result: dict[str, Any]) -> None:
    seconds = {kind: statistics.median(values) for kind, values in result["seconds"].items()}
    runs = len(result["seconds"]["compactkit"])
    print(
        f"cold call, fresh process, {result['messages']:,} real messages (process CPU time of "
        f"the call, medians of {runs}):"
    )
    for peer, label in (
        ("trim_messages", "same dicts"),
        ("trim_messages, messages ready", "LangChain messages built before the call"),
    ):
        print(
            f"   {label}: compactkit {seconds['compactkit'] * 1e3:.1f} ms vs {peer} "
            f"{seconds[peer] * 1e3:.1f} ms: {seconds['compactkit'] / seconds[peer]:.2f}x "
            "(target <= 2)"
        )


def report_memory(result: dict[str, Any]) -> None:
    print(
        f"memory, {result['messages']:,} real messages governed to the end: "
        f"{result['governed_mib']:.1f} MiB vs {result['raw_mib']:.1f} MiB of raw dicts: "
        f"{result['ratio']:.2f}x (target <= 1.5); gc objects {result['gc_objects']:,} vs "
        f"{result['raw_gc_objects']:,}"
    )


def report(result: dict[str, Any]) -> None:
    runs = result["runs"]
    print(
        f"real session: {result['messages']:,} messages of {_source()}, "
        f"{result['calls']:,} model calls, {len(runs)} run(s) (medians, ranges)"
    )

    def line(label: str, values: list[float], unit: str = "", limit: str = "") -> None:
        low, high = min(values), max(values)
        print(
            f"   {label}: {statistics.median(values):.2f}{unit} ({low:.2f}-{high:.2f})"
            + (f" (target {limit})" if limit else "")
        )

    passes = [p * 1e3 for r in runs for p in r["raw_passes"]]
    print(
        f"   raw pass: {statistics.median(r['raw'] for r in runs) * 1e3:.0f} ms (each run divides "
        f"by the fastest of its 3 passes; all passes {min(passes):.0f}-{max(passes):.0f} ms)"
    )
    for kind in ("stateful", "stateless"):
        print(f" {kind}:")
        line("whole session / raw pass", [r[kind]["x_raw"] for r in runs], "x", "<= 3")
        line("last / first tenth", [r[kind]["flatness"] for r in runs], "", "<= 1.2")
        first = runs[0][kind]
        print(
            "   compactions in the first / last tenth: "
            f"{first['compactions_first_last_tenth']}, their share of the tenth's time "
            f"{[round(s, 2) for s in first['compaction_share_first_last_tenth']]}; "
            "calls that did not compact, ms: "
            f"{[round(t, 3) for t in first['plain_call_ms_first_last_tenth']]}"
        )
    line(
        "stateless / stateful",
        [r["stateless"]["seconds"] / r["stateful"]["seconds"] for r in runs],
        "x",
        "<= 1.5",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="CI smoke run (a few seconds)")
    parser.add_argument("--runs", type=int, default=None, help="repetitions (default 3)")
    parser.add_argument("--size", type=int, default=None, help="messages (default 10,000)")
    parser.add_argument(
        "--messages",
        type=Path,
        default=None,
        help="JSON lines of Chat Completions messages (.xz allowed) instead of the bundled session",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--only", choices=["per-call", "cold", "memory"], default=None)
    args = parser.parse_args()
    if args.messages is not None:
        if not args.messages.is_file():
            parser.error(f"--messages {args.messages}: no such file")
        os.environ["COMPACTKIT_BENCH_MESSAGES"] = str(args.messages.resolve())
    size = args.size or (2_000 if args.tiny else 10_000)
    runs = args.runs or (1 if args.tiny else 3)
    results: dict[str, Any] = {}
    if args.only in (None, "per-call"):
        results["per_call"] = measure(size, runs)
    if args.only in (None, "cold"):
        results["cold"] = cold_call(size, runs)
    if args.only in (None, "memory"):
        results["memory"] = memory(size)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, show in (("per_call", report), ("cold", report_cold), ("memory", report_memory)):
        if name in results:
            show(results[name])


if __name__ == "__main__":
    main()
