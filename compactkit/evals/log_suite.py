"""Eval cases from agent logs: each imported conversation becomes a case whose probes are
derived mechanically (``compactkit.evals.log_probes``) — ``compactkit eval import``.

The transcript is stored inline in OpenAI Responses format (one entry per item, so a probe's
``at`` is the index of its entry), or in Anthropic format when the log holds Anthropic thinking
blocks (which only that format can carry back).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from compactkit.evals.importers import ImportedLog, Skipped, import_log, iter_logs
from compactkit.evals.log_probes import derive_probes
from compactkit.evals.schema import Case
from compactkit.formats.transcript import Format, Transcript, dump_transcript
from compactkit.items import Reasoning

__all__ = ["ImportReport", "case_from_log", "cases_from_logs"]

DEFAULT_MODEL = "gpt-4o"


@dataclass(frozen=True)
class ImportReport:
    """What one log file gave: its cases, and what was not mapped or not usable."""

    path: Path
    format: str | None
    cases: tuple[Case, ...]
    skipped: tuple[Skipped, ...]
    error: str | None = None
    """Why the whole file was not imported (not a known log format, unreadable)."""


def case_from_log(log: ImportedLog, case_id: str, *, model: str | None = None) -> Case | None:
    """The eval case of one imported conversation; ``None`` when it yields no probe."""
    probes = derive_probes(log.items)
    if not probes or not log.items:
        return None
    anthropic = any(isinstance(i, Reasoning) and i.format == "anthropic" for i in log.items)
    kind: Format = "anthropic" if anthropic else "responses"
    transcript = dump_transcript(Transcript(list(log.items), list(log.tools), kind))
    return Case(
        id=case_id,
        description=f"imported from {log.source} ({log.format})",
        domain="imported",
        style=log.format,
        tags=("imported", log.format),
        transcript=transcript,
        format=kind,
        model=model or DEFAULT_MODEL,
        probes=tuple(probes),
    )


def cases_from_logs(
    paths: Iterable[str | Path],
    *,
    format: str | None = None,
    model: str | None = None,
    on_file: Callable[[int, int, Path], None] | None = None,
) -> list[ImportReport]:
    """Import every log named (folders walked); one report per file, in order.

    A file that is not a known log format is reported (``error``), not fatal, when it came from
    a folder walk; ``on_file(done, total, path)`` is called before each file.
    """
    files = list(iter_logs(paths))
    reports: list[ImportReport] = []
    used: set[str] = set()
    for done, path in enumerate(files):
        if on_file is not None:
            on_file(done, len(files), path)
        reports.append(_import_file(path, format, model, used))
    return reports


def _import_file(path: Path, format: str | None, model: str | None, used: set[str]) -> ImportReport:
    from compactkit.errors import FormatError

    try:
        logs = import_log(path, format=format)
    except (FormatError, UnicodeDecodeError) as exc:
        return ImportReport(path, format, (), (), error=str(exc))
    cases: list[Case] = []
    skipped: list[Skipped] = []
    for number, log in enumerate(logs):
        skipped += log.skipped
        base = _slug(path.name) + (f"-{number + 1}" if len(logs) > 1 else "")
        case_id = base
        while case_id in used:
            case_id = f"{base}-{len(used)}"
        case = case_from_log(log, case_id, model=model or _known(log.model))
        if case is None:
            skipped.append(Skipped(log.source, "no probe could be derived (nothing to score)"))
            continue
        used.add(case_id)
        cases.append(case)
    return ImportReport(path, logs[0].format if logs else format, tuple(cases), tuple(skipped))


def _slug(name: str) -> str:
    for suffix in (".traj.json", ".jsonl", ".json", ".traj", ".db", ".sqlite3", ".sqlite"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "log"


def _known(model: str | None) -> str | None:
    """The log's model when compactkit has a profile for it (its counting applies)."""
    if not model:
        return None
    from compactkit.budget.profiles import default_registry
    from compactkit.errors import ConfigError

    try:
        default_registry().get(model)
    except ConfigError:
        return None
    return model
