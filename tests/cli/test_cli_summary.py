"""``compactkit compact --compressor summary`` against a real HTTP server on 127.0.0.1.

The CLI builds its own ``openai`` client (httpx2), which respx cannot patch, so the tests run a
tiny OpenAI-compatible server in a thread (in-process runs) and in the test process for a child
``python -m compactkit`` run. Nothing leaves the machine: ``block_network`` allows only loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from compactkit.cli import main
from compactkit.formats.transcript import dump_transcript, load_transcript
from compactkit.items.snapshot import unseal_summary
from compactkit.testing import block_network

EXAMPLE = Path(__file__).resolve().parents[2] / "compactkit/data/examples/coding_session.json"
UPDATE = """\
## Goal
- Add retries with exponential backoff to the HTTP transport.

## Current state
- Retries implemented; tests being fixed.

## Next steps
- Run the full test suite.
"""


class FakeOpenAI:
    """An OpenAI-compatible ``/chat/completions`` endpoint that answers from a script."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.status = 200
        self.reply = UPDATE
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                fake.requests.append(json.loads(body))
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                if fake.status != 200:
                    payload: dict[str, Any] = {"error": {"message": "upstream exploded"}}
                else:
                    payload = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "fake",
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": fake.reply},
                            }
                        ],
                    }
                data = json.dumps(payload).encode()
                self.send_response(fake.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("retry-after", "0")  # retried at once: the test never sleeps
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with block_network(), FakeOpenAI() as fake:
        yield fake


def compact(
    server: FakeOpenAI, *extra: str, source: Path = EXAMPLE, target: int = 12000
) -> list[str]:
    return [
        "compact",
        str(source),
        "--model",
        "gpt-4o",
        "--compressor",
        "summary",
        "--target",
        str(target),
        "--summarizer-model",
        "summarizer-small",
        "--base-url",
        server.base_url,
        "--json",
        *extra,
    ]


def test_compact_with_summary(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert main(compact(server)) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"] == "compacted" and out["error"] is None
    assert out["tokens_after"] <= 12000 < out["tokens_before"]
    assert out["folded"] > 0
    assert "Add retries with exponential backoff" in out["summary"]
    assert out["details"]["prompt_version"] == "summary-v2"
    assert out["details"]["summarizer_calls"] == len(server.requests) >= 1
    marked = [m for m in out["messages"] if unseal_summary(m.get("content") or "") is not None]
    assert len(marked) == 1 and unseal_summary(marked[0]["content"]) == out["summary"]
    assert out["messages"][0]["role"] == "system" and out["messages"][1] is marked[0]
    request = server.requests[0]
    assert request["model"] == "summarizer-small"
    assert request["messages"][0]["role"] == "system"
    assert "<conversation-part" in request["messages"][1]["content"]
    assert server.headers[0]["authorization"] == "Bearer sk-test"


def test_summary_written_earlier_is_merged_into(
    server: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    first = tmp_path / "first.json"
    assert main([*compact(server), "--out", str(first)]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    server.reply = "## Decisions and why\n- Kept urllib3 retries off.\n\n## Current state\n- Next."
    calls = len(server.requests)
    assert main(compact(server, source=first, target=7000)) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"] == "compacted", out["error"]
    assert len(server.requests) > calls
    assert "Add retries with exponential backoff" in out["summary"]  # the old entries stay
    assert "Kept urllib3 retries off." in out["summary"]
    assert sum(unseal_summary(m.get("content") or "") is not None for m in out["messages"]) == 1
    request = server.requests[calls]["messages"][1]["content"]
    assert summary.strip() in request  # the old summary reached the summarizer whole


def test_summarizer_failure_exits_1_and_drops_nothing(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.status = 500
    assert main(compact(server)) == 1
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["outcome"] == "failed" and "HTTP 500" in out["error"]
    assert out["folded"] == 0 and out["summary"] == ""
    assert out["tokens_after"] == out["tokens_before"]
    assert out["messages"] == dump_transcript(load_transcript(EXAMPLE))["messages"]  # all kept
    assert len(server.requests) == 3  # one request and two retries
    assert "HTTP 500" in captured.err


def test_unusable_answer_is_a_failure(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.reply = "Error generating summary: context length exceeded"
    assert main(compact(server)) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["outcome"] == "failed" and out["summary"] == ""


def test_missing_api_key_is_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    args = ["compact", str(EXAMPLE), "--model", "gpt-4o", "--compressor", "summary"]
    assert main([*args, "--target", "12000", "--summarizer-model", "gpt-4.1-mini"]) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY" in err and err.count("\n") == 1


def test_missing_summarizer_model_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compact", str(EXAMPLE), "--model", "gpt-4o", "--compressor", "summary"]
    assert main(args) == 2
    assert "--summarizer-model" in capsys.readouterr().err


def test_child_process_reaches_the_local_server(server: FakeOpenAI, tmp_path: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": "sk-child"}
    out_file = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "compactkit", *compact(server), "--out", str(out_file)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "compacted"
    messages = json.loads(out_file.read_text())
    messages = messages["messages"] if isinstance(messages, dict) else messages
    assert any(unseal_summary(m.get("content") or "") is not None for m in messages)
    assert server.headers[-1]["authorization"] == "Bearer sk-child"
