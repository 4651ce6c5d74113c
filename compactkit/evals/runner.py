"""The runner: every case x compressor x repeat, concurrently, cached, with a progress bar.

Each run compresses the case's transcript once (``MemorySnapshot.from_items``, then
``compress``), scores the compacted context deterministically (``compactkit.evals.scoring``)
and, with a ``Judge``, in LLM mode. Results are cached as one JSON file per run under
``cache_dir``, keyed by the case's content, the compressor's name and fingerprint, the repeat
index, the scorer version and the judge's prompts and models (a ``transcript_file``'s bytes are
part of the case's content) — so a re-run only does what
changed. A compressor's *code* is not part of the key: give it a new ``fingerprint`` (or clear
the cache) when you change it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from compactkit._version import __version__
from compactkit.budget import counter_for
from compactkit.errors import ConfigError
from compactkit.evals import scoring
from compactkit.evals._meter import metering
from compactkit.evals._recall_mode import recoverable
from compactkit.evals.baselines import CompressorFactory, Sizing
from compactkit.evals.dataset import Suite
from compactkit.evals.judge import Judge, JudgeResult
from compactkit.evals.schema import CLASSES, Case
from compactkit.items import MemorySnapshot

__all__ = ["SCORER_VERSION", "ProbeVerdict", "RunResult", "run_one", "run_suite"]

SCORER_VERSION = "scorer-v1"
"""The version of the deterministic scorers; part of every cache key."""


class ProbeVerdict(BaseModel):
    """One probe's outcome in one run."""

    model_config = ConfigDict(frozen=True)

    id: str
    """The probe's id (or ``class:index``)."""
    cls: str
    """Its retention class."""
    kept: bool
    """Whether the compacted context still holds the fact."""
    stale: bool = False
    """``update`` probes: a superseded value is presented as current."""
    detail: str = ""
    """What the scorer found (missing phrases, the value presented as current)."""


class RunResult(BaseModel):
    """One case compressed by one compressor once (one repeat), scored."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    """The case."""
    compressor: str
    """The compressor's report name."""
    repeat: int
    """Which repeat (0-based)."""
    outcome: str
    """The compressor's outcome (``compacted``, ``unchanged``, ``fallback``, ``failed``)."""
    error: str | None = None
    """Why the compressor failed or fell back."""
    tokens_before: int
    """Request tokens of the whole transcript (exact for the case model's counter)."""
    tokens_after: int
    """Request tokens of the compacted context."""
    target_tokens: int
    """The target the compressor was given."""
    wall_seconds: float
    """Time spent in ``compress``."""
    summarizer_calls: int = 0
    """Summarizer requests made (through ``MeteredLLM``)."""
    summarizer_input_tokens: int = 0
    """Tokens sent to the summarizer (o200k_base)."""
    summarizer_output_tokens: int = 0
    """Tokens the summarizer answered."""
    retention: dict[str, tuple[int, int]]
    """Per class: ``(kept, total)``."""
    stale_as_current: int
    """``update`` probes whose superseded value the context presents as current."""
    hallucinated: tuple[str, ...]
    """Identifiers the compressor wrote that occur nowhere in the transcript."""
    artifact_precision: float | None
    """Share of the paths the compressor wrote that name a touched file (``None``: none)."""
    artifact_recall: float | None
    """Share of the artifact probes kept (``None``: the case has none)."""
    probes: tuple[ProbeVerdict, ...]
    """Every probe's verdict, in the case's order."""
    judge: JudgeResult | None = None
    """The LLM-mode verdict, when a judge ran."""
    recoverable: dict[str, tuple[int, int]] | None = None
    """Recall mode: per class, ``(recoverable, total)`` — kept, or found by one ``recall`` call
    whose query is the probe's own words (``compactkit.evals._recall_mode``); ``None``
    without recall mode."""
    details: dict[str, Any] = {}
    """The compressor's own ``stats.details`` (for the digest: its ``facts`` report of what
    it found, kept and dropped per class), as JSON values."""
    cached: bool = False
    """Read from the cache instead of run."""

    @property
    def ratio(self) -> float:
        """Compression ratio in request tokens (before / after)."""
        return self.tokens_before / max(1, self.tokens_after)


def _content(suite: Suite, case: Case) -> str:
    """What the case holds, including a referenced transcript file's bytes (so editing the file
    invalidates its cached results)."""
    digest = hashlib.sha256(case.model_dump_json().encode())
    if case.transcript_file is not None:
        origin = suite.origins.get(case.id)
        base = origin.parent if origin is not None else Path.cwd()
        with contextlib.suppress(OSError):  # unreadable: the run itself reports it
            digest.update((base / case.transcript_file).read_bytes())
    return digest.hexdigest()


def _key(
    content: str, compressor: str, fingerprint: str, repeat: int, judge: str, recall: bool
) -> str:
    mode = [SCORER_VERSION, judge] + (["recall"] if recall else [])
    payload = json.dumps([content, compressor, fingerprint, repeat, *mode])
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def run_one(
    suite: Suite,
    case: Case,
    name: str,
    factory: CompressorFactory,
    repeat: int,
    judge: Judge | None = None,
    *,
    recall: bool = False,
) -> RunResult:
    """Compress and score one case with one compressor (one repeat); with ``recall``, also
    count the probes recoverable through one ``recall`` call each."""
    transcript = suite.transcript(case)
    counter = counter_for(case.model)
    tools = tuple(transcript.tools)
    snapshot = MemorySnapshot.from_items(transcript.items)
    source = snapshot.render_items()
    before = counter.count(source, tools=tools).tokens
    target = case.target_tokens or max(1, before // 10)
    with metering() as meter:
        compressor = factory(Sizing(target_tokens=target, counter=counter, tools=tools))
        start = time.perf_counter()
        try:
            result = compressor.compress(snapshot)
            outcome, error, after_snapshot = result.outcome, result.error, result.snapshot
            details = _json_safe(result.stats.details)
        except Exception as exc:  # a compressor breaking its contract is a failed run
            outcome, error, after_snapshot = "failed", f"{type(exc).__name__}: {exc}", snapshot
            details = {}
        wall = time.perf_counter() - start
    compacted = after_snapshot.render_items()
    scores = scoring.score_probes(case.probes, compacted)
    written = scoring.written_text(compacted, source)
    source_text = scoring.source_text(source)
    retention: dict[str, tuple[int, int]] = {}
    for s in scores:
        kept, total = retention.get(s.cls, (0, 0))
        retention[s.cls] = (kept + int(s.kept), total + 1)
    artifacts = [s for s in scores if s.cls.startswith("artifact")]
    graded = judge.grade(case.probes, compacted) if judge is not None else None
    found = recoverable(scores, transcript.items, after_snapshot) if recall else None
    return RunResult(
        case_id=case.id,
        compressor=name,
        repeat=repeat,
        outcome=outcome,
        error=error,
        tokens_before=before,
        tokens_after=counter.count(compacted, tools=tools).tokens,
        target_tokens=target,
        wall_seconds=wall,
        summarizer_calls=meter.calls,
        summarizer_input_tokens=meter.input_tokens,
        summarizer_output_tokens=meter.output_tokens,
        retention={c: retention[c] for c in CLASSES if c in retention},
        stale_as_current=sum(1 for s in scores if s.stale),
        hallucinated=tuple(scoring.hallucinated(written, source_text)),
        artifact_precision=scoring.artifact_precision(written, case.probes),
        artifact_recall=sum(s.kept for s in artifacts) / len(artifacts) if artifacts else None,
        probes=tuple(
            ProbeVerdict(
                id=s.probe.id or f"{s.cls}:{i}",
                cls=s.cls,
                kept=s.kept,
                stale=s.stale,
                detail=s.detail,
            )
            for i, s in enumerate(scores)
        ),
        judge=graded,
        recoverable=None if found is None else {c: found[c] for c in CLASSES if c in found},
        details=details,
    )


def _json_safe(value: dict[str, Any]) -> dict[str, Any]:
    """A compressor's details as plain JSON values (anything else becomes its string)."""
    safe: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return safe


def run_suite(
    suite: Suite,
    compressors: Mapping[str, CompressorFactory],
    *,
    repeat: int = 1,
    concurrency: int = 4,
    cache_dir: str | Path | None = None,
    judge: Judge | None = None,
    fingerprints: Mapping[str, str] | None = None,
    progress: bool | None = None,
    on_result: Callable[[RunResult], None] | None = None,
    recall: bool = False,
) -> list[RunResult]:
    """Run every case with every compressor ``repeat`` times.

    Args:
        suite: The cases (``load_suite``).
        compressors: Factories by report name (``baseline(name)``, ``as_compressor(obj)``, or
            your own ``Sizing -> MemoryCompressor``).
        repeat: Runs per case and compressor (mean and spread are over these).
        concurrency: Runs in flight at once (threads).
        cache_dir: Where results are cached (``None``: no cache).
        judge: LLM mode: a reader and judge grade each compacted context.
        fingerprints: Per compressor name, a string that changes when its code or settings do
            (default: the compactkit version).
        progress: Show a progress bar on stderr (default: when stderr is a terminal).
        on_result: Called with each result as it arrives.
        recall: Recall mode: also report, per class, the probes recoverable through one
            ``recall`` call whose query is the probe's own words (``RunResult.recoverable``).

    Returns:
        The results, ordered by compressor, case and repeat.

    Raises:
        ConfigError: ``repeat`` or ``concurrency`` below 1, or no compressors.
    """
    if repeat < 1 or concurrency < 1:
        raise ConfigError(f"repeat and concurrency must be at least 1, got {repeat}, {concurrency}")
    if not compressors:
        raise ConfigError("give at least one compressor")
    cache = Path(cache_dir) if cache_dir is not None else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    prints = fingerprints or {}
    judge_print = judge.fingerprint if judge is not None else ""
    jobs: list[tuple[str, Case, int, str]] = []
    contents: dict[str, str] = {}
    for name in compressors:
        fingerprint = prints.get(name, f"compactkit-{__version__}")
        for case in suite.cases:
            content = contents.setdefault(case.id, _content(suite, case))
            for r in range(repeat):
                jobs.append(
                    (name, case, r, _key(content, name, fingerprint, r, judge_print, recall))
                )
    results: dict[str, RunResult] = {}
    todo = []
    for job in jobs:
        hit = _cached(cache, job[3])
        if hit is not None:
            results[job[3]] = hit
        else:
            todo.append(job)
    show = sys.stderr.isatty() if progress is None else progress
    with _Progress(show, len(jobs), len(jobs) - len(todo)) as bar:
        for hit in results.values():
            if on_result is not None:
                on_result(hit)
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            futures = {
                pool.submit(
                    run_one, suite, case, name, compressors[name], r, judge, recall=recall
                ): key
                for name, case, r, key in todo
            }
            for future in as_completed(futures):
                key = futures[future]
                result = future.result()
                results[key] = result
                if cache is not None:
                    tmp = cache / f"{key}.tmp"
                    tmp.write_text(result.model_dump_json(), encoding="utf-8")
                    tmp.replace(cache / f"{key}.json")
                if on_result is not None:
                    on_result(result)
                bar.advance(f"{result.compressor} · {result.case_id}")
    return [results[key] for *_, key in jobs]


def _cached(cache: Path | None, key: str) -> RunResult | None:
    if cache is None:
        return None
    path = cache / f"{key}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return RunResult.model_validate({**data, "cached": True})
    except (OSError, ValueError):  # missing or unreadable (a torn write): run it again
        return None


class _Progress:
    """A rich progress bar on stderr, or nothing."""

    def __init__(self, show: bool, total: int, done: int) -> None:
        self.bar: Any = None
        self.task: Any = None
        if show:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self.bar = Progress(
                TextColumn("eval"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.description}"),
                console=Console(stderr=True),
                transient=True,
            )
            self.task = self.bar.add_task("", total=total, completed=done)

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def advance(self, label: str) -> None:
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=label)


def results_by(
    results: Sequence[RunResult], key: Callable[[RunResult], str]
) -> dict[str, list[RunResult]]:
    """Group results by ``key`` (insertion order)."""
    out: dict[str, list[RunResult]] = {}
    for r in results:
        out.setdefault(key(r), []).append(r)
    return out
