"""Benchmark: every baseline side by side on an eval suite, the LLM summary through a fake server.

Runs ``none``, ``window``, ``mask``, ``digest``, ``ladder``, LangChain's ``trim_messages`` (through
``as_compressor``, trimmed to each case's target by its approximate counter) and ``summary`` — the LLM summary compressor talking to a loopback
OpenAI-compatible server whose "model" copies the exact facts it is given and writes the two
sections it must always write — and prints the report's tables (per-class retention, compression
ratio in exact tokens, stale values presented as current, hallucinated identifiers, summarizer
calls and tokens, wall time). The fake makes the summary's numbers a floor for a real model,
which may paraphrase (lose exact strings) or add what the digest misses.

Run: ``python evals/benchmarks/bench_evals.py [SUITE] [--sizes 80000 150000 300000] [--report DIR]``
(default suite: ``evals/suites/synthetic.yaml``; ``--sizes`` generates coding cases of those
sizes in each agent style instead, compressed to an 8,000-token target). ``--tiny`` runs two
small generated cases, for CI's smoke run.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from compactkit import OpenAIChatLLM
from compactkit.evals import (
    STYLES,
    Suite,
    SynthSpec,
    as_compressor,
    baseline,
    generate,
    load_suite,
    run_suite,
    summarize,
    to_markdown,
    write_reports,
)

ROOT = Path(__file__).resolve().parents[2]


def _fake_summary(messages: list[dict[str, str]]) -> str:
    user = messages[-1]["content"]
    facts = user.split("<exact-facts>")[-1].split("</exact-facts>")[0].strip()
    return f"{facts}\n\n## Current state\n- Work continues.\n\n## Next steps\n- Continue."


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answer = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": _fake_summary(body["messages"])},
                }
            ],
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def _trim(messages: list[dict[str, Any]], max_tokens: int) -> Any:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    return trim_messages(
        messages,
        max_tokens=max_tokens,
        token_counter=count_tokens_approximately,
        strategy="last",
        include_system=True,
        start_on="human",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("suite", nargs="?", default=str(ROOT / "evals/suites/synthetic.yaml"))
    parser.add_argument("--sizes", type=int, nargs="*", help="generated coding cases instead")
    parser.add_argument("--report", help="write report.json/.md/.html here")
    parser.add_argument("--tiny", action="store_true", help="two small cases (CI smoke run)")
    args = parser.parse_args(argv)
    if args.tiny:
        cases = tuple(generate(SynthSpec(style=s, size_tokens=4000, seed=1)) for s in STYLES[:2])
        suite = Suite(name="tiny", cases=cases)
    elif args.sizes:
        cases = tuple(
            generate(SynthSpec(style=s, size_tokens=n, seed=1, target_tokens=8000))
            for n in args.sizes
            for s in STYLES
        )
        suite = Suite(name=f"coding {args.sizes}", cases=cases)
    else:
        suite = load_suite(args.suite)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        llm = OpenAIChatLLM(
            "fake-summarizer",
            base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
            api_key="unused",
        )
        compressors = {n: baseline(n) for n in ("none", "window", "mask", "digest", "ladder")}
        compressors["summary"] = baseline("summary", llm=llm)
        try:
            import langchain_core  # noqa: F401

            compressors["trim_messages"] = lambda s: as_compressor(  # sized to the case's target
                functools.partial(_trim, max_tokens=s.target_tokens), name="trim_messages"
            )(s)
        except ImportError:
            print("langchain-core not installed: trim_messages skipped", file=sys.stderr)
        results = run_suite(suite, compressors, concurrency=2)
    finally:
        server.shutdown()
        server.server_close()
    report = summarize(results, suite=suite.name)
    print(to_markdown(report))
    if args.report:
        write_reports(report, args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
