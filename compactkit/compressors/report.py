"""``FactReport``: what one compaction kept of the facts its summary had to hold.

Every folding compressor (digest, LLM summary) records one in ``CompactResult.stats.details
["facts"]`` (as plain JSON, so it survives storage); ``FactReport.of(result)`` reads it back
typed, also from a ladder's steps::

    report = FactReport.of(result)
    report.classes["files_modified"].dropped   # files modified the summary no longer lists
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from compactkit.compressors._entries import key_of
from compactkit.compressors._forms import EXTRA, LATER, SUPERSEDED
from compactkit.compressors._trim import count_by_section
from compactkit.compressors._trim_state import pool_of
from compactkit.compressors.sections import SummaryDocument
from compactkit.items.snapshot import CompactResult

__all__ = ["FactClass", "FactCount", "FactReport"]

FactClass: TypeAlias = Literal[
    "goal",
    "constraints",
    "decisions",
    "files_read",
    "files_modified",
    "commands",
    "measurements",
    "errors",
    "identifiers",
    "current_values",
    "superseded_values",
    "state",
    "next_steps",
    "other",
]
"""A class of fact: a summary section, with values split into current and superseded ones and
unknown sections counted as ``other``."""

_CLASS_OF = {
    "values": "current_values",
    SUPERSEDED: "superseded_values",
    EXTRA: "other",
    LATER: "goal",
}


class FactCount(BaseModel):
    """Facts of one class in one compaction."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    found: int = 0
    """Entries the summary would hold untrimmed: the previous summary's, merged with the facts
    of what was folded (a fact mentioned twice counts once)."""
    kept: int = 0
    """Entries still in the summary with their fact whole (``clipped`` ones are not kept)."""
    clipped: int = 0
    """Entries still in the summary whose fact itself was cut short to fit (a command, a
    decision, a sentence ending in "…"): not kept verbatim, and not counted as kept."""
    shortened: int = 0
    """Kept entries whose context was shortened to fit (the fact itself is verbatim)."""
    dropped: int = 0
    """Entries trimmed away (``found - kept``); counted in the summary's text too."""


class FactReport(BaseModel):
    """Facts found, kept and dropped per class by one compaction."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    classes: dict[FactClass, FactCount] = Field(default_factory=dict)
    """Counts per class (classes with nothing found are left out)."""
    summary_tokens: int = 0
    """Tokens of the summary's rendered text."""
    summary_cap_tokens: int = 0
    """The room the summary was given (see ``split_by_need`` in the docs)."""
    masked_outputs: int = 0
    """Tool outputs in the verbatim tail masked to give the summary room."""
    rejected_constraints: int = 0
    """Constraint entries refused because they are not text the user wrote (LLM summary)."""

    @property
    def found(self) -> int:
        """Facts found, every class."""
        return sum(c.found for c in self.classes.values())

    @property
    def kept(self) -> int:
        """Facts kept, every class."""
        return sum(c.kept for c in self.classes.values())

    @property
    def dropped(self) -> int:
        """Facts dropped, every class."""
        return sum(c.dropped for c in self.classes.values())

    @classmethod
    def compare(
        cls, untrimmed: SummaryDocument, summary: SummaryDocument, **fields: Any
    ) -> FactReport:
        """The report of trimming ``untrimmed`` down to ``summary``."""
        before = count_by_section(untrimmed)
        shortened: dict[str, int] = {}
        clipped: dict[str, int] = {}
        if summary is untrimmed:  # it fit: every fact kept, none shortened
            after = before
        else:
            after = count_by_section(summary)
            shortened, clipped = _shortened(untrimmed, summary)
        totals: dict[str, list[int]] = {}
        for name in sorted(set(before) | set(after)):
            found, kept = before.get(name, 0), after.get(name, 0)
            if found or kept:
                cut = min(clipped.get(name, 0), kept)
                slot = totals.setdefault(_CLASS_OF.get(name, name), [0, 0, 0, 0, 0])
                slot[0] += max(found, kept)
                slot[1] += kept - cut
                slot[2] += min(shortened.get(name, 0), kept) - cut
                slot[3] += max(0, found - kept)
                slot[4] += cut
        classes: dict[Any, FactCount] = {
            label: FactCount(found=f, kept=k, shortened=sh, dropped=d, clipped=c)
            for label, (f, k, sh, d, c) in totals.items()
        }
        return cls(classes=classes, **fields)

    @classmethod
    def of(cls, result: CompactResult) -> FactReport | None:
        """The report a compaction recorded (the last one, for a ladder), or ``None``."""
        return cls.from_details(result.stats.details)

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> FactReport | None:
        """The report in a ``CompactStats.details`` mapping (or its ladder steps), or ``None``."""
        found = details.get("facts")
        if isinstance(found, FactReport):
            return found
        if isinstance(found, Mapping):
            return cls.model_validate(dict(found))
        for step in reversed(list(details.get("steps") or [])):
            if isinstance(step, Mapping) and (report := cls.from_details(step)) is not None:
                return report
        summary = details.get("summary")  # a summary compressor's details under a fallback
        return cls.from_details(summary) if isinstance(summary, Mapping) else None


def _shortened(
    untrimmed: SummaryDocument, summary: SummaryDocument
) -> tuple[dict[str, int], dict[str, int]]:
    """Entries of ``summary`` per pool that are not in ``untrimmed`` as they are (shortened),
    and among them those whose fact itself was cut (clipped: a leading `` `code` `` span, or
    the whole entry when it has none, ends in "…" where no entry of ``untrimmed`` did)."""
    originals = {key: set(entries) for key, entries in untrimmed.sections.items()}
    shortened: dict[str, int] = {}
    clipped: dict[str, int] = {}
    for key, entries in summary.sections.items():
        known = originals.get(key, set())
        for entry in entries:
            if entry not in known:
                name = pool_of(key, entry)
                shortened[name] = shortened.get(name, 0) + 1
                if _fact_cut(entry):
                    clipped[name] = clipped.get(name, 0) + 1
    return shortened, clipped


def _fact_cut(entry: str) -> bool:
    """Whether an entry's fact was cut short to fit: its `` `code` `` span, or (without one) its
    text before any " — " context, holds the clipping mark; or it lost some of the earlier
    runs it listed (a measurement's history ending in "| …": each run's value is a fact)."""
    if entry.endswith(" | …"):
        return True
    fact = key_of(entry)
    if fact is None:
        fact = entry.partition(" — ")[0]
    return "…" in fact
