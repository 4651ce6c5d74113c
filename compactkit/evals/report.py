"""Reports: the results aggregated per compressor, as JSON, Markdown and HTML, and the gates.

JSON keys (``REPORT_SCHEMA`` ``compactkit-eval-report/1``; keys are added, never renamed)::

    schema, suite, cases, repeat, scorer_version, judge_prompts (null without a judge)
    compressors: {NAME: {
        retention: {CLASS: {mean, std, kept, total}}    # share of probes kept, 0..1; kept/total
                                                        # summed over cases and repeats
        recoverable: {CLASS: {mean, kept, total}}       # recall mode only: kept, or found by
                                                        # one recall(probe's words) call
        overall_retention: {mean, std}                  # every probe, every class
        ratio: {mean, std}                              # sum of tokens before / sum after
        tokens_before: int, tokens_after: {mean, std}   # summed over cases
        stale_as_current: {mean, std}                   # summed over cases
        hallucinated: {mean, std}                       # identifiers, summed over cases
        artifact_precision: float|null, artifact_recall: float|null
        summarizer_calls: {mean, std}, summarizer_tokens: {mean, std}  # input + output
        wall_seconds: {mean, std}                       # compress time, summed over cases
        failed_runs: int
        target_ratio: float                             # sum of tokens before / sum of targets
        target_met: {mean, std}                         # share of runs at or under their target
        judge: {overall: {mean, std}, dimensions: {DIM: mean}} | null }}
    runs: [RunResult, ...]                              # every run, with per-probe verdicts

``mean`` and ``std`` are over the repeats (``std`` is 0 for one repeat).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compactkit.errors import ConfigError
from compactkit.evals._html import to_html
from compactkit.evals.judge import DIMENSIONS, JUDGE_PROMPT_VERSION, READER_PROMPT_VERSION
from compactkit.evals.runner import SCORER_VERSION, RunResult, results_by
from compactkit.evals.schema import CLASSES

__all__ = [
    "GATE_METRICS",
    "REPORT_SCHEMA",
    "GateFailure",
    "check_gates",
    "parse_gates",
    "summarize",
    "to_markdown",
    "write_reports",
]

REPORT_SCHEMA = "compactkit-eval-report/1"
GATE_METRICS: tuple[str, ...] = (
    *CLASSES,
    "overall_retention",
    "ratio",
    "target_met",
    "judge",
)
"""What ``--fail-under`` can name: a retention class, overall retention, the compression
ratio, or the judge's overall score."""
_CEILING_METRICS = ("stale_as_current", "hallucinated")


def _spread(values: Sequence[float]) -> dict[str, float]:
    mean = statistics.fmean(values) if values else 0.0
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": mean, "std": std}


def _per_repeat(runs: Sequence[RunResult]) -> list[list[RunResult]]:
    return list(results_by(runs, lambda r: str(r.repeat)).values())


def _compressor(runs: Sequence[RunResult]) -> dict[str, Any]:
    repeats = _per_repeat(runs)
    retention = _retention(repeats)
    recovered = _recovered(runs, retention)

    def total(rep: list[RunResult], attr: str) -> float:
        return float(sum(getattr(r, attr) for r in rep))

    def overall(rep: list[RunResult]) -> float:
        kept = sum(k for r in rep for k, _ in r.retention.values())
        probes = sum(t for r in rep for _, t in r.retention.values())
        return kept / probes if probes else 0.0

    precisions = [r.artifact_precision for r in runs if r.artifact_precision is not None]
    recalls = [r.artifact_recall for r in runs if r.artifact_recall is not None]
    judge = _judge(runs, repeats)
    return {
        "retention": retention,
        **({"recoverable": recovered} if recovered else {}),
        "overall_retention": _spread([overall(rep) for rep in repeats]),
        "ratio": _spread(
            [total(rep, "tokens_before") / max(1.0, total(rep, "tokens_after")) for rep in repeats]
        ),
        "tokens_before": int(total(repeats[0], "tokens_before")),
        "tokens_after": _spread([total(rep, "tokens_after") for rep in repeats]),
        "stale_as_current": _spread([total(rep, "stale_as_current") for rep in repeats]),
        "hallucinated": _spread([float(sum(len(r.hallucinated) for r in rep)) for rep in repeats]),
        "artifact_precision": statistics.fmean(precisions) if precisions else None,
        "artifact_recall": statistics.fmean(recalls) if recalls else None,
        "summarizer_calls": _spread([total(rep, "summarizer_calls") for rep in repeats]),
        "summarizer_tokens": _spread(
            [
                total(rep, "summarizer_input_tokens") + total(rep, "summarizer_output_tokens")
                for rep in repeats
            ]
        ),
        "wall_seconds": _spread([total(rep, "wall_seconds") for rep in repeats]),
        "failed_runs": sum(1 for r in runs if r.outcome == "failed"),
        "target_ratio": total(repeats[0], "tokens_before")
        / max(1.0, total(repeats[0], "target_tokens")),
        "target_met": _spread(
            [statistics.fmean(r.tokens_after <= r.target_tokens for r in rep) for rep in repeats]
        ),
        "judge": judge,
    }


def _retention(repeats: list[list[RunResult]]) -> dict[str, Any]:
    """Per fact class: the spread of the share kept over the repeats, and the totals."""
    retention: dict[str, Any] = {}
    for cls in CLASSES:
        shares, kept_all, total_all = [], 0, 0
        for rep in repeats:
            kept = sum(r.retention.get(cls, (0, 0))[0] for r in rep)
            probes = sum(r.retention.get(cls, (0, 0))[1] for r in rep)
            kept_all, total_all = kept_all + kept, total_all + probes
            if probes:
                shares.append(kept / probes)
        if total_all:
            retention[cls] = {**_spread(shares), "kept": kept_all, "total": total_all}
    return retention


def _recovered(runs: Sequence[RunResult], retention: dict[str, Any]) -> dict[str, Any]:
    """Per fact class: the share recoverable from the archive (when the runs measured it)."""
    recovered: dict[str, Any] = {}
    if any(r.recoverable is not None for r in runs):
        for cls in retention:
            kept = sum((r.recoverable or {}).get(cls, (0, 0))[0] for r in runs)
            probes = sum((r.recoverable or {}).get(cls, (0, 0))[1] for r in runs)
            if probes:
                recovered[cls] = {"mean": kept / probes, "kept": kept, "total": probes}
    return recovered


def _judge(runs: Sequence[RunResult], repeats: list[list[RunResult]]) -> dict[str, Any] | None:
    """The judge's overall score (spread over the repeats) and mean per dimension."""
    judged = [r.judge for r in runs if r.judge is not None and r.judge.overall is not None]
    if not judged:
        return None
    return {
        "overall": _spread(
            [
                statistics.fmean(
                    r.judge.overall
                    for r in rep
                    if r.judge is not None and r.judge.overall is not None
                )
                for rep in repeats
                if any(r.judge is not None and r.judge.overall is not None for r in rep)
            ]
        ),
        "dimensions": {d: statistics.fmean(j.dimensions[d] for j in judged) for d in DIMENSIONS},
    }


def summarize(results: Sequence[RunResult], *, suite: str, judged: bool = False) -> dict[str, Any]:
    """The report as a JSON-ready dict (see the module docstring for the keys)."""
    by_compressor = results_by(results, lambda r: r.compressor)
    cases = {r.case_id for r in results}
    repeat = max((r.repeat for r in results), default=-1) + 1
    return {
        "schema": REPORT_SCHEMA,
        "suite": suite,
        "cases": len(cases),
        "repeat": repeat,
        "scorer_version": SCORER_VERSION,
        "judge_prompts": (
            {"reader": READER_PROMPT_VERSION, "judge": JUDGE_PROMPT_VERSION} if judged else None
        ),
        "compressors": {name: _compressor(runs) for name, runs in by_compressor.items()},
        "runs": [r.model_dump(mode="json") for r in results],
    }


@dataclass(frozen=True)
class GateFailure:
    """A gate a compressor did not pass."""

    compressor: str
    metric: str
    value: float
    required: float
    ceiling: bool = False
    """The gate is a maximum (``--fail-over``) rather than a minimum."""
    reason: str | None = None
    """Why the gate could not be checked at all (no cases, no probes of the class)."""

    def __str__(self) -> str:
        if self.reason:
            return f"{self.compressor}: {self.metric}: {self.reason}"
        if self.ceiling:
            return (
                f"{self.compressor}: {self.metric} = {self.value:g}, above the allowed "
                f"{self.required:g} by {self.value - self.required:g}"
            )
        return (
            f"{self.compressor}: {self.metric} = {self.value:.3f}, below the required "
            f"{self.required:.3f} by {self.required - self.value:.3f}"
        )


def parse_gates(specs: Sequence[str], *, ceilings: bool = False) -> dict[str, float]:
    """``["constraint=0.95", ...]`` as a dict; retention values may be given as percent (95%).

    Raises:
        ConfigError: not ``NAME=VALUE``, an unknown name, or a value that is not a number.
    """
    known = _CEILING_METRICS if ceilings else GATE_METRICS
    gates: dict[str, float] = {}
    for spec in specs:
        name, sep, raw = spec.partition("=")
        name = name.strip()
        if not sep or name not in known:
            raise ConfigError(
                f"gate {spec!r}: expected NAME=VALUE with NAME one of {', '.join(known)}"
            )
        try:
            value = float(raw.strip().rstrip("%")) / (100.0 if raw.strip().endswith("%") else 1.0)
        except ValueError:
            raise ConfigError(f"gate {spec!r}: {raw!r} is not a number") from None
        gates[name] = value
    return gates


def check_gates(
    report: Mapping[str, Any],
    under: Mapping[str, float],
    over: Mapping[str, float] | None = None,
) -> list[GateFailure]:
    """Every compressor's shortfalls: metrics in ``under`` below their minimum, metrics in
    ``over`` (``stale_as_current``, ``hallucinated``) above their maximum."""
    failures: list[GateFailure] = []
    gates = [*under, *(over or {})]
    if gates and (not report.get("cases") or not report["compressors"]):
        return [
            GateFailure(
                "suite",
                metric,
                0.0,
                under.get(metric, 0.0),
                reason="the suite ran no case, so nothing was checked; add cases (or import "
                "logs with `compactkit eval import`)",
            )
            for metric in gates
        ]
    for name, data in report["compressors"].items():
        for metric, required in under.items():
            if metric in CLASSES and metric not in data["retention"]:
                failures.append(
                    GateFailure(
                        name,
                        metric,
                        0.0,
                        required,
                        reason="the suite has no probe of this class, so the gate checks "
                        "nothing; add cases that have some, or drop the gate",
                    )
                )
                continue
            if metric in data["retention"]:
                value = data["retention"][metric]["mean"]
            elif metric == "judge":
                if data["judge"] is None:
                    raise ConfigError("a judge gate needs LLM mode (--judge-model)")
                value = data["judge"]["overall"]["mean"]
            elif metric in ("overall_retention", "ratio", "target_met"):
                value = data[metric]["mean"]
            else:
                continue  # a class this suite has no probes of
            if value < required - 1e-12:
                failures.append(GateFailure(name, metric, value, required))
        for metric, ceiling in (over or {}).items():
            value = data[metric]["mean"]
            if value > ceiling + 1e-12:
                failures.append(GateFailure(name, metric, value, ceiling, ceiling=True))
    return failures


def _pct(cell: Mapping[str, Any] | None) -> str:
    if cell is None:
        return "-"
    text = f"{100 * cell['mean']:.1f}%"
    return text + (f" ±{100 * cell['std']:.1f}" if cell.get("std") else "")


def _num(cell: Mapping[str, float], digits: int = 1, suffix: str = "") -> str:
    text = f"{cell['mean']:.{digits}f}{suffix}"
    return text + (f" ±{cell['std']:.{digits}f}" if cell["std"] else "")


def _target_cell(data: Mapping[str, Any]) -> str:
    """``"no: 1.0x of 10.0x"`` — whether the compressor reached the size it was asked for."""
    if "target_met" not in data:
        return "-"
    met = data["target_met"]["mean"]
    word = "yes" if met >= 1 else ("no" if met == 0 else f"{100 * met:.0f}% of runs")
    return f"{word}: {data['ratio']['mean']:.1f}x of {data['target_ratio']:.1f}x"


def _cell(data: Mapping[str, Any], cls: str) -> str:
    """Retention, and in recall mode ``kept / with recall`` side by side."""
    kept = _pct(data["retention"].get(cls))
    if "recoverable" not in data:
        return kept
    return f"{kept} / {_pct(data['recoverable'].get(cls))} with recall"


def to_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown tables: retention per class, then cost and safety per compressor."""
    names = list(report["compressors"])
    data = report["compressors"]
    classes = [c for c in CLASSES if any(c in data[n]["retention"] for n in names)]
    head = f"# Eval: {report['suite']} ({report['cases']} cases x {report['repeat']} repeats)\n"
    lines = [head, "## Retention per class (share of planted facts still in the context)\n"]
    lines.append("| class | " + " | ".join(names) + " |")
    lines.append("|---" * (len(names) + 1) + "|")
    for cls in classes:
        lines.append(f"| {cls} | " + " | ".join(_cell(data[n], cls) for n in names) + " |")
    lines.append(
        "| **overall** | " + " | ".join(_pct(data[n]["overall_retention"]) for n in names) + " |"
    )
    lines.append("| *target met* | " + " | ".join(_target_cell(data[n]) for n in names) + " |")
    short = [n for n in names if "target_met" in data[n] and data[n]["target_met"]["mean"] < 1]
    if short:
        lines += [
            "",
            f"Not comparable: {', '.join(short)} did not reach the target size on every run "
            "(retention is easy when little is removed); compare compressors that met it.",
        ]
    lines += ["", "## Cost and safety\n"]
    lines.append(
        "| compressor | ratio | tokens after | stale as current | hallucinated ids | artifact P / R "
        "| summarizer calls | summarizer tokens | wall time | failed | judge |"
    )
    lines.append("|---" * 11 + "|")
    for n in names:
        d = data[n]
        p, r = d["artifact_precision"], d["artifact_recall"]
        pr = f"{'-' if p is None else f'{p:.2f}'} / {'-' if r is None else f'{r:.2f}'}"
        judge = _num(d["judge"]["overall"], 2) if d["judge"] else "-"
        lines.append(
            f"| {n} | {_num(d['ratio'])}x | {_num(d['tokens_after'], 0)} | "
            f"{_num(d['stale_as_current'], 0)} | {_num(d['hallucinated'], 0)} | {pr} | "
            f"{_num(d['summarizer_calls'], 0)} | {_num(d['summarizer_tokens'], 0)} | "
            f"{_num(d['wall_seconds'], 3, ' s')} | {d['failed_runs']} | {judge} |"
        )
    lines += ["", "## Per case (facts kept / probes, ratio; first repeat)\n"]
    lines.append("| case | " + " | ".join(names) + " |")
    lines.append("|---" * (len(names) + 1) + "|")
    cells: dict[tuple[str, str], str] = {}
    for run in report["runs"]:
        if run["repeat"] == 0:
            kept = sum(k for k, _ in run["retention"].values())
            total = sum(t for _, t in run["retention"].values())
            ratio = run["tokens_before"] / max(1, run["tokens_after"])
            cells[(run["case_id"], run["compressor"])] = f"{kept}/{total}, {ratio:.1f}x"
    for case in dict.fromkeys(run["case_id"] for run in report["runs"]):
        row = " | ".join(cells.get((case, n), "-") for n in names)
        lines.append(f"| {case} | {row} |")
    return "\n".join(lines) + "\n"


def write_reports(report: Mapping[str, Any], directory: str | Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``directory``."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": out / "report.json",
        "markdown": out / "report.md",
        "html": out / "report.html",
    }
    paths["json"].write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    paths["markdown"].write_text(to_markdown(report), encoding="utf-8")
    paths["html"].write_text(to_html(report, to_markdown(report)), encoding="utf-8")
    return paths
