"""docs/doctor.md shows ``compactkit doctor``'s real output on the page's own example database.

The page's Python blocks build the database; this test runs the command on it and compares the
output with the page. ``COMPACTKIT_UPDATE_DOCS=1`` rewrites the page's block instead.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from compactkit.cli.main import main
from compactkit.testing import block_network

PAGE = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"
BLOCK = re.compile(r"^```python[ \t]*(?P<flags>[^\n]*)\n(?P<code>.*?)^```", re.M | re.S)
OUTPUT = re.compile(
    r"(<!-- doctor-output:start -->\n```text\n)(?P<out>.*?)(```\n<!-- doctor-output:end -->)", re.S
)


def test_the_page_shows_what_doctor_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    page = PAGE.read_text()
    namespace: dict[str, object] = {"__name__": "docs_doctor"}
    with block_network():
        for code in (m["code"] for m in BLOCK.finditer(page) if "no-run" not in m["flags"]):
            exec(compile(code, "doctor.md", "exec"), namespace)
    capsys.readouterr()
    assert main(["doctor", "agent.db"]) == 1
    printed = capsys.readouterr().out
    shown = OUTPUT.search(page)
    assert shown is not None, "docs/doctor.md lost its doctor-output markers"
    if os.environ.get("COMPACTKIT_UPDATE_DOCS") == "1":
        PAGE.write_text(page[: shown.start("out")] + printed + page[shown.end("out") :])
        return
    assert shown["out"] == printed, "docs/doctor.md is stale: rerun with COMPACTKIT_UPDATE_DOCS=1"
    for name in ("crashed", "windowed", "lossy", "alice", "bob", "user-42"):  # each problem
        assert f"session {name}: " in printed and f"session {name}: healthy" not in printed
    assert "session healthy: healthy" in printed
