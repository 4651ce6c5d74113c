"""``compactkit compact --dry-run`` (issue 29): what a compaction would do, nothing written or
called; a deterministic dry run predicts the real run's numbers."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compactkit.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "compactkit/data/examples/coding_session.json"
DRY_KEYS = {
    "dry_run",
    "compressor",
    "changed",
    "kept",
    "masked",
    "folded",
    "kept_count",
    "masked_count",
    "folded_count",
    "tokens_before",
    "tokens_after",
    "tokens_after_estimated",
    "summarizer_calls",
    "summarizer_input_tokens",
    "cost",
    "target",
    "clamped",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(["compact", str(EXAMPLE), "--model", "gpt-4o", "--target", "12000", *argv])
    captured = capsys.readouterr()
    try:
        out = json.loads(captured.out) if captured.out.strip() else None
    except json.JSONDecodeError:
        out = captured.out
    return code, out, captured.err


@pytest.mark.parametrize("compressor", ["window", "mask", "digest", "ladder"])
def test_a_dry_run_predicts_the_real_run(
    capsys: pytest.CaptureFixture[str], compressor: str
) -> None:
    code, preview, _ = run(capsys, "--compressor", compressor, "--dry-run", "--json")
    assert code == 0
    assert set(preview) == DRY_KEYS
    code, real, _ = run(capsys, "--compressor", compressor, "--json")
    assert code == 0
    assert preview["dry_run"] is True and preview["tokens_after_estimated"] is False
    assert preview["summarizer_calls"] == 0 and preview["cost"] == 0.0
    assert preview["tokens_before"] == real["tokens_before"]
    assert preview["tokens_after"] == real["tokens_after"]
    assert preview["compressor"] == real["compressor"]
    assert preview["changed"] is (real["outcome"] == "compacted")
    if compressor == "mask":
        assert preview["masked_count"] > 0 and preview["folded_count"] == 0
    else:
        assert preview["folded_count"] > 0
        assert preview["folded"].startswith("#")


class _Counting(http.server.BaseHTTPRequestHandler):
    requests = 0

    def do_POST(self) -> None:
        type(self).requests += 1
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def summarizer_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_dry_run_of_the_summary_sends_no_request(
    capsys: pytest.CaptureFixture[str],
    summarizer_server: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _Counting.requests = 0
    argv = ["--compressor", "summary", "--summarizer-model", "gpt-4o-mini"]
    code, preview, err = run(capsys, *argv, "--base-url", summarizer_server, "--dry-run", "--json")
    assert code == 0, err
    assert _Counting.requests == 0
    assert preview["summarizer_calls"] >= 1 and preview["summarizer_input_tokens"] > 0
    assert preview["tokens_after_estimated"] is True
    assert preview["tokens_after"] < preview["tokens_before"]
    # Without --base-url nor a key it still previews: no request is made, so no key is needed.
    code, plain, err = run(capsys, *argv, "--dry-run")
    assert code == 0, err
    assert "dry run: summary would compact" in plain
    assert f"summarizer calls: {preview['summarizer_calls']} " in plain
    assert "(estimate)" in plain
    assert list(tmp_path.iterdir()) == []


def test_dry_run_with_out_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "out.json"
    code, _, err = run(capsys, "--compressor", "window", "--dry-run", "--out", str(out_file))
    assert code == 2
    assert "--dry-run writes nothing" in err
    assert not out_file.exists()
