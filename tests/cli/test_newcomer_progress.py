"""Progress on stderr (issue 19): a long summary compaction and a large ``inspect`` say how far
they are when stderr is a terminal; ``--quiet`` or a stderr that is not a terminal turns it off,
and stdout (the command's output) never carries it.

``TTY_COMPATIBLE=1`` is rich's switch for "treat this as a terminal"; pytest's captured stderr
is not one, so the default case checks that nothing is shown there.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sql_support import sqlite_database

from compactkit.cli import main
from compactkit.items import FunctionCall, Message
from compactkit.sql.memory import SQLMemory
from compactkit.testing import block_network

ANSWER = "## Goal\n- Port the billing service.\n\n## Current state\n- Half the modules ported.\n"


class _Summarizer(ThreadingHTTPServer):
    """A loopback OpenAI-compatible ``/chat/completions`` that always answers ``ANSWER``."""

    calls = 0

    def __init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                server.calls += 1
                message = {"role": "assistant", "content": ANSWER}
                choice = {"index": 0, "finish_reason": "stop", "message": message}
                body = json.dumps(
                    {"id": "c", "object": "chat.completion", "created": 0, "model": "m"}
                    | {"choices": [choice]}
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}/v1"


@pytest.fixture
def summarizer() -> Iterator[_Summarizer]:
    with block_network():
        server = _Summarizer()
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield server
        finally:
            server.shutdown()
            server.server_close()
            thread.join()


@pytest.fixture
def long_transcript(tmp_path: Path) -> Path:
    """~100k tokens of tool work: more than one 32k-token summarizer request can hold."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You port services."}]
    for n in range(60):
        output = " ".join(f"module_{n}_line_{i} ported ok" for i in range(300))
        messages += [
            {"role": "user", "content": f"port module {n}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "port", "arguments": json.dumps({"module": n})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": output},
            {"role": "assistant", "content": f"module {n} ported"},
        ]
    path = tmp_path / "long.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def _compact(path: Path, server: _Summarizer, *extra: str) -> list[str]:
    return [
        "compact",
        str(path),
        "--model",
        "gpt-4o",
        "--compressor",
        "summary",
        "--target",
        "8000",
        "--summarizer-model",
        "summarizer-small",
        "--base-url",
        server.base_url,
        "--json",
        *extra,
    ]


def test_summary_compaction_shows_its_chunks_on_a_terminal(
    summarizer: _Summarizer,
    long_transcript: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert main(_compact(long_transcript, summarizer)) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)  # stdout is the JSON alone: the bar went to stderr
    chunks = out["details"]["chunks"]
    assert chunks >= 2 and summarizer.calls == chunks
    assert "summarizing" in captured.err
    assert f"chunk 1 of {chunks}" in captured.err
    assert f"chunk {chunks} of {chunks}" in captured.err
    assert f"chunk {chunks + 1} of" not in captured.err


def test_quiet_turns_the_progress_off(
    summarizer: _Summarizer,
    long_transcript: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert main([*_compact(long_transcript, summarizer), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["outcome"] == "compacted"
    assert captured.err == ""


def test_no_progress_when_stderr_is_not_a_terminal(
    summarizer: _Summarizer,
    long_transcript: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    assert main(_compact(long_transcript, summarizer)) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["details"]["chunks"] >= 2
    assert captured.err == ""


@pytest.fixture
def session_url(tmp_path: Path) -> str:
    url = sqlite_database(tmp_path).url
    memory = SQLMemory(url, "big")
    for n in range(200):
        memory.add_user_input(f"step {n}")
        memory.add_output_items([FunctionCall(call_id=f"c{n}", name="run", arguments="{}")])
        memory.add_tool_output(f"c{n}", f"ok {n}")
        memory.add_output_items([Message(role="assistant", content=f"done {n}")])
    return url


@pytest.mark.parametrize("json_flag", [(), ("--json",)])
def test_inspect_shows_its_steps_on_a_terminal_unless_quiet(
    session_url: str,
    json_flag: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert main(["inspect", session_url, "big", *json_flag]) == 0
    shown = capsys.readouterr()
    assert "reading 800 active items" in shown.err
    assert "session big" not in shown.out.splitlines()[-1]  # no bar text at the end of stdout

    assert main(["inspect", session_url, "big", *json_flag, "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    assert quiet.out == shown.out  # the same output either way

    monkeypatch.delenv("TTY_COMPATIBLE")
    assert main(["inspect", session_url, "big", *json_flag]) == 0
    assert capsys.readouterr().err == ""


def test_without_rich_the_progress_is_one_line_rewritten(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from compactkit.cli._progress import Progress

    monkeypatch.setitem(sys.modules, "rich.console", None)  # import fails: rich not installed
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    with Progress("summarizing") as progress:
        progress.update(1, 3, "chunk 2 of 3")
    err = capsys.readouterr().err
    assert "\rsummarizing 1/3 chunk 2 of 3" in err
    assert err.endswith("\r\x1b[K")  # erased at the end
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    with Progress("summarizing") as progress:
        progress.update(1, 3)
    assert capsys.readouterr().err == ""
