"""Shared by the eval tests (tests/evals): a loopback OpenAI-compatible server that summarizes,
reads and judges deterministically, and where the shipped suites are."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from compactkit.testing import block_network

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "evals" / "suites"
Reply = Callable[[list[dict[str, str]]], str]


def fake_reply(messages: list[dict[str, str]]) -> str:
    """What the fake model answers: a summarizer update, a reader's answers or a judge's grades.

    The summarizer copies the exact facts it is given (so it keeps what the digest keeps) and
    writes the two sections it must always write; the reader answers "unknown" except where the
    context names a file; the judge scores 4 when the answer is not "unknown", else 1.
    """
    system, user = messages[0]["content"], messages[-1]["content"]
    if system.startswith("You are an AI agent resuming"):
        ids = re.findall(r"^\[(\w+)\]", user.split("<questions>")[-1], re.M)
        answers = [
            {"id": i, "answer": "unknown" if i != "artifact" else "see the files in context"}
            for i in ids
        ]
        return json.dumps({"answers": answers})
    if system.startswith("You grade"):
        grades = []
        for block in user.split("\n\n["):
            match = re.match(r"\[?(\w+)\]", block)
            if match is None:
                continue
            unknown = block.rstrip().endswith("unknown")
            score = 1 if unknown else 4
            grades.append(
                {
                    "id": match.group(1),
                    "scores": {
                        d: score
                        for d in (
                            "accuracy",
                            "context_awareness",
                            "artifact_trail",
                            "completeness",
                            "continuity",
                            "instruction_following",
                        )
                    },
                    "reason": "the answer says unknown" if unknown else "the answer names files",
                }
            )
        return json.dumps({"grades": grades})
    facts = user.split("<exact-facts>")[-1].split("</exact-facts>")[0].strip()
    return (
        f"{facts}\n\n## Current state\n- Work continues on the task.\n\n"
        "## Next steps\n- Continue with the next step."
    )


def completion(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class FakeServer:
    """A Chat Completions endpoint on 127.0.0.1; ``requests`` records every body."""

    def __init__(self, reply: Reply = fake_reply) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                data = json.dumps(completion(server.reply(body["messages"]))).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture(autouse=True)
def offline() -> Iterator[None]:
    """No real network in eval tests (loopback stays reachable for the fake server); a module
    enables it by importing it."""
    with block_network():
        yield
