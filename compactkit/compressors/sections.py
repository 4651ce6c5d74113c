"""The anchored, sectioned summary every compactkit compressor writes and merges into.

The deterministic digest and the LLM summary share this structure, so either can read and
extend what the other wrote, and repeated compactions *merge into* the summary instead of
regenerating or freezing it. Rendered, a summary is Markdown with one stable heading per
section, each entry a bullet (continuation lines indented by two spaces)::

    # Conversation summary (compactkit)
    _Note: 3 older entries were trimmed to keep this summary within its token cap._

    ## Goal
    - Add retry support to the HTTP client.

    ## Constraints and instructions (verbatim)
    - Don't change the public API.

    ## Values (current vs superseded)
    - `max_retries` = 5 (current)
    - `max_retries` = 3 (superseded)

Sections, in order (key: heading): see ``SECTIONS``. ``parse`` reads any rendered summary back
(headings are matched loosely, so an LLM's near-miss spelling still lands in its section);
text under an unknown heading is kept under that heading, and text outside any heading is kept
under "Notes". Merge rules per section are listed on ``SummaryDocument.merge``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from compactkit.budget.tokens import TokenCounter

__all__ = ["SECTIONS", "SUMMARY_TITLE", "SectionKey", "SectionSpec", "SummaryDocument"]

SectionKey: TypeAlias = Literal[
    "goal",
    "constraints",
    "decisions",
    "files_read",
    "files_modified",
    "commands",
    "errors",
    "identifiers",
    "values",
    "state",
    "next_steps",
]

SUMMARY_TITLE = "# Conversation summary (compactkit)"
"""The first line of a rendered summary."""


@dataclass(frozen=True)
class SectionSpec:
    """One section of the summary: its key, its rendered heading and what belongs in it."""

    key: SectionKey
    """The key used in code (``doc.entries("files_read")``)."""
    heading: str
    """The rendered heading (after ``## ``); stable, documented, part of the format."""
    describes: str
    """What the section holds (also the instruction an LLM summarizer gets for it)."""


SECTIONS: tuple[SectionSpec, ...] = (
    SectionSpec("goal", "Goal", "What the user wants achieved overall, in their words."),
    SectionSpec(
        "constraints",
        "Constraints and instructions (verbatim)",
        "Every rule, preference or instruction the user gave, quoted exactly.",
    ),
    SectionSpec(
        "decisions", "Decisions and why", "Choices made, approaches abandoned, and the reasons."
    ),
    SectionSpec("files_read", "Files read", "One entry per path: `path` — what was looked at."),
    SectionSpec(
        "files_modified",
        "Files modified",
        "One entry per path: `path` — what was done to it (created, edited how, deleted).",
    ),
    SectionSpec(
        "commands", "Commands run", "`command` → outcome (exit code, pass/fail counts, error)."
    ),
    SectionSpec("errors", "Errors and fixes", "Exact error strings and how each was resolved."),
    SectionSpec(
        "identifiers",
        "Identifiers",
        "Exact ids, URLs, commit shas, ticket numbers, versions — copied, never paraphrased.",
    ),
    SectionSpec(
        "values",
        "Values (current vs superseded)",
        "`name` = value (current) — and older values marked (superseded).",
    ),
    SectionSpec("state", "Current state", "Where the work stands right now."),
    SectionSpec("next_steps", "Next steps", "What remains to be done, in order."),
)

_SPECS = {spec.key: spec for spec in SECTIONS}
_KEYS: tuple[SectionKey, ...] = tuple(spec.key for spec in SECTIONS)
NOTES_HEADING = "Notes"
# Sections a newer summary replaces instead of extending: they describe "now", not history.
_REPLACED: frozenset[SectionKey] = frozenset({"state", "next_steps"})
# Sections whose entries are keyed by their leading `code` span and merged per key ("values"
# is keyed too, by name, with its own supersede rule: see _merge_values).
_KEYED: frozenset[SectionKey] = frozenset({"files_read", "files_modified", "identifiers"})
# Trimming order: tiers are emptied first to last (see trim_to).
_TRIM_TIERS: tuple[tuple[SectionKey, ...], ...] = (
    ("commands", "identifiers", "files_read"),
    ("errors", "decisions", "files_modified", "values"),
    ("next_steps", "state", "constraints", "goal"),
)
_ALIASES: dict[str, SectionKey] = {
    "goal": "goal",
    "goals": "goal",
    "intent": "goal",
    "session intent": "goal",
    "primary request and intent": "goal",
    "task": "goal",
    "constraints": "constraints",
    "constraints and instructions": "constraints",
    "instructions": "constraints",
    "user constraints": "constraints",
    "decisions": "decisions",
    "decisions made": "decisions",
    "decisions and why": "decisions",
    "files read": "files_read",
    "files modified": "files_modified",
    "files changed": "files_modified",
    "commands": "commands",
    "commands run": "commands",
    "commands run and outcome": "commands",
    "errors": "errors",
    "errors and fixes": "errors",
    "identifiers": "identifiers",
    "ids": "identifiers",
    "values": "values",
    "values current vs superseded": "values",
    "settings": "values",
    "current state": "state",
    "state": "state",
    "current work": "state",
    "next steps": "next_steps",
    "next step": "next_steps",
    "pending tasks": "next_steps",
}
_TRIM_NOTE = re.compile(r"^_?Note: (\d+) older entr(?:y was|ies were) trimmed\b.*$")
_LEADING_CODE = re.compile(r"^`([^`]+)`")
_VALUE = re.compile(r"^`(?P<name>[^`]+)` = (?P<value>.*?)(?: \((?P<status>current|superseded)\))?$")
_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
_OMITTED = re.compile(r"^(\d+) earlier omitted$")
_MAX_DETAILS = 6  # per keyed entry (a file edited fifty times keeps its six latest edits)
_MAX_SUPERSEDED = 3  # per value name


def _normalise_heading(text: str) -> str:
    text = re.sub(r"^\d+[.)]\s*", "", text.strip().lower())
    text = re.sub(r"[^a-z0-9 ]+", " ", text)
    text = re.sub(r"\bverbatim\b|\band outcomes?\b$", "", text)
    return " ".join(text.split())


def _clean(entry: str) -> str:
    """One entry: stripped, no blank lines inside, no trailing spaces."""
    lines = [line.rstrip() for line in entry.strip().splitlines()]
    return "\n".join(line for line in lines if line.strip())


def _dedupe_key(section: str, entry: str) -> str:
    if section in _KEYED:
        match = _LEADING_CODE.match(entry)
        if match:
            return match.group(1)
    return " ".join(entry.split()).casefold()


@dataclass(frozen=True)
class SummaryDocument:
    """A parsed, sectioned summary. Immutable: every operation returns a new document."""

    sections: Mapping[SectionKey, tuple[str, ...]] = field(default_factory=dict)
    """Entries per known section, oldest first (sections without entries may be absent)."""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Entries under headings compactkit does not know (kept, rendered after the known ones)."""
    trimmed: int = 0
    """How many entries trimming has removed so far, over every compaction (rendered as a note)."""

    # -- building and reading --------------------------------------------------------------

    @classmethod
    def of(cls, **entries: Iterable[str]) -> SummaryDocument:
        """A document from entries per section key (``SummaryDocument.of(goal=["…"])``).

        Raises:
            ValueError: an unknown section key.
        """
        doc = cls()
        for key, values in entries.items():
            if key not in _SPECS:
                raise ValueError(f"unknown summary section {key!r}; known: {list(_KEYS)}")
            doc = doc.merge(cls(sections={key: tuple(values)}))
        return doc

    def entries(self, key: SectionKey) -> tuple[str, ...]:
        """The entries of one section, oldest first."""
        return self.sections.get(key, ())

    def __len__(self) -> int:
        """The number of entries in every section."""
        return sum(len(v) for v in self.sections.values()) + sum(
            len(v) for v in self.extra.values()
        )

    @property
    def is_empty(self) -> bool:
        """Whether the document holds no entry at all."""
        return len(self) == 0

    # -- text -------------------------------------------------------------------------------

    @classmethod
    def parse(cls, text: str) -> SummaryDocument:
        """Read a rendered summary (compactkit's or an LLM's) back into sections.

        Bullets become entries; indented lines continue the entry above; a paragraph of plain
        lines is one entry. Text before any heading, when it is not the title or the trimming
        note, is kept under "Notes" so that nothing of a foreign summary is lost.
        """
        sections: dict[SectionKey, list[str]] = {}
        extra: dict[str, list[str]] = {}
        trimmed = 0
        current: list[str] = extra.setdefault(NOTES_HEADING, [])
        open_entry = False
        indent = 0
        for raw in text.splitlines():
            line = raw.rstrip()
            stripped = line.strip()
            if not stripped:
                open_entry = False
                continue
            if line.startswith("# ") and not line.startswith("## "):
                open_entry = False
                continue  # the title
            note = _TRIM_NOTE.match(stripped)
            if note:
                trimmed += int(note.group(1))
                continue
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
                key = _ALIASES.get(_normalise_heading(heading))
                if key is not None:
                    current = sections.setdefault(key, [])
                else:
                    current = extra.setdefault(heading, [])
                open_entry = False
                continue
            bullet = _BULLET.match(line)
            if bullet:
                current.append(line[bullet.end() :])
                indent = bullet.end()  # continuation lines are indented to the bullet's text
                open_entry = True
            elif open_entry and current and (line.startswith(" ") or not _BULLET.match(stripped)):
                leading = len(line) - len(line.lstrip(" "))
                current[-1] += "\n" + line[min(indent, leading) :]
            else:
                current.append(stripped)
                indent = 0
                open_entry = True
        doc = cls(trimmed=trimmed)
        known = cls(sections={k: tuple(v) for k, v in sections.items()})
        foreign = cls(extra={k: tuple(v) for k, v in extra.items() if v})
        return doc.merge(known).merge(foreign)

    def render(self) -> str:
        """The summary as Markdown: the title, a trimming note when entries were trimmed, then
        each non-empty section under its heading (see ``SECTIONS``), unknown sections last."""
        lines = [SUMMARY_TITLE]
        if self.trimmed:
            noun = "entry was" if self.trimmed == 1 else "entries were"
            lines.append(
                f"_Note: {self.trimmed} older {noun} trimmed to keep this summary "
                "within its token cap._"
            )
        blocks = [(spec.heading, self.entries(spec.key)) for spec in SECTIONS]
        blocks += list(self.extra.items())
        for heading, entries in blocks:
            if not entries:
                continue
            lines += ["", f"## {heading}"]
            for entry in entries:
                first, *rest = entry.split("\n")
                lines.append(f"- {first}")
                lines.extend(f"  {line}" for line in rest)
        return "\n".join(lines) + "\n"

    # -- combining --------------------------------------------------------------------------

    def merge(self, other: SummaryDocument) -> SummaryDocument:
        """This document extended with ``other`` (the newer one). Order is kept, duplicates
        (whitespace- and case-insensitive) are dropped. Per section:

        * ``files_read``, ``files_modified``, ``identifiers``: one entry per leading `` `key` ``;
          a newer entry for a known key adds its new details (after " — ", "; "-separated) to
          the existing entry, which moves to the end (the section is ordered by last touch, so
          trimming spares what is still being worked on); the newest six details are kept
          ("N earlier omitted" counts the rest);
        * ``values``: one *current* entry per `` `name` ``; a newer value marks the current one
          ``(superseded)`` and is appended as ``(current)``; the newest three superseded values
          per name are kept, older ones count as trimmed;
        * ``state``, ``next_steps``: replaced by ``other``'s when it has any (they describe
          now, not history);
        * every other section, and unknown ones: appended.
        """
        sections: dict[SectionKey, tuple[str, ...]] = dict(self.sections)
        trimmed = self.trimmed + other.trimmed
        for key in _KEYS:
            new = [_clean(e) for e in other.entries(key)]
            new = [e for e in new if e]
            if not new:
                continue
            if key in _REPLACED:
                sections[key] = tuple(_append_unique(key, [], new))
            elif key == "values":
                values, dropped = _merge_values(list(self.entries(key)), new)
                sections[key] = tuple(values)
                trimmed += dropped
            elif key in _KEYED:
                sections[key] = tuple(_merge_keyed(key, list(self.entries(key)), new))
            else:
                sections[key] = tuple(_append_unique(key, list(self.entries(key)), new))
        extra = dict(self.extra)
        for heading, entries in other.extra.items():
            new = [e for e in (_clean(x) for x in entries) if e]
            if new:
                extra[heading] = tuple(_append_unique(heading, list(extra.get(heading, ())), new))
        return SummaryDocument(
            sections={k: v for k, v in sections.items() if v},
            extra={k: v for k, v in extra.items() if v},
            trimmed=trimmed,
        )

    def trim_to(self, cap_tokens: int, counter: TokenCounter) -> SummaryDocument:
        """The document with its oldest entries removed until ``render()`` fits ``cap_tokens``.

        Entries go in tiers: commands, identifiers, files read and unknown sections first;
        then errors, decisions, files modified and values (superseded values before current
        ones); the goal, constraints, state and next steps last. Within a tier the oldest entry of
        the section holding the most tokens goes first. The count of removed entries is noted
        in the rendered text. When even an empty document does not fit, every entry is removed.
        """
        if counter.count_text(self.render()) <= cap_tokens:
            return self
        sections = {k: list(v) for k, v in self.sections.items()}
        extra = {k: list(v) for k, v in self.extra.items()}
        removed = 0

        def build() -> SummaryDocument:
            return SummaryDocument(
                sections={k: tuple(v) for k, v in sections.items() if v},
                extra={k: tuple(v) for k, v in extra.items() if v},
                trimmed=self.trimmed + removed,
            )

        sizes: dict[str, int] = {}

        def cost(entry: str) -> int:
            if entry not in sizes:
                sizes[entry] = counter.count_text(entry) + 2
            return sizes[entry]

        total = counter.count_text(build().render()) + 16  # room for the trimming note
        for tier_index, tier in enumerate(_TRIM_TIERS):
            pools: dict[str, list[str]] = {k: sections[k] for k in tier if k in sections}
            if tier_index == 0:
                pools.update({f"extra:{k}": v for k, v in extra.items()})
            if "values" in pools:  # superseded values are the oldest facts of all
                values = pools["values"]
                stale = [e for e in values if e.endswith("(superseded)")]
                while stale and total > cap_tokens:
                    entry = stale.pop(0)
                    values.remove(entry)
                    total -= cost(entry)
                    removed += 1
            while total > cap_tokens:
                live = [(sum(cost(e) for e in v), name) for name, v in pools.items() if v]
                if not live:
                    break
                _, name = max(live)
                entry = pools[name].pop(0)
                total -= cost(entry)
                removed += 1
                if total <= cap_tokens:  # estimates drift: check the real text
                    total = counter.count_text(build().render())
            if total <= cap_tokens:
                break
        return build()


def _append_unique(section: str, existing: list[str], new: Iterable[str]) -> list[str]:
    seen = {_dedupe_key(section, e) for e in existing}
    for entry in new:
        key = _dedupe_key(section, entry)
        if key not in seen:
            seen.add(key)
            existing.append(entry)
    return existing


def _split_details(entry: str) -> tuple[str, list[str]]:
    head, sep, tail = entry.partition(" — ")
    return head, [d.strip() for d in tail.split("; ") if d.strip()] if sep else []


def _merge_keyed(section: SectionKey, existing: list[str], new: Iterable[str]) -> list[str]:
    index = {_dedupe_key(section, e): i for i, e in enumerate(existing)}
    for entry in new:
        key = _dedupe_key(section, entry)
        if key not in index:
            index[key] = len(existing)
            existing.append(entry)
            continue
        head, details = _split_details(existing[index[key]])
        _, more = _split_details(entry)
        folded = {" ".join(d.split()).casefold() for d in details}
        fresh = [d for d in more if " ".join(d.split()).casefold() not in folded]
        if not fresh:
            continue
        # Touched again: the entry moves to the end, so trimming (oldest first) spares it.
        del existing[index[key]]
        details = _bounded(details + fresh)
        existing.append(f"{head} — {'; '.join(details)}")
        index = {_dedupe_key(section, e): i for i, e in enumerate(existing)}
    return existing


def _bounded(details: list[str]) -> list[str]:
    """At most ``_MAX_DETAILS`` details per keyed entry: the newest, after a count of the rest."""
    omitted = 0
    match = _OMITTED.match(details[0]) if details else None
    if match:
        omitted, details = int(match.group(1)), details[1:]
    if len(details) <= _MAX_DETAILS:
        return ([f"{omitted} earlier omitted"] if omitted else []) + details
    omitted += len(details) - _MAX_DETAILS
    return [f"{omitted} earlier omitted", *details[-_MAX_DETAILS:]]


def _merge_values(existing: list[str], new: Iterable[str]) -> tuple[list[str], int]:
    """Values merged (see ``merge``), and how many old superseded values were dropped."""
    for entry in new:
        match = _VALUE.match(entry)
        if match is None:
            existing = _append_unique("values", existing, [entry])
            continue
        name, value = match.group("name"), match.group("value")
        status = match.group("status") or "current"
        line = f"`{name}` = {value} ({status})"
        if status == "superseded" or line in existing:  # (already current: nothing moves)
            existing = _append_unique("values", existing, [line])
            continue
        kept: list[str] = []
        for old in existing:
            old_match = _VALUE.match(old)
            if old_match is None or old_match.group("name") != name:
                kept.append(old)
            elif old_match.group("value") == value:
                continue  # the new current entry replaces it (or its superseded twin)
            else:
                kept.append(f"`{name}` = {old_match.group('value')} (superseded)")
        existing = _append_unique("values", [], [*kept, line])
    # Keep the newest few superseded values per name; older ones are counted as trimmed.
    seen: dict[str, int] = {}
    out: list[str] = []
    dropped = 0
    for entry in reversed(existing):
        match = _VALUE.match(entry)
        if match and match.group("status") == "superseded":
            count = seen[match.group("name")] = seen.get(match.group("name"), 0) + 1
            if count > _MAX_SUPERSEDED:
                dropped += 1
                continue
        out.append(entry)
    return out[::-1], dropped
