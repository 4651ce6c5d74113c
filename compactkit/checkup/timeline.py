"""A stored session's timeline as one static HTML page (``compactkit inspect ... --html``).

The page shows the context's size item by item against the budget and the trigger, each
compaction as a marker (strategy, tokens before and after, what it folded, what a verifier
re-added or rejected when the compressor reported it), what each compaction folded by summary
section, the summary now, and ``doctor``'s findings pinned where they happen. Inline SVG and
CSS only: no script, nothing fetched at view time.

How the curve is drawn: the stores keep each item and each compaction's tokens before and
after, not every prompt that was sent. So the curve is rebuilt — the tokens of the items added
since the last compaction on top of that compaction's ``tokens_after`` (a sawtooth) — and is
labelled as rebuilt. Without compaction records (file store, in-memory) it is the sum of the
items' tokens.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compactkit.budget.profiles import budget_for
from compactkit.budget.tokens import TiktokenCounter, TokenCounter, counter_for
from compactkit.checkup._checks import Check, refs
from compactkit.checkup._sources import StoredSession
from compactkit.compressors import SECTIONS, SummaryDocument, digest_items, without_refs
from compactkit.items import FunctionCall, Item, item_text

if TYPE_CHECKING:
    from compactkit.budget.profile import Budget
    from compactkit.sql.records import CompactionRecord

__all__ = ["timeline_html"]

_WIDTH, _HEIGHT, _PAD = 960, 300, 48
_DETAIL_KEYS = ("verified", "re_added", "rejected", "dropped")


@dataclass(frozen=True)
class _Point:
    seq: int
    tokens: int


def timeline_html(
    session: StoredSession, checks: Sequence[Check] = (), *, model: str | None = None
) -> str:
    """The timeline page of ``session`` (a complete HTML document).

    Args:
        session: The session, as ``compactkit.checkup`` reads it.
        checks: ``doctor``'s verdicts on it; findings are pinned on the page.
        model: Count with this model's tokenizer and draw its budget and trigger.
    """
    counter: TokenCounter = counter_for(model) if model else TiktokenCounter("o200k_base")
    budget = budget_for(model) if model else None
    items = sorted({i.seq: i for i in (*session.history, *session.active)}.values(), key=_seq)
    points = _curve(items, session.compactions, counter)
    parts = [
        _HEAD.format(title=html.escape(f"compactkit session {session.session_id}")),
        f"<h1>Session <code>{html.escape(session.session_id)}</code></h1>",
        f"<p class=meta>{len(items)} stored items, {len(session.compactions)} compaction "
        f"record(s), summary {len(session.summary):,} characters"
        f"{', model ' + html.escape(model) if model else ''}. Source: "
        f"{html.escape(session.source or 'memory')}.</p>",
        _findings(checks),
        "<h2>Context size</h2>",
        _chart(points, session.compactions, budget),
        "<h2>Compactions</h2>",
        _compactions(session, items),
        "<h2>Summary now</h2>",
        _summary(session.summary),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def _seq(item: Item) -> int:
    return item.seq if item.seq is not None else -1


def _curve(
    items: Sequence[Item], compactions: Sequence[CompactionRecord], counter: TokenCounter
) -> list[_Point]:
    """The context's tokens after each stored item (rebuilt; see the module docstring)."""
    resets: dict[int, int] = {}
    ordered = [i.seq for i in items if i.seq is not None]
    for record in compactions:
        if record.outcome == "failed" or record.undone_at is not None:
            continue
        at = _applied_at(record, ordered)
        if at is not None and record.tokens_after is not None:
            resets[at] = record.tokens_after
    points: list[_Point] = []
    total = 0
    for item in items:
        total += counter.count_item(item)
        if item.seq in resets:
            points.append(_Point(_seq(item), total))
            total = resets[item.seq]
        points.append(_Point(_seq(item), total))
    return points


def _applied_at(record: CompactionRecord, ordered: Sequence[int]) -> int | None:
    """The newest seq when ``record`` was applied: its kept tail is ``items_after`` items after
    the span it folded."""
    if record.last_seq is None:
        return None
    after = [s for s in ordered if s > record.last_seq]
    if not after:
        return record.last_seq
    return after[min(max(record.items_after, 1), len(after)) - 1]


def _chart(
    points: Sequence[_Point], compactions: Sequence[CompactionRecord], budget: Budget | None
) -> str:
    if not points:
        return "<p>No stored items.</p>"
    peak = max(max(p.tokens for p in points), 1)
    # The model's lines are drawn when they are in the curve's range; a budget far above a
    # short session would flatten the curve to the axis, so it is stated instead.
    lines = []
    if budget is not None:
        lines = [
            (value, color, label)
            for value, color, label in (
                (budget.usable_input, "#d62728", "budget"),
                (budget.trigger_tokens, "#ff7f0e", "trigger"),
            )
            if value <= 3 * peak
        ]
    top = max([peak, *(value for value, _, _ in lines)])
    first, last = points[0].seq, max(points[-1].seq, points[0].seq + 1)

    def x(seq: int) -> float:
        return _PAD + (seq - first) / (last - first) * (_WIDTH - 2 * _PAD)

    def y(tokens: int) -> float:
        return _HEIGHT - _PAD - tokens / top * (_HEIGHT - 2 * _PAD)

    path = " ".join(f"{x(p.seq):.1f},{y(p.tokens):.1f}" for p in points)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" role="img" aria-label="context tokens per item">',
        f'<rect x="0" y="0" width="{_WIDTH}" height="{_HEIGHT}" fill="#ffffff"/>',
        f'<line x1="{_PAD}" y1="{_HEIGHT - _PAD}" x2="{_WIDTH - _PAD}" y2="{_HEIGHT - _PAD}" '
        'stroke="#444444"/>',
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_HEIGHT - _PAD}" stroke="#444444"/>',
        f'<text x="{_PAD}" y="{_PAD - 8}" font-size="12">{top:,} tokens</text>',
        f'<text x="{_WIDTH - _PAD}" y="{_HEIGHT - _PAD + 18}" font-size="12" '
        f'text-anchor="end">item #{last}</text>',
        f'<text x="{_PAD}" y="{_HEIGHT - _PAD + 18}" font-size="12">item #{first}</text>',
    ]
    for value, color, label in lines:
        out.append(
            f'<line x1="{_PAD}" y1="{y(value):.1f}" x2="{_WIDTH - _PAD}" y2="{y(value):.1f}" '
            f'stroke="{color}" stroke-width="2" stroke-dasharray="6 4"/>'
            f'<text x="{_WIDTH - _PAD}" y="{y(value) - 4:.1f}" font-size="12" '
            f'text-anchor="end" fill="{color}">{label} {value:,}</text>'
        )
    out.append(f'<polyline points="{path}" fill="none" stroke="#1f77b4" stroke-width="3"/>')
    ordered = [p.seq for p in points]
    for record in compactions:
        at = _applied_at(record, ordered)
        if at is None:
            continue
        color = "#2ca02c" if record.outcome != "failed" else "#7f7f7f"
        out.append(
            f'<line x1="{x(at):.1f}" y1="{_PAD}" x2="{x(at):.1f}" y2="{_HEIGHT - _PAD}" '
            f'stroke="{color}" stroke-width="2"/>'
            f'<text x="{x(at) + 3:.1f}" y="{_PAD + 12 + 12 * (record.id % 3)}" '
            f'font-size="11" fill="{color}">'
            f"#{record.id} {html.escape(record.strategy)}</text>"
        )
    out.append("</svg>")
    if budget is not None and len(lines) < 2:
        out.append(
            f"<p class=note>The model's budget ({budget.usable_input:,} tokens) and trigger "
            f"({budget.trigger_tokens:,}) are above this session's range, so not drawn.</p>"
        )
    out.append(
        "<p class=note>Rebuilt from what the store keeps: the tokens of the items added since "
        "the last compaction on top of its recorded size after (blue); compactions in green.</p>"
    )
    return "\n".join(out)


def _compactions(session: StoredSession, items: Sequence[Item]) -> str:
    if not session.compactions:
        archived = {i.seq for i in session.history} - {i.seq for i in session.active}
        if not archived:
            return "<p>No compaction recorded.</p>"
        return (
            f"<p>This store keeps no compaction records; {len(archived)} item(s) were folded "
            f"({html.escape(', '.join(refs(s for s in archived if s is not None)))}).</p>"
        )
    by_seq = {i.seq: i for i in items}
    rows = []
    previous = ""
    for record in session.compactions:
        span = "nothing" if record.first_seq is None else f"#{record.first_seq}-{record.last_seq}"
        tokens = (
            f"{record.tokens_before:,} → {record.tokens_after:,}"
            if record.tokens_before is not None and record.tokens_after is not None
            else "not counted"
        )
        folded = [
            by_seq[s]
            for s in range(record.first_seq or 0, (record.last_seq or -1) + 1)
            if s in by_seq
        ]
        rows.append(
            f"<section class=compaction><h3>Compaction #{record.id}: "
            f"{html.escape(record.strategy)}, {html.escape(record.outcome)}</h3>"
            f"<p>Folded {span} ({record.archived} archived), items {record.items_before} → "
            f"{record.items_after}, tokens {tokens}"
            f"{', undone' if record.undone_at else ''}"
            f"{', error: ' + html.escape(record.error) if record.error else ''}.</p>"
            f"{_verifier(record.details)}{_summary_diff(previous, record.summary_after)}"
            f"{_folded_by_section(folded)}</section>"
        )
        if record.summary_after is not None and record.undone_at is None:
            previous = record.summary_after
    return "\n".join(rows)


def _summary_diff(before: str, after: str | None) -> str:
    """What a compaction changed in the summary, section by section (+ added, - removed)."""
    if after is None:
        return ""
    old, new = SummaryDocument.parse(before), SummaryDocument.parse(after)
    blocks = []
    for heading, entries in _sections(new, old):
        # the same fact with more references (a later compaction drew on it again) is no change
        before_facts = {without_refs(e) for e in entries[0]}
        after_facts = {without_refs(e) for e in entries[1]}
        gained = [e for e in entries[1] if without_refs(e) not in before_facts]
        lost = [e for e in entries[0] if without_refs(e) not in after_facts]
        if gained or lost:
            lis = "".join(f"<li class=added>+ {html.escape(e)}</li>" for e in gained) + "".join(
                f"<li class=removed>- {html.escape(e)}</li>" for e in lost
            )
            blocks.append(f"<h4>{html.escape(heading)}</h4><ul class=diff>{lis}</ul>")
    if not blocks:
        return "<p>The summary did not change.</p>"
    return "<p>How the summary changed:</p>" + "".join(blocks)


def _sections(
    new: SummaryDocument, old: SummaryDocument
) -> list[tuple[str, tuple[tuple[str, ...], tuple[str, ...]]]]:
    return [(spec.heading, (old.entries(spec.key), new.entries(spec.key))) for spec in SECTIONS]


def _verifier(details: dict[str, Any]) -> str:
    """What the compaction's verifier reported (``details["verification"]``: verified,
    re-added, rejected, dropped), when the compressor ran one."""
    found = details.get("verification")
    if not isinstance(found, dict):
        found = details
    shown = [(k, found[k]) for k in _DETAIL_KEYS if found.get(k)]
    if not shown:
        return ""
    lines = "".join(
        f"<li><b>{html.escape(k.replace('_', '-'))}</b>: {html.escape(_listing(v))}</li>"
        for k, v in shown
    )
    return f"<ul class=verifier><li>verifier:</li>{lines}</ul>"


def _listing(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return "; ".join(str(v) for v in value)
    return str(value)


def _folded_by_section(folded: Sequence[Item]) -> str:
    if not folded:
        return ""
    doc = digest_items(folded)
    blocks = []
    for spec in SECTIONS:
        entries = doc.entries(spec.key)
        if entries:
            lis = "".join(f"<li>{html.escape(e)}</li>" for e in entries[:12])
            more = f"<li>… {len(entries) - 12} more</li>" if len(entries) > 12 else ""
            blocks.append(f"<h4>{html.escape(spec.heading)}</h4><ul>{lis}{more}</ul>")
    calls = sum(isinstance(i, FunctionCall) for i in folded)
    head = f"<p>What it folded: {len(folded)} items, {calls} tool call(s).</p>"
    return head + "".join(blocks)


def _summary(summary: str) -> str:
    if not summary.strip():
        return "<p>No summary: nothing was folded.</p>"
    doc = SummaryDocument.parse(summary)
    if doc.is_empty:
        return f"<pre>{html.escape(summary)}</pre>"
    return "".join(
        f"<h4>{html.escape(heading)}</h4><ul>"
        + "".join(f"<li>{html.escape(e)}</li>" for e in entries)
        + "</ul>"
        for heading, entries in doc.blocks()
    )


def _findings(checks: Sequence[Check]) -> str:
    bad = [c for c in checks if not c.ok]
    if not checks:
        return ""
    if not bad:
        return "<p class=ok>doctor: every check passed.</p>"
    lis = "".join(
        f"<li class=finding><b>{html.escape(c.name)}</b>: {html.escape(c.message)}"
        f"{' (' + html.escape(', '.join(c.evidence)) + ')' if c.evidence else ''}"
        f"<br><i>fix:</i> {html.escape(c.fix)}</li>"
        for c in bad
    )
    return f"<h2>doctor found</h2><ul>{lis}</ul>"


def item_label(item: Item) -> str:
    """A short text for an item (used in tooltips and lists)."""
    return " ".join(item_text(item).split())[:80]


_HEAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 24px; max-width: 1000px; color: #222; }}
.meta, .note {{ color: #555; }}
.finding {{ background: #fdecea; padding: 6px; margin: 4px 0; list-style: none; }}
.ok {{ background: #e8f5e9; padding: 6px; }}
.compaction {{ border-left: 4px solid #2ca02c; padding-left: 12px; margin: 12px 0; }}
.verifier {{ background: #fff8e1; }}
.diff {{ list-style: none; font-family: ui-monospace, monospace; font-size: 13px; }}
.added {{ color: #1b5e20; }}
.removed {{ color: #b71c1c; }}
code {{ background: #f3f3f3; }}
</style></head><body>"""
