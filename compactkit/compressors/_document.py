"""The running summary kept parsed between compactions (the incremental summary document).

A digest reads the summary back (``SummaryDocument.parse``) at the start of every compaction,
and the summary it reads is, nearly always, the one the compaction before rendered: parsing it
again costs the whole summary's size per compaction, the most of it once the summary nears its
cap. So the compaction that renders a summary remembers the document ``parse`` returns for that
text (``remember``), and the next one reads it from there (``parsed``).

Correctness first: a document is remembered only when what its rendered text parses back to
is sure, entry for entry, in the same order (every entry is whole clean lines that parse keeps
as they are, the notes read back as written, and each section either one no merge rule would
change or one whose rule reads its entries alone, applied here as parse applies it) — what
``parse`` would return, exactly; otherwise nothing is remembered and the text is parsed. The
look-up is by the exact text, so a summary changed in between, or written by someone else, is
parsed as before. The checks are by entry and remembered by entry text: a summary keeps most of
its entries from one compaction to the next.

Cost model: ``remember`` is a few dictionary look-ups per entry (plus the merge rules of the
values section, which is small); ``parsed`` is one look-up of the text. The newest
``_REMEMBERED`` summaries are kept, process-wide.
"""

from __future__ import annotations

import functools
import threading

from compactkit.compressors import _entries
from compactkit.compressors._summary_format import (
    ALIASES,
    NOTES_HEADING,
    QUOTED_NOTE,
    REFS_NOTE,
    SECTIONS,
    TRIM_NOTE,
    SectionKey,
    clean_entry,
    merge_rule,
    normalise_heading,
)
from compactkit.compressors.sections import SummaryDocument

__all__ = ["as_parsed", "parsed", "remember"]

_REMEMBERED = 4  # summaries kept (a session has one running summary; a few sessions share)
_lock = threading.Lock()
_documents: dict[str, SummaryDocument] = {}  # rendered text -> what parse returns for it
_KEYS: dict[str, SectionKey] = {spec.key: spec.key for spec in SECTIONS}
# Every known heading, rendered, reads back as its own section (else nothing is remembered).
_HEADINGS_READ_BACK = all(ALIASES.get(normalise_heading(s.heading)) == s.key for s in SECTIONS)


def parsed(text: str) -> SummaryDocument:
    """``SummaryDocument.parse(text)``: remembered when a compaction rendered ``text``."""
    doc = _documents.get(text)
    return doc if doc is not None else SummaryDocument.parse(text)


def remember(doc: SummaryDocument, text: str) -> None:
    """Remember what ``parse(text)`` returns, ``text`` being ``doc.render()``, when that is
    sure to be ``doc`` itself (see the module docstring); else nothing."""
    read_back = as_parsed(doc)
    if read_back is None:
        return
    with _lock:
        _documents.pop(text, None)
        _documents[text] = read_back
        while len(_documents) > _REMEMBERED:
            del _documents[next(iter(_documents))]


def as_parsed(doc: SummaryDocument) -> SummaryDocument | None:
    """The document ``SummaryDocument.parse(doc.render())`` returns, built from ``doc`` without
    rendering or parsing it; ``None`` when it could differ from ``doc`` (then parse)."""
    if not _HEADINGS_READ_BACK:
        return None
    sections: dict[SectionKey, tuple[str, ...]] = {}
    for key, entries in doc.sections.items():
        if key not in _KEYS or not entries:
            return None
    for spec in SECTIONS:  # parse returns the sections in this order
        entries = doc.sections.get(spec.key, ())
        if entries:
            read = _read_back(spec.key, entries)
            if read is None:
                return None
            sections[spec.key] = read
    if not _reads_kept_apart(sections):
        return None
    extra: dict[str, tuple[str, ...]] = {}
    if NOTES_HEADING in doc.extra:  # parse opens "Notes" first, for text before any heading
        extra[NOTES_HEADING] = doc.extra[NOTES_HEADING]
    for heading, entries in doc.extra.items():
        if not entries or not _heading_reads_back(heading) or not _unique(entries):
            return None
        if not all(map(_line_safe, entries)):
            return None
        extra[heading] = entries
    # The notes (the trimming note's counts): parsed from the head lines alone, since no
    # entry line reads as a note (``_line_safe``).
    head = SummaryDocument.parse("\n".join(doc.head_lines()))
    if head.sections or head.extra:
        return None  # (a line break in a heading the note names: a line of its own)
    return SummaryDocument(
        sections=sections, extra=extra, trimmed=head.trimmed, omitted=dict(head.omitted)
    )


def _read_back(key: SectionKey, entries: tuple[str, ...]) -> tuple[str, ...] | None:
    """What ``parse`` returns for a section's entries, when it is sure: the entries themselves
    when it keeps them as they are; else, when each reads back whole, what the section's merge
    rule makes of them merged into nothing (parse merges what it read into an empty
    document) for the rules that read nothing but the entries (commands, appended, replaced:
    a trimmed summary can shorten two commands to one, or two decisions to the same text);
    ``None`` otherwise (then parse)."""
    if _kept_as_is(key, entries):
        return entries
    rule = merge_rule(key)
    if rule not in ("commands", "appended", "replaced") or not all(map(_line_safe, entries)):
        return None
    if rule == "commands":
        return tuple(_entries.merge_commands([], list(entries), earlier=_entries.earlier_kept(key)))
    return tuple(_entries.append_unique([], list(entries)))


def _kept_as_is(key: SectionKey, entries: tuple[str, ...]) -> bool:
    """Whether ``parse`` keeps a section's entries as they are: each reads back whole, and the
    section's merge rule, merging them into nothing, returns them unchanged."""
    if not all(map(_line_safe, entries)):
        return False
    rule = merge_rule(key)
    if rule == "keyed":
        return len(set(map(_entries.entry_key, entries))) == len(entries)
    if rule == "commands":
        keys = list(map(_command_key, entries))
        return None not in keys and len(set(keys)) == len(entries)
    if rule == "values":
        return _entries.merge_values([], list(entries)) == (list(entries), 0)
    return _unique(entries)  # appended, replaced: one entry per folded text


def _unique(entries: tuple[str, ...]) -> bool:
    return len(set(map(_entries.fold, entries))) == len(entries)


def _reads_kept_apart(sections: dict[SectionKey, tuple[str, ...]]) -> bool:
    """No file is both read and modified (``merge`` would fold the two entries into one)."""
    read, modified = sections.get("files_read", ()), sections.get("files_modified", ())
    if not read or not modified:
        return True
    return set(map(_entries.entry_key, read)).isdisjoint(map(_entries.entry_key, modified))


@functools.lru_cache(maxsize=1 << 15)
def _line_safe(entry: str) -> bool:
    """Whether ``entry``, rendered as a bullet, parses back as itself: clean lines, and no
    continuation line that parse would read as one of its notes."""
    if not entry or clean_entry(entry) != entry:
        return False
    for line in entry.split("\n")[1:]:
        stripped = line.strip()
        if stripped in (QUOTED_NOTE, REFS_NOTE):
            return False
        if stripped[0] in "_N" and TRIM_NOTE.match(stripped):
            return False
    return True


@functools.lru_cache(maxsize=1 << 15)
def _command_key(entry: str) -> str | None:
    """The command a commands entry is merged on, when merging the entry into nothing returns
    it unchanged (else ``None``)."""
    return _entries.command_parts(entry)[0] if _entries.reads_back(entry) else None


def _heading_reads_back(heading: str) -> bool:
    """Whether ``## heading`` parses back as the same unknown heading."""
    return (
        bool(heading)
        and heading == heading.strip()
        and not heading.startswith("#")
        and heading.splitlines() == [heading]
        and ALIASES.get(normalise_heading(heading)) is None
    )
