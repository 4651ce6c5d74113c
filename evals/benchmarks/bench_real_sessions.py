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

Run: ``python evals/benchmarks/bench_real_sessions.py`` (``--tiny`` for CI's smoke run).
"""

from __future__ import annotations

import argparse
import json
import lzma
import statistics
from pathlib import Path
from typing import Any

from bench_plain_lists import MODEL, Loop, cold, raw_pass, run_loop, warm_up

from compactkit.integrations import MessageCompactor, compact_messages

DATA = Path(__file__).resolve().parent / "data" / "mini-swe-agent-deepseek.jsonl.xz"


def real_session(total: int) -> list[tuple[dict[str, Any], bool]]:
    """The first ``total`` messages of the bundled real session, each with whether a model call
    comes right after it (before every assistant message, as the agent called its model)."""
    with lzma.open(DATA, "rt", encoding="utf-8") as lines:
        messages = [json.loads(line) for line, _ in zip(lines, range(total), strict=False)]
    return [
        (message, index + 1 < len(messages) and messages[index + 1]["role"] == "assistant")
        for index, message in enumerate(messages)
    ]


def _fresh(pairs: list[tuple[dict[str, Any], bool]]) -> list[tuple[dict[str, Any], bool]]:
    return [(dict(message), call) for message, call in pairs]


def measure(size: int, runs: int) -> dict[str, Any]:
    pairs = real_session(size)
    messages = [message for message, _ in pairs]
    warm_up(MessageCompactor, compact_messages)
    rows: list[dict[str, Any]] = []
    for _ in range(runs):
        cold()
        raw = raw_pass(messages)
        cold()
        stateful = run_loop(_fresh(pairs), MessageCompactor(MODEL))
        cold()
        stateless = run_loop(_fresh(pairs), lambda ms: compact_messages(ms, model=MODEL))
        rows.append(
            {"raw": raw, "stateful": _loop(stateful, raw), "stateless": _loop(stateless, raw)}
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


def report(result: dict[str, Any]) -> None:
    runs = result["runs"]
    print(
        f"real session: {result['messages']:,} messages of real mini-SWE-agent runs, "
        f"{result['calls']:,} model calls, {len(runs)} run(s) (medians, ranges)"
    )

    def line(label: str, values: list[float], unit: str = "", limit: str = "") -> None:
        low, high = min(values), max(values)
        print(
            f"   {label}: {statistics.median(values):.2f}{unit} ({low:.2f}-{high:.2f})"
            + (f" (target {limit})" if limit else "")
        )

    print(f"   raw pass: {statistics.median(r['raw'] for r in runs) * 1e3:.0f} ms")
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
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    size = args.size or (2_000 if args.tiny else 10_000)
    result = measure(size, args.runs or (1 if args.tiny else 3))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)


if __name__ == "__main__":
    main()
