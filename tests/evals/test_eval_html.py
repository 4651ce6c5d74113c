"""The HTML report renders in a real browser: headless Chromium takes a screenshot of it."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from eval_support import offline  # noqa: F401  (autouse: no network)

from compactkit.evals import Suite, SynthSpec, baseline, generate, run_suite, summarize
from compactkit.evals._html import _COLORS
from compactkit.evals.report import write_reports

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG: width, height, rows of raw pixel bytes."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            data += body
        pos += 12 + length
    raw, stride, rows, previous = (
        zlib.decompress(data),
        width * channels,
        [],
        bytes(width * channels),
    )
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (
                    line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)
                ) & 255
        rows.append(bytes(line))
        previous = bytes(line)
    return width, height, rows


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
