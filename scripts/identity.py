"""Hash what a governed loop sends, keeps and counts on every model call: a speed change that
claims "no behaviour changed" prints the same hashes before and after.

    python scripts/identity.py [synthetic|real|FILE.jsonl[.xz]] [--size N] [--mode both]

The loop is the benchmarks' (``evals/benchmarks/bench_plain_lists.run_loop``): before every
model call the whole list is governed and ``turn.history`` kept (``messages = [*history,
*new]``), with ``MessageCompactor`` (stateful) and ``compact_messages`` (stateless). Each call's
``send``, ``history``, ``system``, ``tokens`` and ``compacted`` go into one SHA-256; a summary's
per-process random signature (``sig="…"``) is blanked, so fresh processes agree. Sessions:
``synthetic`` (the deterministic session of ``bench_plain_lists.py``), ``real`` (the bundled
mini-SWE-agent trajectories) or a file of Chat Completions messages (JSON lines, ``.xz``
allowed). Prints one line per mode: ``<session> <mode> <hash> compactions <n> calls <n>``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "evals" / "benchmarks"))

import bench_plain_lists  # noqa: E402
import bench_real_sessions  # noqa: E402

from compactkit.integrations import MessageCompactor, compact_messages  # noqa: E402

_SIG = re.compile(r'sig=\\?"[0-9]+\\?"')


def session(kind: str, size: int) -> list[tuple[dict[str, Any], bool]]:
    """The first ``size`` messages of ``kind``, each with whether a model call follows it."""
    if kind == "synthetic":
        return bench_plain_lists.chat_session(size)
    if kind != "real":
        os.environ["COMPACTKIT_BENCH_MESSAGES"] = kind
    return bench_real_sessions.real_session(size)


def identity(
    pairs: list[tuple[dict[str, Any], bool]], govern: Callable[[list[Any]], Any]
) -> tuple[str, int, int]:
    """The loop's hash, how many calls compacted and how many calls it made."""
    digest = hashlib.sha256()
    messages: list[Any] = []
    new: list[Any] = []
    compactions = calls = 0
    for message, model_call in pairs:
        new.append(dict(message))
        if not model_call:
            continue
        turn = govern([*messages, *new])
        calls += 1
        compactions += bool(turn.compacted)
        seen = {
            "send": turn.send,
            "history": turn.history,
            "system": turn.system,
            "tokens": turn.tokens,
            "compacted": turn.compacted,
        }
        text = json.dumps(seen, sort_keys=True, default=repr)
        digest.update(_SIG.sub("sig", text).encode())
        messages, new = turn.history, []
    return digest.hexdigest()[:16], compactions, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("session", nargs="?", default="synthetic")
    parser.add_argument("--size", type=int, default=10_000, help="messages (default 10,000)")
    parser.add_argument("--mode", choices=("both", "stateful", "stateless"), default="both")
    parser.add_argument("--model", default=bench_plain_lists.MODEL)
    args = parser.parse_args()
    pairs = session(args.session, args.size)
    governors: dict[str, Callable[[list[Any]], Any]] = {
        "stateful": MessageCompactor(args.model),
        "stateless": lambda messages: compact_messages(messages, model=args.model),
    }
    for mode, govern in governors.items():
        if args.mode in ("both", mode):
            found, compactions, calls = identity(pairs, govern)
            print(args.session, mode, found, "compactions", compactions, "calls", calls, flush=True)


if __name__ == "__main__":
    main()
