"""How summary entries merge: keys, details, repeat counts (the rules behind ``SummaryDocument.merge``).

An entry is one line per fact: the fact first, verbatim (a `` `path` ``, an error line, a command,
an identifier, a constraint), then its context. Keyed sections hold one entry per fact, so a
summary's cost grows with distinct facts, not with mentions:

* files, errors, identifiers: `` `key` — detail; detail x3 `` (a repeated detail is counted,
  not repeated; the newest ``MAX_DETAILS`` are kept, "N earlier omitted" counts the rest);
* commands: `` `command` → newest outcome (xN) `` (how often it ran);
* values: one *current* entry per name, older values marked ``(superseded)``.

Every function here is linear in the entries it reads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from compactkit.compressors._refs import Spans, add_refs, merge_spans, split_refs, with_refs

LEADING_CODE = re.compile(r"^`([^`]+)`")
VALUE = re.compile(r"^`(?P<name>[^`]+)` = (?P<value>.*?)(?: \((?P<status>current|superseded)\))?$")
_OMITTED = re.compile(r"^(\d+) earlier omitted$")
_TIMES = re.compile(r"^(?P<text>.*?) \N{MULTIPLICATION SIGN}(?P<n>\d+)$", re.S)
_RUNS = re.compile(r"^(?P<text>.*) \(\N{MULTIPLICATION SIGN}(?P<n>\d+)\)$", re.S)
MAX_DETAILS = 6  # per keyed entry (a file edited fifty times keeps its six latest edits)
MAX_SUPERSEDED = 3  # per value name


@functools.lru_cache(maxsize=1 << 15)
def fold(text: str) -> str:
    """The comparison form of a text: whitespace collapsed, case folded, its provenance
    references left out (the same fact drawn from other items is the same entry).

    Remembered: each merge into a summary folds the entries already in it, so the same entries
    (the summary keeps most of them between compactions) would be folded again and again."""
    if text.endswith("]"):
        text = split_refs(text)[0]
    return " ".join(text.split()).casefold()


def key_of(entry: str) -> str | None:
    """The leading `` `code` `` span of an entry (its fact), or ``None``."""
    match = LEADING_CODE.match(entry)
    return match.group(1) if match else None


@functools.lru_cache(maxsize=1 << 14)
def entry_key(entry: str) -> str:
    """What a keyed entry is merged on: its leading `` `code` `` span, else its head.

    Remembered: every merge into a summary reads the key of each entry already in it (a
    digest merges several times per compaction), so the same entries would be matched again
    and again as the summary grows."""
    key = key_of(entry)
    return key if key is not None else fold(entry.partition(" — ")[0])


def split_details(entry: str) -> tuple[str, list[str]]:
    """``(head, details)`` of a keyed entry: ``head — d1; d2``."""
    head, sep, tail = entry.partition(" — ")
    return head, [d.strip() for d in tail.split("; ") if d.strip()] if sep else []


def join_details(head: str, details: list[str]) -> str:
    return f"{head} — {'; '.join(details)}" if details else head


def _times(detail: str) -> tuple[str, int]:
    match = _TIMES.match(detail)
    return (match.group("text"), int(match.group("n"))) if match else (detail, 1)


def add_details(details: list[str], more: Iterable[str]) -> tuple[list[str], bool]:
    """``details`` with ``more`` added: a detail already present is counted (``edited x2``),
    a new one appended; then bounded to ``MAX_DETAILS``. Returns whether anything was new."""
    omitted = 0
    if details and (match := _OMITTED.match(details[0])):
        omitted, details = int(match.group(1)), details[1:]
    order: dict[str, list[object]] = {}
    for detail in details:
        text, n = _times(detail)
        slot = order.setdefault(fold(text), [text, 0])
        slot[1] = int(str(slot[1])) + n
    changed = False
    for detail in more:
        if _OMITTED.match(detail):
            continue
        text, n = _times(detail)
        key = fold(text)
        changed = True
        if key in order:
            slot = order.pop(key)  # re-inserted last: the newest touch is last
            slot[1] = int(str(slot[1])) + n
            order[key] = slot
        else:
            order[key] = [text, n]
    out = [
        f"{text} \N{MULTIPLICATION SIGN}{n}" if int(str(n)) > 1 else str(text)
        for text, n in order.values()
    ]
    if len(out) > MAX_DETAILS:
        omitted += len(out) - MAX_DETAILS
        out = out[-MAX_DETAILS:]
    return ([f"{omitted} earlier omitted"] if omitted else []) + out, changed


def merge_keyed(existing: list[str], new: Iterable[str]) -> list[str]:
    """Keyed entries merged per leading `` `key` ``; a touched entry moves to the end (the
    section is ordered by last touch, so trimming spares what is still being worked on)."""
    entries: dict[str, str] = {}
    for entry in existing:
        entries[entry_key(entry)] = entry
    merge_keyed_into(entries, new)
    return list(entries.values())


def merge_keyed_into(entries: dict[str, str], new: Iterable[str]) -> None:
    """``merge_keyed`` into ``entries`` (each entry by its key, in the section's order)."""
    # The entries this call wrote that read back as written (no references, no last detail
    # ending like references, details that ``add_details`` leaves as they are), by key: their
    # head and details. An entry that only counts the last detail again (a file edited once
    # more, an id seen again) adds to its count, the rest unread (``_counted_again``).
    written: dict[str, tuple[str, list[str]]] = {}
    # Per key, the entry counted again last, the detail it wrote (compared by identity: no
    # other merge wrote since), that detail's text and count, and what the entry adds: the same
    # entry once more (a fact repeated item after item) adds as much, neither read again.
    again: dict[str, tuple[str, str, str, int, int]] = {}
    for entry in new:
        key = entry_key(entry)
        old = entries.get(key)
        if old is None:
            entries[key] = entry
            continue
        known = written.get(key)
        if known is not None and not entry.endswith("]"):
            details, last = known[1], again.get(key)
            if last is not None and last[0] == entry and details[-1] is last[1]:
                counted: tuple[str, int, int] | None = (last[2], last[3] + last[4], last[4])
                details[-1] = f"{last[2]} \N{MULTIPLICATION SIGN}{last[3] + last[4]}"
            else:
                counted = _counted_again(known, entry)
            if counted is not None:
                again[key] = (entry, details[-1], *counted)
                del entries[key]
                entries[key] = join_details(*known)
                continue
        old_text, old_refs = split_refs(old)
        new_text, new_refs = split_refs(entry)
        head, details = split_details(old_text)
        _, more = split_details(new_text)
        details, changed = add_details(details, more)
        refs = merge_spans(old_refs, new_refs) if new_refs else old_refs
        written.pop(key, None)
        again.pop(key, None)
        if changed:
            del entries[key]
            entries[key] = with_refs(join_details(head, details), refs)
            if (
                not refs
                and details
                and not details[-1].endswith("]")
                and add_details(details, ())[0] == details
            ):
                written[key] = (head, details)
        elif refs != old_refs:
            entries[key] = with_refs(old_text, refs)


def _counted_again(known: tuple[str, list[str]], entry: str) -> tuple[str, int, int] | None:
    """When ``entry`` (no references) adds one detail, the same as the last one of the entry
    ``known`` describes: that detail's count is added to in ``known``, and returned are its
    text, its count now and what ``entry`` added; else ``None``.

    ``known``'s details read back as they are written (``add_details`` leaves them as they
    are) and its head holds no " — ": reading it back and adding the detail, as
    ``merge_keyed_into`` does, moves that detail to the end where it is, adds to its count and
    leaves every other detail as it is (tests/compressors/test_digest_reading_fast_paths.py: the
    same entries as merging each one)."""
    _new_head, sep, tail = entry.partition(" — ")
    more = [d.strip() for d in tail.split("; ") if d.strip()] if sep else []
    if len(more) != 1 or _OMITTED.match(more[0]):
        return None
    details = known[1]
    text, count = _times(details[-1])
    detail, n = _times(more[0])
    if fold(detail) != fold(text):
        return None
    details[-1] = f"{text} \N{MULTIPLICATION SIGN}{count + n}"
    return text, count + n, n


def with_read(entry: str, read: str = "") -> str:
    """A modified file's entry noting that the file was read too (once), with the references
    of its entry among the files read (``read``) added."""
    text, refs = split_refs(entry)
    head, details = split_details(text)
    if not any(d == "read" or d.startswith("read \N{MULTIPLICATION SIGN}") for d in details):
        details, _ = add_details(["read"], details)
    refs = merge_spans(refs, split_refs(read)[1]) if read else refs
    return with_refs(join_details(head, details), refs)


def runs(entry: str) -> tuple[str, int]:
    """A command entry without its run count, and the count."""
    match = _RUNS.match(entry)
    return (match.group("text"), int(match.group("n"))) if match else (entry, 1)


_EARLIER = " — earlier: "
MAX_EARLIER = 3  # outcomes of earlier runs kept per command
MAX_EARLIER_MEASURED = 8  # measurements of earlier runs kept per command: each may be asked for


def earlier_kept(key: str) -> int:
    """How many earlier outcomes a ``commands``-merged section keeps per command."""
    return MAX_EARLIER_MEASURED if key == "measurements" else MAX_EARLIER


def merge_commands(
    existing: list[str], new: Iterable[str], *, earlier: int = MAX_EARLIER
) -> list[str]:
    """Commands merged per command: the newest outcome, how often it ran (``(x3)``), and the
    last ``earlier`` different outcomes of earlier runs (``— earlier: 2 failed | 5 failed``)."""
    commands = Commands(earlier)
    commands.add([*existing, *new])
    return commands.render()


class Commands:
    """``merge_commands`` kept open: entries added in turns (``add``), the merged entries
    rendered after each (``render``), each turn reading only what it adds (an entry rendered
    before is not rendered again unless a turn touched its command). ``render()`` after
    ``add(a)`` then ``add(b)`` is ``merge_commands(a, b)``; and when every entry rendered reads
    back as its own command (``exact``), ``render()`` after a further ``add(c)`` is
    ``merge_commands(render(), c)``."""

    def __init__(self, earlier: int = MAX_EARLIER) -> None:
        self.earlier = earlier
        self.entries: dict[str, tuple[str, int, Spans]] = {}  # command -> (text, runs, refs)
        self.lines: dict[str, str] = {}  # command -> its entry rendered, while unchanged
        self.exact = True  # every entry rendered reads back as its own command

    def add(self, new: Iterable[str]) -> None:
        """Merge ``new`` (newer entries) in."""
        entries, lines = self.entries, self.lines
        for entry in new:
            key, text, n, refs = command_parts(entry)
            if key in entries:
                old_text, old_n, old_refs = entries.pop(key)  # re-inserted last, newest outcome
                entries[key] = (
                    _with_earlier(text, old_text, self.earlier),
                    old_n + n,
                    merge_spans(old_refs, refs),
                )
                lines.pop(key, None)
            else:
                entries[key] = (text, n, refs)
                if reads_back(entry):  # rendered, it is itself: no check
                    lines[key] = entry

    def render(self) -> list[str]:
        """The merged entries, in order."""
        lines, rendered = self.lines, []
        for key, parts in self.entries.items():
            line = lines.get(key)
            if line is None:
                line = lines[key] = command_line(*parts)
                if self.exact and command_parts(line) != (key, *parts):
                    self.exact = False
            rendered.append(line)
        return rendered


def command_line(text: str, n: int, refs: Spans) -> str:
    return with_refs(f"{text} (\N{MULTIPLICATION SIGN}{n})" if n > 1 else text, refs)


@functools.lru_cache(maxsize=1 << 15)
def command_parts(entry: str) -> tuple[str, str, int, Spans]:
    """A command entry read: its command (``merge_commands``' key), its text without the run
    count and references, its runs and references. (Remembered: every compaction reads the
    commands of the summary it merges into again.)"""
    plain, refs = split_refs(entry)
    text, n = runs(plain)
    return key_of(text) or fold(text), text, n, refs


@functools.lru_cache(maxsize=1 << 15)
def reads_back(entry: str) -> bool:
    """Whether a command entry, read (``command_parts``) and rendered again
    (``command_line``), is itself. (Remembered: every compaction merges the commands of the
    summary it reads back again, most of them unchanged.)"""
    return command_line(*command_parts(entry)[1:]) == entry


def _with_earlier(text: str, old_text: str, kept: int = MAX_EARLIER) -> str:
    """``text`` (a newer run) carrying the outcome of ``old_text`` (an older run of the same
    command) among its earlier outcomes, when it differs."""
    newest, _, mine = text.partition(_EARLIER)
    old_newest, _, theirs = old_text.partition(_EARLIER)
    outcome = newest.partition(" → ")[2]
    earlier = [o for o in (mine.split(" | ") if mine else []) if o]
    for older in [old_newest.partition(" → ")[2], *(theirs.split(" | ") if theirs else [])]:
        if older and older != outcome and older not in earlier:
            earlier.append(older)
    earlier = earlier[:kept]
    return f"{newest}{_EARLIER}{' | '.join(earlier)}" if earlier else newest


def append_unique(existing: list[str], new: Iterable[str]) -> list[str]:
    return append_unique_into(existing, {fold(e) for e in existing}, new)


def append_unique_into(existing: list[str], seen: set[str], new: Iterable[str]) -> list[str]:
    """``new`` appended to ``existing`` (``seen``: the folded text of its entries, kept up to
    date) except the entries already there."""
    for entry in new:
        key = fold(entry)
        if key not in seen:
            seen.add(key)
            existing.append(entry)
        elif entry.endswith("]") and (refs := split_refs(entry)[1]):
            for index in range(len(existing) - 1, -1, -1):  # the twin: its references grow
                if fold(existing[index]) == key:
                    existing[index] = add_refs(existing[index], refs)
                    break
    return existing


def merge_values(existing: list[str], new: Iterable[str]) -> tuple[list[str], int]:
    """Values merged (see ``SummaryDocument.merge``), and how many old superseded values were
    dropped. An entry's references follow its name and value (a current value marked
    superseded keeps them)."""
    refs: dict[str, Spans] = {}
    values, dropped = _merge_values(_without_refs(existing, refs), _without_refs(new, refs))
    if refs:
        values = [with_refs(v, refs.get(_value_id(v), ())) for v in values]
    return values, dropped


def _merge_values(existing: list[str], new: Iterable[str]) -> tuple[list[str], int]:
    """``merge_values`` of entries without references. Linear: entries live in one list with
    tombstones, indexed by name."""
    slots: list[str | None] = []
    by_name: dict[str, list[int]] = {}
    seen: set[str] = set()

    def put(line: str, name: str | None) -> None:
        key = fold(line)
        if key in seen:
            return
        seen.add(key)
        slots.append(line)
        if name is not None:
            by_name.setdefault(name, []).append(len(slots) - 1)

    for entry in existing:
        match = VALUE.match(entry)
        put(entry, match.group("name") if match else None)
    for entry in new:
        match = VALUE.match(entry)
        if match is None:
            put(entry, None)
            continue
        name, value = match.group("name"), match.group("value")
        status = match.group("status") or "current"
        line = f"`{name}` = {value} ({status})"
        if status == "superseded" or fold(line) in seen:
            put(line, name)
            continue
        for index in by_name.get(name, []):
            old = slots[index]
            if old is None:
                continue
            old_match = VALUE.match(old)
            if old_match is None:
                continue
            seen.discard(fold(old))
            if old_match.group("value") == value:
                slots[index] = None  # the new current entry replaces it (or its twin)
            else:
                stale = f"`{name}` = {old_match.group('value')} (superseded)"
                if fold(stale) in seen:
                    slots[index] = None
                else:
                    slots[index] = stale
                    seen.add(fold(stale))
        put(line, name)
    # Keep the newest few superseded values per name; older ones are counted as trimmed.
    count: dict[str, int] = {}
    out: list[str] = []
    dropped = 0
    for entry in reversed([s for s in slots if s is not None]):
        match = VALUE.match(entry)
        if match and match.group("status") == "superseded":
            n = count[match.group("name")] = count.get(match.group("name"), 0) + 1
            if n > MAX_SUPERSEDED:
                dropped += 1
                continue
        out.append(entry)
    return out[::-1], dropped


def _value_id(entry: str) -> str:
    """What a value entry's references are kept by: its name and value (else its text)."""
    match = VALUE.match(entry)
    return f"{match.group('name')}\0{match.group('value').strip()}" if match else fold(entry)


def _without_refs(entries: Iterable[str], refs: dict[str, Spans]) -> list[str]:
    """``entries`` without their references, collected into ``refs`` by ``_value_id``."""
    out = []
    for entry in entries:
        text, spans = split_refs(entry)
        if spans:
            ident = _value_id(text)
            refs[ident] = merge_spans(refs.get(ident, ()), spans)
        out.append(text)
    return out
