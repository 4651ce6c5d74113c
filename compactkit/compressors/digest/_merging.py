"""``Merging``: ``SummaryDocument.merge`` part after part, each merge costing what the part holds.

A digest grows its summary in rounds (``FactsNeed``: each round folds a few more groups), and
merging every round's facts into the whole summary again would cost the summary's size per
round. Here the merged entries stay in the form the rules read them in — a keyed section's
entries by key, an appended section's folded texts — so that a part only touches its own
entries; ``document()`` is the document ``doc.merge(p1).merge(p2)…`` returns.
"""

from __future__ import annotations

from compactkit.compressors import _entries
from compactkit.compressors._summary_format import clean_entry, merge_rule
from compactkit.compressors.sections import SECTIONS, SectionKey, SummaryDocument

__all__ = ["Merging"]

_READ: SectionKey = "files_read"
_MODIFIED: SectionKey = "files_modified"


class Merging:
    """A summary document merged into part after part (``merge(part)``) as
    ``SummaryDocument.merge`` merges, in time linear in each part's entries (but for the
    sections whose rules read every entry: commands and values, merged as ``merge`` merges).

    A keyed section is held by key from the first merge into it on, so only a document whose
    keyed sections hold one entry per key and no file both read and modified — any document
    ``merge`` or ``parse`` returns — is merged this way; any other is merged plainly.
    """

    def __init__(self, doc: SummaryDocument) -> None:
        self.plain: SummaryDocument | None = None if _merged_form(doc) else doc
        self.source = doc.sections  # (an appended section's folds are read from its entries)
        self.sections = {k: list(v) for k, v in doc.sections.items()}
        self.keyed: dict[SectionKey, dict[str, str]] = {}  # a keyed section's entries by key
        self.seen: dict[SectionKey, set[str]] = {}  # an appended section's folded entries
        self.commands: dict[SectionKey, _entries.Commands] = {}  # a commands section, open
        self.extra = {k: list(v) for k, v in doc.extra.items()}
        self.extra_seen: dict[str, set[str]] = {}
        self.trimmed, self.omitted = doc.trimmed, dict(doc.omitted)
        self._document: SummaryDocument | None = doc

    def merge(self, other: SummaryDocument) -> None:
        """Merge ``other`` (the newer document) in."""
        if self.plain is not None:
            self.plain = self.plain.merge(other)
            return
        self._document = None
        self.trimmed += other.trimmed
        touched: set[str] = set()  # the keys of the files ``other`` reads or modifies
        for spec in SECTIONS:
            new = [e for e in map(clean_entry, other.entries(spec.key)) if e]
            if new:
                self._merge_section(spec.key, new, touched)
        if touched and self.sections.get(_READ) and self.sections.get(_MODIFIED):
            self._fold_reads(touched)
        for heading, entries in other.extra.items():
            new = [e for e in map(clean_entry, entries) if e]
            if new:
                held = self.extra.setdefault(heading, [])
                seen = self.extra_seen.get(heading)
                if seen is None:
                    seen = self.extra_seen[heading] = {_entries.fold(e) for e in held}
                _entries.append_unique_into(held, seen, new)
        for name, count in other.omitted.items():
            self.omitted[name] = self.omitted.get(name, 0) + count
        # What ``merge`` leaves out of the document it returns (so it comes back last).
        for key in [k for k, v in self.sections.items() if not v]:
            del self.sections[key]
            self.keyed.pop(key, None)
            self.seen.pop(key, None)
            self.commands.pop(key, None)
        for heading in [h for h, v in self.extra.items() if not v]:
            del self.extra[heading]
            self.extra_seen.pop(heading, None)
        self.omitted = {k: v for k, v in self.omitted.items() if v}

    def document(self) -> SummaryDocument:
        """The merged document."""
        if self.plain is not None:
            return self.plain
        if self._document is None:
            self._document = SummaryDocument(
                sections={k: tuple(v) for k, v in self.sections.items()},
                extra={k: tuple(v) for k, v in self.extra.items()},
                trimmed=self.trimmed,
                omitted=dict(self.omitted),
            )
        return self._document

    def _merge_section(self, key: SectionKey, new: list[str], touched: set[str]) -> None:
        rule = merge_rule(key)
        held = self.sections.setdefault(key, [])
        if rule == "replaced":
            held[:] = _entries.append_unique([], new)
        elif rule == "values":
            values, dropped = _entries.merge_values(held, new)
            held[:] = values
            self.trimmed += dropped
        elif rule == "commands":  # merged on from what the merges before left, when exact
            commands = self.commands.get(key)
            if commands is None or not commands.exact:
                commands = self.commands[key] = _entries.Commands(_entries.earlier_kept(key))
                commands.add(held)
            commands.add(new)
            held[:] = commands.render()
        elif rule == "keyed":
            entries = self._by_key(key)
            _entries.merge_keyed_into(entries, new)
            held[:] = entries.values()
            if key in (_READ, _MODIFIED):
                touched.update(map(_entries.entry_key, new))
        else:
            seen = self.seen.get(key)
            if seen is None:  # (``held`` is still the section's entries as given)
                seen = self.seen[key] = folds_of(key, self.source.get(key, ()))
            _entries.append_unique_into(held, seen, new)

    def _fold_reads(self, touched: set[str]) -> None:
        """``merge``'s one entry for a file both read and modified, for the files this part
        named (before it, no file was in both sections)."""
        read, modified = self._by_key(_READ), self._by_key(_MODIFIED)
        both = [k for k in touched if k in read and k in modified]
        for key in both:
            modified[key] = _entries.with_read(modified[key], read[key])
            del read[key]
        if both:
            self.sections[_READ][:] = read.values()
            self.sections[_MODIFIED][:] = modified.values()

    def _by_key(self, key: SectionKey) -> dict[str, str]:
        entries = self.keyed.get(key)
        if entries is None:
            held = self.sections[key]
            entries = self.keyed[key] = {_entries.entry_key(e): e for e in held}
        return entries


# Per section key, the entries an appended section's folds were read from last, and the folds.
# The next compaction merges into the summary this one wrote: the same entries with this one's
# new ones after them, so only those are folded then (a long session's summary holds hundreds of
# decisions and constraints, and folding each again was O(summary) per compaction).
_FOLDS: dict[SectionKey, tuple[tuple[str, ...], frozenset[str]]] = {}


def folds_of(key: SectionKey, entries: tuple[str, ...]) -> set[str]:
    """``{fold(e) for e in entries}``, from the folds read last for ``key`` (``_FOLDS``) when
    ``entries`` starts with their entries: only the entries after those are folded (the plain
    version folds every entry; tests/compressors/test_merging.py holds them equal)."""
    held = _FOLDS.get(key)
    if held is not None and entries[: len(held[0])] == held[0]:
        folds = set(held[1])
        folds.update(map(_entries.fold, entries[len(held[0]) :]))
    else:
        folds = set(map(_entries.fold, entries))
    if entries and (held is None or held[0] is not entries):
        _FOLDS[key] = (entries, frozenset(folds))
    return folds


def _merged_form(doc: SummaryDocument) -> bool:
    """Whether ``doc``'s keyed sections hold one entry per key and no file is both read and
    modified (as in every document ``merge`` returns)."""
    keys: dict[SectionKey, set[str]] = {}
    for key, entries in doc.sections.items():
        if merge_rule(key) == "keyed":
            keys[key] = set(map(_entries.entry_key, entries))  # (remembered per entry)
            if len(keys[key]) != len(entries):
                return False
    return keys.get(_READ, set()).isdisjoint(keys.get(_MODIFIED, set()))
