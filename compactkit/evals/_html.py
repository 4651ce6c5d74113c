"""The HTML report: one self-contained page, charts as inline SVG (no scripts, no CDN)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from compactkit.evals.schema import CLASSES

__all__ = ["to_html"]

_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
_FONT = 'font-family="system-ui, sans-serif"'


def _color(index: int) -> str:
    return _COLORS[index % len(_COLORS)]


def _legend(names: Sequence[str], x: float, y: float) -> str:
    parts = []
    for i, name in enumerate(names):
        parts.append(
            f'<rect x="{x}" y="{y + i * 20}" width="14" height="14" fill="{_color(i)}"/>'
            f'<text x="{x + 20}" y="{y + i * 20 + 12}" font-size="13" {_FONT}>{escape(name)}</text>'
        )
    return "".join(parts)


def retention_chart(report: Mapping[str, Any]) -> str:
    """Grouped horizontal bars: per class, one bar per compressor, 0-100%."""
    data = report["compressors"]
    names = list(data)
    classes = [c for c in CLASSES if any(c in data[n]["retention"] for n in names)]
    bar, gap, left, width = 12, 14, 150, 460
    group = bar * len(names) + gap
    height = 40 + group * len(classes) + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 170}" height="{height}" '
        f'role="img" aria-label="retention per class per compressor">'
    ]
    for tick in range(0, 101, 25):
        x = left + width * tick / 100
        out.append(f'<line x1="{x}" y1="30" x2="{x}" y2="{height - 30}" stroke="#ddd"/>')
        out.append(
            f'<text x="{x}" y="{height - 12}" font-size="12" text-anchor="middle" {_FONT}>{tick}%</text>'
        )
    for ci, cls in enumerate(classes):
        top = 34 + ci * group
        out.append(
            f'<text x="{left - 8}" y="{top + bar * len(names) / 2 + 4}" font-size="13" '
            f'text-anchor="end" {_FONT}>{escape(cls)}</text>'
        )
        for ni, name in enumerate(names):
            cell = data[name]["retention"].get(cls)
            if cell is None:
                continue
            w = width * cell["mean"]
            y = top + ni * bar
            out.append(
                f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar - 2}" fill="{_color(ni)}">'
                f"<title>{escape(name)} · {escape(cls)}: {100 * cell['mean']:.1f}% "
                f"({cell['kept']}/{cell['total']})</title></rect>"
            )
            out.append(
                f'<text x="{left + w + 4:.1f}" y="{y + bar - 3}" font-size="10" {_FONT}>'
                f"{100 * cell['mean']:.0f}</text>"
            )
    out.append(_legend(names, left + width + 40, 34))
    out.append("</svg>")
    return "".join(out)


def scatter(report: Mapping[str, Any], x_of: str, x_label: str, *, log_x: bool = True) -> str:
    """Overall retention (y) against a per-compressor metric (x), one labelled dot each."""
    data = report["compressors"]
    names = list(data)
    raw = [float(data[n][x_of]["mean"]) for n in names]
    log_x = log_x and min(raw) > 0  # a zero (no summarizer) has no place on a log axis
    points = [(x, data[n]["overall_retention"]["mean"]) for x, n in zip(raw, names, strict=True)]
    left, top, width, height = 60, 20, 440, 260
    xs = [p[0] for p in points]
    lo, hi = min(xs), max(xs)
    if log_x:
        lo, hi = math.log10(lo), math.log10(hi)
    else:
        lo = min(lo, 0.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    span = hi - lo

    def px(value: float) -> float:
        v = math.log10(value) if log_x else value
        return left + width * (0.06 + 0.88 * (v - lo) / span)

    def py(value: float) -> float:
        return top + height * (1 - value)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 110}" '
        f'height="{top + height + 50}" role="img" aria-label="retention vs {escape(x_label)}">',
        f'<rect x="{left}" y="{top}" width="{width}" height="{height}" fill="none" stroke="#999"/>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = py(tick)
        out.append(f'<line x1="{left}" y1="{y}" x2="{left + width}" y2="{y}" stroke="#eee"/>')
        out.append(
            f'<text x="{left - 6}" y="{y + 4}" font-size="12" text-anchor="end" {_FONT}>{tick:.0%}</text>'
        )
    for tick in _ticks(10**lo if log_x else lo, 10**hi if log_x else hi, log_x):
        x = px(tick)
        out.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + height}" stroke="#eee"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{top + height + 16}" font-size="12" text-anchor="middle" '
            f"{_FONT}>{tick:g}</text>"
        )
    placed: list[tuple[float, float]] = []
    for i, (name, (x, y)) in enumerate(zip(names, points, strict=True)):
        cx, cy = px(x), py(y)
        out.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="7" fill="{_color(i)}" fill-opacity="0.85">'
            f"<title>{escape(name)}: {x:.3g} {escape(x_label)}, {100 * y:.1f}% retained</title>"
            "</circle>"
        )
        ly = cy + 4
        while any(abs(ly - py_) < 15 and abs(cx - px_) < 90 for px_, py_ in placed):
            ly += 15  # dots that coincide get their labels stacked, not overprinted
        placed.append((cx, ly))
        out.append(
            f'<text x="{cx + 10:.1f}" y="{ly:.1f}" font-size="13" fill="{_color(i)}" '
            f"{_FONT}>{escape(name)}</text>"
        )
    out.append(
        f'<text x="{left + width / 2}" y="{top + height + 36}" font-size="13" text-anchor="middle" '
        f"{_FONT}>{escape(x_label)}{' (log scale)' if log_x else ''}</text>"
    )
    out.append(
        f'<text x="14" y="{top + height / 2}" font-size="13" text-anchor="middle" {_FONT} '
        f'transform="rotate(-90 14 {top + height / 2})">overall retention</text>'
    )
    out.append("</svg>")
    return "".join(out)


def _ticks(lo: float, hi: float, log_x: bool) -> list[float]:
    """Round axis values between ``lo`` and ``hi`` (1-2-5 steps on a log axis)."""
    if log_x:
        out, decade = [], 10 ** math.floor(math.log10(lo))
        while decade <= hi:
            out += [m * decade for m in (1, 2, 5) if lo <= m * decade <= hi]
            decade *= 10
        if len(out) > 7:  # a wide range: decades only
            out = [t for t in out if math.isclose(10 ** round(math.log10(t)), t)]
        return out
    step = 10 ** math.floor(math.log10(max(hi - lo, 1e-9) / 2))
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step) + 1)][:8]


def _judge_details(report: Mapping[str, Any]) -> str:
    rows = []
    for run in report["runs"]:
        judge = run.get("judge")
        if not judge:
            continue
        if judge.get("error"):
            rows.append(
                f"<tr><td>{escape(run['compressor'])}</td><td>{escape(run['case_id'])}</td>"
                f"<td>-</td><td>-</td><td>{escape(judge['error'])}</td></tr>"
            )
        for grade in judge.get("grades", []):
            mean = sum(grade["scores"].values()) / max(1, len(grade["scores"]))
            rows.append(
                f"<tr><td>{escape(run['compressor'])}</td><td>{escape(run['case_id'])}</td>"
                f"<td>{escape(grade['id'])}</td><td>{mean:.1f}</td><td>{escape(grade['reason'])}</td></tr>"
            )
    if not rows:
        return ""
    return (
        "<h2>Judge's reasons</h2><table><tr><th>compressor</th><th>case</th><th>question</th>"
        "<th>mean score</th><th>reason</th></tr>" + "".join(rows) + "</table>"
    )


def _markdown_tables(markdown: str) -> str:
    """The Markdown report's tables as HTML tables (headings become h2)."""
    html: list[str] = []
    rows: list[str] = []
    for line in markdown.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip().replace("**", "") for c in line.strip("|").split("|")]
            tag = "th" if not rows else "td"
            rows.append("<tr>" + "".join(f"<{tag}>{escape(c)}</{tag}>" for c in cells) + "</tr>")
            continue
        if rows and not line.startswith("|"):
            html.append("<table>" + "".join(rows) + "</table>")
            rows = []
        if line.startswith("## "):
            html.append(f"<h2>{escape(line[3:])}</h2>")
    if rows:
        html.append("<table>" + "".join(rows) + "</table>")
    return "".join(html)


def to_html(report: Mapping[str, Any], markdown: str) -> str:
    """The whole report as one self-contained HTML page (``markdown``: its tables)."""
    data = report["compressors"]
    cost = (
        "summarizer_tokens"
        if any(d["summarizer_tokens"]["mean"] for d in data.values())
        else "wall_seconds"
    )
    cost_label = "summarizer tokens" if cost == "summarizer_tokens" else "compress time, seconds"
    title = f"compactkit eval — {report['suite']}"
    style = (
        "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
        "font-size:14px;text-align:right}td:first-child,th:first-child{text-align:left}"
        ".charts{display:flex;flex-wrap:wrap;gap:2em}figure{margin:0}figcaption{font-weight:600}"
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{style}</style></head><body><h1>{escape(title)}</h1>"
        f"<p>{report['cases']} cases x {report['repeat']} repeats; scorer {escape(report['scorer_version'])}."
        " Retention: share of planted facts the compacted context (summary + kept items) still "
        "holds.</p>"
        f"<figure><figcaption>Retention per class</figcaption>{retention_chart(report)}</figure>"
        '<div class="charts">'
        f"<figure><figcaption>Retention vs compression ratio</figcaption>"
        f"{scatter(report, 'ratio', 'compression ratio (x)')}</figure>"
        f"<figure><figcaption>Cost vs quality</figcaption>{scatter(report, cost, cost_label)}</figure>"
        "</div>"
        f"{_markdown_tables(markdown)}{_judge_details(report)}</body></html>"
    )
