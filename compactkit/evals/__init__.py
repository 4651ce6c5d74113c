"""Eval suites: does a compressor keep what the agent needs? (see docs/evals.md).

Cases (``Case``) are transcripts with typed probes; ``load_suite`` reads them from JSONL/YAML;
``synth.generate`` makes seeded synthetic ones, ``cases_from_logs`` makes them from agent logs
(``import_log``, one importer per format; probes by ``derive_probes``); ``run_suite`` compresses every case with every
compressor (``baseline(name)``, ``as_compressor(yours)``), scores the compacted context
(``compactkit.evals.scoring``) and, with a ``Judge``, grades it in LLM mode; ``summarize``,
``write_reports`` and ``check_gates`` turn the results into reports and CI gates.
"""

from __future__ import annotations

from compactkit.evals._meter import Meter, MeteredLLM, metering
from compactkit.evals.baselines import (
    BASELINES,
    CompressorFactory,
    Sizing,
    as_compressor,
    baseline,
)
from compactkit.evals.dataset import Suite, SuiteFormatError, dump_cases, load_suite
from compactkit.evals.fake_compact import FakeCompactEndpoint
from compactkit.evals.importers import (
    IMPORTERS,
    LOG_SUFFIXES,
    ImportedLog,
    Skipped,
    detect_format,
    import_log,
    iter_logs,
)
from compactkit.evals.judge import (
    DIMENSIONS,
    JUDGE_PROMPT_VERSION,
    READER_PROMPT_VERSION,
    Grade,
    Judge,
    JudgeResult,
    questions,
)
from compactkit.evals.log_probes import derive_probes, item_text, probe_located
from compactkit.evals.log_suite import ImportReport, case_from_log, cases_from_logs
from compactkit.evals.report import (
    GATE_METRICS,
    REPORT_SCHEMA,
    GateFailure,
    check_gates,
    parse_gates,
    summarize,
    to_markdown,
    write_reports,
)
from compactkit.evals.runner import SCORER_VERSION, ProbeVerdict, RunResult, run_one, run_suite
from compactkit.evals.schema import (
    CLASSES,
    SCHEMA_VERSION,
    ArtifactProbe,
    Case,
    ConstraintProbe,
    ContinuationProbe,
    DecisionProbe,
    Probe,
    ProbeType,
    RecallProbe,
    ToolStateProbe,
    UpdateProbe,
    probe_class,
)
from compactkit.evals.scoring import (
    STALE_MARKERS,
    ProbeScore,
    context_lines,
    identifiers,
    normalize,
    score_probes,
)
from compactkit.evals.synth import DOMAINS, STYLES, DomainName, StyleName, SynthSpec, generate

__all__ = [
    "BASELINES",
    "CLASSES",
    "DIMENSIONS",
    "DOMAINS",
    "GATE_METRICS",
    "IMPORTERS",
    "JUDGE_PROMPT_VERSION",
    "LOG_SUFFIXES",
    "READER_PROMPT_VERSION",
    "REPORT_SCHEMA",
    "SCHEMA_VERSION",
    "SCORER_VERSION",
    "STALE_MARKERS",
    "STYLES",
    "ArtifactProbe",
    "Case",
    "CompressorFactory",
    "ConstraintProbe",
    "ContinuationProbe",
    "DecisionProbe",
    "DomainName",
    "FakeCompactEndpoint",
    "GateFailure",
    "Grade",
    "ImportReport",
    "ImportedLog",
    "Judge",
    "JudgeResult",
    "Meter",
    "MeteredLLM",
    "Probe",
    "ProbeScore",
    "ProbeType",
    "ProbeVerdict",
    "RecallProbe",
    "RunResult",
    "Sizing",
    "Skipped",
    "StyleName",
    "Suite",
    "SuiteFormatError",
    "SynthSpec",
    "ToolStateProbe",
    "UpdateProbe",
    "as_compressor",
    "baseline",
    "case_from_log",
    "cases_from_logs",
    "check_gates",
    "context_lines",
    "derive_probes",
    "detect_format",
    "dump_cases",
    "generate",
    "identifiers",
    "import_log",
    "item_text",
    "iter_logs",
    "load_suite",
    "metering",
    "normalize",
    "parse_gates",
    "probe_class",
    "probe_located",
    "questions",
    "run_one",
    "run_suite",
    "score_probes",
    "summarize",
    "to_markdown",
    "write_reports",
]
