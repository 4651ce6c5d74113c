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

import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, repeat

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors import _entries, _trim
from compactkit.compressors._refs import split_refs, without_provenance
from compactkit.compressors._summary_format import (
    ALIASES,
    BULLET,
    COUNT,
    FIT_NOTE,
    HEADINGS,
    KEY_OF_NOUN,
    KEYS,
    NOT_LISTED,
    NOTES_HEADING,
    NOUNS,
    QUOTED_NOTE,
    QUOTING,
    REFS_NOTE,
    SECTIONS,
    SPECS,
    SUMMARY_TITLE,
    TRIM_NOTE,
    SectionKey,
    SectionSpec,
    clean_entry,
    merge_rule,
    normalise_heading,
    trim_note,
    without_refs,
)

__all__ = [
    "REFS_NOTE",
    "SECTIONS",
    "SUMMARY_TITLE",
    "SectionKey",
    "SectionSpec",
    "SummaryDocument",
    "without_provenance",
    "without_refs",
]


def bullet_pieces(entries: Sequence[str]) -> Iterator[str]:
    """The pieces of ``entries`` as ``render`` writes them: a line break and ``- `` before
    each entry (its other lines indented by two spaces).

    The plain version writes ``"- " + entry.replace("\\n", "\\n  ")`` per entry and joins the
    lines: a Python step and a string per entry, the most of rendering a summary of a few
    thousand entries. Here a section whose entries are one line each (most) is its entries
    between separators, iterated in C, so the whole text is written by one ``join`` (no copy
    per entry, nor per section: a section can be a few hundred kB). Property-tested against the
    plain version (tests/compressors/test_summary_render.py)."""
    if any(map(operator.contains, entries, repeat("\n"))):
        entries = [entry.replace("\n", "\n  ") for entry in entries]
    return chain.from_iterable(zip(repeat("\n- "), entries))


@dataclass(frozen=True)
class SummaryDocument:
    """A parsed, sectioned summary. Immutable: every operation returns a new document."""

    sections: Mapping[SectionKey, tuple[str, ...]] = field(default_factory=dict)
    """Entries per known section, oldest first (sections without entries may be absent)."""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Entries under headings compactkit does not know (kept, rendered after the known ones)."""
    trimmed: int = 0
    """How many entries trimming has removed so far, over every compaction (rendered as a note)."""
    omitted: Mapping[str, int] = field(default_factory=dict)
    """Entries trimming dropped, per section key (or unknown heading), over every compaction;
    rendered in the trimming note (``…; not listed: 12 files read, 3 commands._``)."""
    stored_trimmed: int | None = None
    """For a summary trimmed to fit one request's room (``shrink``; never stored): how many of
    ``trimmed`` its stored form had trimmed to keep within its cap, the rest being left out for
    this request (the note says which is which). ``None``: a summary as stored (what merging
    returns)."""
    _rendered: str | None = field(default=None, init=False, compare=False, repr=False)

    # -- building and reading --------------------------------------------------------------

    @classmethod
    def of(cls, **entries: Iterable[str]) -> SummaryDocument:
        """A document from entries per section key (``SummaryDocument.of(goal=["…"])``).

        Raises:
            ValueError: an unknown section key.
        """
        for key in entries:
            if key not in SPECS:
                raise ValueError(f"unknown summary section {key!r}; known: {list(KEYS)}")
        new = cls(sections={k: tuple(v) for k, v in entries.items()})  # type: ignore[misc]
        return cls().merge(new)

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
        lines is one entry. Text before any heading, when it is not the title or one of
        compactkit's notes, is kept under "Notes" so that nothing of a foreign summary is lost.
        """
        sections: dict[SectionKey, list[str]] = {}
        extra: dict[str, list[str]] = {}
        omitted: dict[str, int] = {}
        trimmed, stored = 0, None
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
            note = _read_note(stripped, omitted) if stripped[0] in "_N" else None
            if note:
                trimmed += note[0]
                if note[1] is not None:
                    stored = (stored or 0) + note[1]
                continue
            if stripped in (QUOTED_NOTE, REFS_NOTE):
                continue
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
                key = ALIASES.get(normalise_heading(heading))
                if key is not None:
                    current = sections.setdefault(key, [])
                else:
                    current = extra.setdefault(heading, [])
                open_entry = False
                continue
            bullet = BULLET.match(line)
            if bullet:
                current.append(line[bullet.end() :])
                indent = bullet.end()  # continuation lines are indented to the bullet's text
                open_entry = True
            elif open_entry and current and (line.startswith(" ") or not BULLET.match(stripped)):
                leading = len(line) - len(line.lstrip(" "))
                current[-1] += "\n" + line[min(indent, leading) :]
            else:
                current.append(stripped)
                indent = 0
                open_entry = True
        doc = cls(trimmed=trimmed, omitted=omitted)
        known = cls(sections={k: tuple(v) for k, v in sections.items()})
        foreign = cls(extra={k: tuple(v) for k, v in extra.items() if v})
        # (merging nothing into what a merge returned would return the same document)
        doc = doc.merge(known).merge(foreign) if foreign.extra else doc.merge(known)
        return doc if stored is None else replace(doc, stored_trimmed=stored)

    def render(self) -> str:
        """The summary as Markdown: the title, a trimming note when entries were trimmed (with
        how many per section are not listed), a line labelling `code` spans as quoted data when
        any section quotes tool output, then each section under its heading (see
        ``SECTIONS``), unknown sections last. (Remembered: a document never changes.)"""
        if self._rendered is not None:
            return self._rendered
        pieces: list[Iterable[str]] = [("\n".join(self.head_lines()),)]
        for heading, entries in self.blocks():
            pieces += [(f"\n\n## {heading}",), bullet_pieces(entries)]
        pieces.append(("\n",))
        text = "".join(chain.from_iterable(pieces))
        object.__setattr__(self, "_rendered", text)
        return text

    def head_lines(self) -> list[str]:
        """The lines ``render`` writes before the sections: the title, the trimming note, the
        line labelling `code` spans as quoted data."""
        lines = [SUMMARY_TITLE]
        if self.trimmed:
            counts = [f"{self.omitted[key]} {NOUNS[key]}" for key in KEYS if self.omitted.get(key)]
            counts += [
                f"{n} under {heading}"
                for heading, n in self.omitted.items()
                if heading not in NOUNS
            ]
            lines.append(trim_note(self.trimmed, counts, self.stored_trimmed))
        if self.extra or any(self.sections.get(k) for k in QUOTING):
            lines.append(QUOTED_NOTE)
        if self.has_refs:
            lines.append(REFS_NOTE)
        return lines

    @property
    def has_refs(self) -> bool:
        """Whether the newest entry of some section carries references (``[#412-418]``: the
        items it was drawn from), so that the summary says what they are. Only the newest is
        read, so that sizing a growing summary stays linear; entries are ordered by last
        touch, and every entry a compressor writes from stored items carries them."""
        return any(
            split_refs(entries[-1])[1] for entries in self.sections.values() if entries
        ) or any(split_refs(entries[-1])[1] for entries in self.extra.values() if entries)

    def blocks(self) -> list[tuple[str, tuple[str, ...]]]:
        """The sections ``render`` writes, in order, as ``(heading, entries)``: the known ones
        holding entries (see ``SECTIONS``), then the unknown ones."""
        blocks = [(spec.heading, self.entries(spec.key)) for spec in SECTIONS]
        blocks += list(self.extra.items())
        return [(heading, entries) for heading, entries in blocks if entries]

    # -- combining --------------------------------------------------------------------------

    def merge(self, other: SummaryDocument) -> SummaryDocument:
        """This document extended with ``other`` (the newer one). Order is kept, duplicates
        (whitespace- and case-insensitive) are dropped. Per section:

        * ``files_read``, ``files_modified``, ``identifiers``, ``errors``: one entry per leading
          `` `key` ``; a newer entry for a known key adds its details (after " — ",
          "; "-separated) to the existing entry — a detail already there is counted
          (``edited x3``) — and the entry moves to the end (the section is ordered by last
          touch, so trimming spares what is still being worked on); the newest six details are
          kept ("N earlier omitted" counts the rest). A file both read and modified has one
          entry, under files modified, with ``read`` among its details;
        * ``commands``: one entry per command: its newest outcome, and how often it ran
          (``(x3)``); ``measurements`` likewise, with what up to eight earlier runs measured;
        * ``values``: one *current* entry per `` `name` ``; a newer value marks the current one
          ``(superseded)`` and is appended as ``(current)``; the newest three superseded values
          per name are kept, older ones count as trimmed;
        * ``state``, ``next_steps``: replaced by ``other``'s when it has any (they describe
          now, not history);
        * every other section, and unknown ones: appended.

        Linear in the entries of both documents.
        """
        sections: dict[SectionKey, tuple[str, ...]] = dict(self.sections)
        trimmed = self.trimmed + other.trimmed
        for key in KEYS:
            new = [clean_entry(e) for e in other.entries(key)]
            new = [e for e in new if e]
            if not new:
                continue
            rule = merge_rule(key)
            if rule == "replaced":
                sections[key] = tuple(_entries.append_unique([], new))
            elif rule == "values":
                values, dropped = _entries.merge_values(list(self.entries(key)), new)
                sections[key] = tuple(values)
                trimmed += dropped
            elif rule == "commands":
                sections[key] = tuple(
                    _entries.merge_commands(
                        list(self.entries(key)), new, earlier=_entries.earlier_kept(key)
                    )
                )
            elif rule == "keyed":
                sections[key] = tuple(_entries.merge_keyed(list(sections.get(key, ())), new))
            else:
                sections[key] = tuple(_entries.append_unique(list(self.entries(key)), new))
        sections = _fold_reads(sections)
        extra = dict(self.extra)
        for heading, entries in other.extra.items():
            new = [e for e in map(clean_entry, entries) if e]
            if new:
                extra[heading] = tuple(_entries.append_unique(list(extra.get(heading, ())), new))
        omitted = dict(self.omitted)
        for name, count in other.omitted.items():
            omitted[name] = omitted.get(name, 0) + count
        return SummaryDocument(
            sections={k: v for k, v in sections.items() if v},
            extra={k: v for k, v in extra.items() if v},
            trimmed=trimmed,
            omitted={k: v for k, v in omitted.items() if v},
        )

    def trim_to(
        self,
        cap_tokens: int,
        counter: TokenCounter,
        *,
        keep: frozenset[str] = frozenset(),
        measure: Callable[[SummaryDocument], int] | None = None,
    ) -> SummaryDocument:
        """The document within ``cap_tokens`` of rendered text, in linear time.

        First every entry's context is shortened (its fact — path, error line, command,
        identifier, value, constraint — stays verbatim); then, tier by tier, entries lose
        their context and are dropped: files only read, commands, superseded values and
        unknown sections first; then decisions; then identifiers, errors, files modified and
        the current state; the goal, the constraints and the current values last. Within a
        tier the oldest entry of the section holding the most tokens goes first. Dropped
        entries are counted under their section's heading and in the trimming note. When even
        an empty document does not fit, every entry is removed (and the note keeps only its
        total when its counts do not fit either). The document itself is returned when it fits
        already.

        ``keep`` names trimming pools (``"goal"``, ``"constraints"``) whose entries are never
        dropped: when the cap cannot hold them, the result is over the cap with them whole.
        ``measure(doc)``, when given, is the tokens of ``doc.render()`` under ``counter`` (a
        caller that sizes summaries incrementally passes its sizer); the result is the same.
        """
        return self.trim_keeping(cap_tokens, counter, keep=keep, measure=measure)[0]

    def trim_keeping(
        self,
        cap_tokens: int,
        counter: TokenCounter,
        *,
        keep: frozenset[str] = frozenset(),
        measure: Callable[[SummaryDocument], int] | None = None,
    ) -> tuple[SummaryDocument, bool]:
        """``trim_to``'s document, and whether ``trim_to`` without ``keep`` returns the same
        one (``_trim.fit_keeping``: when ``keep`` changed none of the steps taken)."""
        label = (QUOTED_NOTE, QUOTING)
        return _trim.fit_keeping(
            self, cap_tokens, counter, HEADINGS, label, keep=keep, measure=measure
        )


def _read_note(line: str, omitted: dict[str, int]) -> tuple[int, int | None] | None:
    """A trimming note's counts (``trim_note``: every form compactkit wrote): the entries
    trimmed, and for a summary fitted to one request how many its stored form had trimmed
    (else ``None``); the counts per section it lists are added to ``omitted``. ``None`` when
    ``line`` is no note."""
    note = TRIM_NOTE.match(line)
    if not note:
        return None
    listed = NOT_LISTED.search(line)
    for part in listed.group(1).split(", ") if listed else ():
        count = COUNT.match(part)
        if count:
            name = count.group("heading") or KEY_OF_NOUN.get(count.group("noun"))
            if name:
                omitted[name] = omitted.get(name, 0) + int(count.group(1))
    trimmed, fit = int(note.group(1)), FIT_NOTE.search(line)
    return trimmed, None if fit is None else max(0, trimmed - int(fit.group(1) or trimmed))


def _fold_reads(sections: dict[SectionKey, tuple[str, ...]]) -> dict[SectionKey, tuple[str, ...]]:
    """A file both read and modified keeps one entry, under files modified, noting ``read``."""
    read, modified = sections.get("files_read", ()), sections.get("files_modified", ())
    if not read or not modified:
        return sections
    key = _entries.entry_key
    changed = {key(e) for e in modified}
    if not any(key(e) in changed for e in read):
        return sections
    reads = {key(e): e for e in read}
    out = [_entries.with_read(e, reads[key(e)]) if key(e) in reads else e for e in modified]
    result = dict(sections)
    result["files_read"] = tuple(e for e in read if key(e) not in changed)
    result["files_modified"] = tuple(out)
    return result
