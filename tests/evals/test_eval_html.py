"""The HTML report renders in a real browser: headless Chromium takes a screenshot of it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from eval_support import offline  # noqa: F401  (autouse: no network)
from png_support import pixels

from compactkit.evals import Suite, SynthSpec, baseline, generate, run_suite, summarize
from compactkit.evals._html import _COLORS
from compactkit.evals.report import write_reports

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_the_report_page_renders_with_readable_charts(tmp_path: Path) -> None:
    cases = tuple(
        generate(SynthSpec(domain=d, size_tokens=8000, seed=i))  # type: ignore[arg-type]
        for i, d in enumerate(("coding", "data", "support"))
    )
    names = ("none", "window", "mask", "digest")
    results = run_suite(Suite(name="html", cases=cases), {n: baseline(n) for n in names})
    paths = write_reports(summarize(results, suite="html"), tmp_path)
    html = paths["html"].read_text(encoding="utf-8")
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://', "")
    shot = tmp_path / "report.png"
    subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            "--window-size=1200,1100",
            paths["html"].as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    width, height, rows = pixels(shot.read_bytes())
    assert (width, height) == (1200, 1100)
    channels = len(rows[0]) // width
    counts = dict.fromkeys(_COLORS[: len(names)], 0)
    wanted = {bytes.fromhex(c[1:]): c for c in counts}
    for row in rows:
        for x in range(0, len(row), channels):
            color = wanted.get(row[x : x + 3])
            if color is not None:
                counts[color] += 1
    # Every compressor's colour is on screen: its bars, its legend swatch, its dots.
    assert all(n > 200 for n in counts.values()), counts
