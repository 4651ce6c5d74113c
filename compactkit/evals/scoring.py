"""Deterministic scorers: what a compacted context still holds, read the way a model reads it.

The *context* is what the next model call would see: the rendered snapshot (the summary message
where it belongs, then the kept items), as text — message text, each tool call's name and its
arguments one per line (``key: value``), tool outputs. Text is compared after Unicode NFC normalisation and
with runs of whitespace collapsed; case matters.

Per probe type (see ``compactkit.evals.schema``):

* ``constraint`` — the instruction is in the context, verbatim.
* ``recall`` — the fact is in the context, verbatim.
* ``artifact`` — the path is in the context.
* ``decision`` / ``continuation`` — every ``must_include`` phrase is in the context.
* ``tool_state`` — the call is still a kept item and has no output.
* ``update`` — the context is read line by line, in order. A line *mentions* the fact when it
  holds its name or an alias (case-insensitive) and one of its values (as a whole word); values
  of 8 characters or more count without the name. A line that also holds a *stale marker*
  (``STALE_MARKERS``: "superseded", "previously", "was", "not", "instead of", …) asserts the
  current value if it holds it, and nothing otherwise; any other line asserts the value it
  mentions last. The value the context *presents as current* is the one the last asserting line
  asserts: the probe is kept when that is ``current``, and counts as *stale presented as
  current* when it is a superseded value.

Hallucinated identifiers: URLs, paths, UUIDs, hex ids (commit shas), ticket keys and prefixed ids
in the text a compressor wrote (the context minus items copied from the transcript) that occur
nowhere in the transcript.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from compactkit.evals.schema import (
    ArtifactProbe,
    ConstraintProbe,
    ContinuationProbe,
    DecisionProbe,
    Probe,
    RecallProbe,
    ToolStateProbe,
    UpdateProbe,
    probe_class,
)
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Reasoning

__all__ = [
    "STALE_MARKERS",
    "ProbeScore",
    "context_lines",
    "identifiers",
    "normalize",
    "score_probes",
]

STALE_MARKERS = (
    "superseded",
    "previously",
    "formerly",
    "earlier",
    "old",
    "was",
    "were",
    "no longer",
    "instead of",
    "replaced",
    "changed from",
    "not",
    "outdated",
    "stale",
)
"""Words that mark a value in a line as no longer current (whole words, case-insensitive)."""

_STALE = re.compile(r"\b(?:" + "|".join(re.escape(m) for m in STALE_MARKERS) + r")\b", re.I)
_SPACE = re.compile(r"\s+")
_LONG_VALUE = 8

_IDENTIFIER_PATTERNS = (
    ("url", re.compile(r"https?://[^\s`'\"<>)\]…]+(?:…)?")),
    ("uuid", re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")),
    ("ticket", re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{2,}(?:-\d+)?\b")),
    ("prefixed id", re.compile(r"\b[a-z]{2,8}_[A-Za-z0-9]{8,}\b")),
    ("path", re.compile(r"(?<![\w/.])(?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}\b")),
    ("hex id", re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")),
)


def normalize(text: str) -> str:
    """NFC, whitespace runs collapsed to one space, stripped."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def item_lines(item: Item) -> list[str]:
    """The text a model reads of one item, as lines."""
    if isinstance(item, Message):
        text = item.text
    elif isinstance(item, FunctionCall):
        values = [item.name]
        args = item.parsed_arguments()
        values += [f"{k}: {v}" for k, v in args.items()] if args else [item.arguments]
        text = "\n".join(values)
    elif isinstance(item, (FunctionCallOutput, Reasoning)):
        text = item.text
    else:  # pragma: no cover - the item union is closed
        text = ""
    return unicodedata.normalize("NFC", text).splitlines()


def context_lines(items: Iterable[Item]) -> list[str]:
    """Every line of ``items`` in reading order."""
    return [line for item in items for line in item_lines(item)]


def identifiers(text: str) -> list[tuple[str, str]]:
    """Identifier-like strings in ``text``: ``(identifier, kind)``, first occurrence order."""
    seen: dict[str, str] = {}
    for kind, pattern in _IDENTIFIER_PATTERNS:
        for match in pattern.finditer(text):
            value = match.group(0).rstrip(".,;:")
            if not any(value in other for other in seen):
                seen.setdefault(value, kind)
    return list(seen.items())


@dataclass(frozen=True)
class ProbeScore:
    """One probe's verdict on one compacted context."""

    probe: Probe
    """The probe."""
    cls: str
    """Its retention class."""
    kept: bool
    """Whether the context still holds the fact."""
    stale: bool = False
    """``update`` probes: a superseded value is presented as current."""
    detail: str = ""
    """What was found (for reports)."""


@dataclass
class _Context:
    items: Sequence[Item]
    lines: list[str] = field(default_factory=list)
    flat: str = ""

    def __post_init__(self) -> None:
        self.lines = [normalize(line) for line in context_lines(self.items)]
        self.flat = normalize("\n".join(self.lines))

    def has(self, text: str) -> bool:
        return normalize(text) in self.flat


def score_probes(probes: Sequence[Probe], items: Sequence[Item]) -> list[ProbeScore]:
    """Score every probe against the compacted context ``items`` (as rendered for the model)."""
    context = _Context(items)
    return [_score(p, context) for p in probes]


def _score(probe: Probe, ctx: _Context) -> ProbeScore:
    cls = probe_class(probe)
    if isinstance(probe, ConstraintProbe):
        return ProbeScore(probe, cls, ctx.has(probe.text))
    if isinstance(probe, RecallProbe):
        return ProbeScore(probe, cls, ctx.has(probe.fact))
    if isinstance(probe, ArtifactProbe):
        return ProbeScore(probe, cls, ctx.has(probe.path))
    if isinstance(probe, (DecisionProbe, ContinuationProbe)):
        missing = [p for p in probe.must_include if not ctx.has(p)]
        return ProbeScore(probe, cls, not missing, detail=f"missing: {missing}" if missing else "")
    if isinstance(probe, ToolStateProbe):
        return _tool_state(probe, cls, ctx.items)
    return _update(probe, cls, ctx.lines)


def _tool_state(probe: ToolStateProbe, cls: str, items: Sequence[Item]) -> ProbeScore:
    called = any(isinstance(i, FunctionCall) and i.call_id == probe.call_id for i in items)
    answered = any(isinstance(i, FunctionCallOutput) and i.call_id == probe.call_id for i in items)
    kept = called and not answered
    return ProbeScore(probe, cls, kept, detail="" if kept else "the pending call is gone")


def _value_positions(line: str, values: Sequence[str]) -> list[tuple[int, str]]:
    found = []
    for value in values:
        pattern = re.compile(r"(?<![\w.])" + re.escape(normalize(value)) + r"(?![\w])")
        found += [(m.start(), value) for m in pattern.finditer(line)]
    return sorted(found)


def _update(probe: UpdateProbe, cls: str, lines: Sequence[str]) -> ProbeScore:
    names = [n.lower() for n in (probe.name, *probe.aliases)]
    values = (probe.current, *probe.superseded)
    presented: str | None = None
    for line in lines:
        named = any(n in line.lower() for n in names)
        candidates = values if named else [v for v in values if len(v) >= _LONG_VALUE]
        found = _value_positions(line, candidates)
        if not found:
            continue
        if _STALE.search(line):
            if any(v == probe.current for _, v in found):
                presented = probe.current
            continue
        presented = found[-1][1]
    kept = presented == probe.current
    stale = presented is not None and presented != probe.current
    detail = f"presented as current: {presented!r}" if presented is not None else "not found"
    return ProbeScore(probe, cls, kept, stale=stale, detail=detail)


def written_text(compacted: Sequence[Item], source: Sequence[Item]) -> str:
    """The text a compressor wrote: the context minus items copied unchanged from the source."""
    originals = {_fingerprint(i) for i in source}
    return "\n".join(
        "\n".join(item_lines(i)) for i in compacted if _fingerprint(i) not in originals
    )


def _fingerprint(item: Item) -> str:
    return f"{item.type}\x00" + "\n".join(item_lines(item))


_MARKUP = re.compile(r"<[^<>\n]{0,300}>")
_CLIPPED = ("…", "...")


def hallucinated(written: str, source_text: str) -> list[str]:
    """Identifiers in ``written`` that occur nowhere in ``source_text`` (normalised).

    Markup tags (``<summary sig="…">``, a compressor's own framing) are not read, and an
    identifier clipped with an ellipsis counts when the source holds what is left of it.
    """
    source = normalize(source_text)
    found = []
    for ident, _ in identifiers(_MARKUP.sub(" ", written)):
        value = normalize(ident)
        for mark in _CLIPPED:
            value = value.removesuffix(mark)
        if value and value not in source:
            found.append(ident)
    return found


def source_text(items: Sequence[Item]) -> str:
    """Everything a transcript holds that a compressor may quote: its text and its call ids."""
    ids = [i.call_id for i in items if isinstance(i, (FunctionCall, FunctionCallOutput))]
    return "\n".join([*context_lines(items), *ids])


def artifact_precision(written: str, probes: Sequence[Probe]) -> float | None:
    """Of the paths the compressor wrote, the share that name a file the agent touched (or a
    path some probe quotes); ``None`` when it wrote no path."""
    paths = [i for i, kind in identifiers(written) if kind == "path"]
    if not paths:
        return None
    known = {p.path for p in probes if isinstance(p, ArtifactProbe)}
    quoted = " ".join(
        p.fact if isinstance(p, RecallProbe) else p.text
        for p in probes
        if isinstance(p, (RecallProbe, ConstraintProbe))
    )
    good = sum(1 for p in paths if p in known or p in quoted or any(k.endswith(p) for k in known))
    return good / len(paths)
