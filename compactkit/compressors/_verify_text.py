"""The folded span's text as the post-condition (``_verify``) reads it: what people wrote
(with the previous summary's goal and constraints) and everything, normalised.

A long session's summary holds hundreds of constraints and the next compaction's previous
summary holds the same ones with a few new requests after them: ``_kept_lines`` reads only
those (tests/compressors/test_verify_authored.py holds it to the plain reading of every
entry).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from compactkit.compressors._facts_prose import is_observation
from compactkit.compressors._refs import strip_refs
from compactkit.compressors.sections import SummaryDocument
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

__all__ = [
    "LATER",
    "QUOTES",
    "ROLE",
    "Span",
    "flattened",
    "folded_text",
    "norm",
    "norm_lines",
    "plain",
]

ROLE = re.compile(r"^\((?:system|developer|user)\) ")
"""A system or developer rule's (or a user's) role label."""
LATER = "Later: "
"""The label of the user's later requests under "Constraints"."""
QUOTES = "\"'`\u201c\u201d\u2018\u2019*_ "
"""What may surround a quote."""


@dataclass(frozen=True)
class Span:
    """The folded span's text, normalised: what people wrote, and everything."""

    authored: str
    everything: str
    known: frozenset[str] = field(default_factory=frozenset)

    @functools.cached_property
    def flat(self) -> str:
        """``authored`` with its line breaks as spaces (made once: every ``Later:`` entry of a
        summary is looked for in it)."""
        return flattened(self.authored)


def folded_text(
    items: Sequence[Item], previous: SummaryDocument | None = None, *, everything: bool = True
) -> tuple[str, str]:
    """``(authored, everything)``: the text people wrote in ``items`` (user messages that are
    not a tool's output fed back, system and developer messages; plus the previous summary's
    goal and constraints) and all of the span's text (plus the previous summary).

    With ``everything=False`` the second is ``""``, not built: it is the whole span and the
    whole previous summary, rendered and normalised (O(span + summary) per compaction), and a
    caller that does not check facts against the span (the digest) never reads it.
    """
    authored: list[str] = []
    every: list[str] = []
    for item in items:
        if isinstance(item, Message):
            text = item.text
            if item.role in ("system", "developer") or (
                item.role == "user" and not is_observation(text)
            ):
                authored.append(text)
            every.append(text)
        elif everything and isinstance(item, FunctionCall):
            every.append(f"{item.name} {item.arguments}")
        elif everything and isinstance(item, FunctionCallOutput):
            every.append(item.text)
    kept: tuple[str, ...] = ()  # the previous summary's goal and constraints
    if previous is not None and not previous.is_empty:
        kept = previous.entries("goal") + previous.entries("constraints")
        if everything:
            every.append(previous.render())
    return _authored_lines(authored, kept), norm("\n".join(every)) if everything else ""


def _authored_lines(span: list[str], kept: tuple[str, ...]) -> str:
    """``norm_lines`` of ``span`` and of ``kept``'s plain texts (``plain``) joined by line breaks,
    with the summary's entries (``kept``: mostly the same from one compaction to the next)
    read once each (``_kept_lines``). ``norm_lines`` of texts joined by line breaks is the texts'
    ``norm_lines`` joined, when every text but the last is whole lines (``_whole_lines``) and the
    last is not empty; otherwise the texts are joined first."""
    if not kept:
        return norm_lines("\n".join(span))
    head = "\n".join(span)
    read = _kept_lines(kept)
    if not read.last or (span and not _whole_lines(head)) or not read.whole_but_last:
        return norm_lines("\n".join([*span, *map(plain, kept)]))
    return f"{norm_lines(head)}\n{read.lines}" if span else read.lines


class _KeptLines(NamedTuple):
    """A summary's goal and constraints entries as ``_authored_lines`` reads them."""

    entries: tuple[str, ...]
    lines: str
    """Their plain texts' ``norm_lines``, joined by line breaks."""
    whole: bool
    """Whether every plain text is whole lines (``_whole_lines``)."""
    whole_but_last: bool
    """Whether every plain text but the last is."""
    last: str
    """The last plain text."""


# The goal and constraints read last. The next compaction's previous summary holds the same
# entries with this one's new requests after them: only those are read then (a long session's
# summary holds hundreds of constraints, and reading each again was O(summary) per compaction).
_KEPT: list[_KeptLines | None] = [None]


def _kept_lines(entries: tuple[str, ...]) -> _KeptLines:
    """``entries`` (not empty) read as ``_authored_lines`` reads them: from the entries read
    last (``_KEPT``) when ``entries`` starts with them, by the new entries alone. The plain
    version reads every entry (tests/compressors/test_verify_authored.py holds them equal)."""
    base = _KEPT[0]
    if base is not None and entries[: len(base.entries)] != base.entries:
        base = None
    if base is not None and len(base.entries) == len(entries):
        return base
    texts = [plain(entry) for entry in entries[len(base.entries) if base else 0 :]]
    read = [_entry_lines(text) for text in texts]
    lines = "\n".join([lines for lines, _ in read])
    whole_before = True
    if base is not None:
        lines, whole_before = f"{base.lines}\n{lines}", base.whole
    whole = [whole for _, whole in read]
    kept = _KeptLines(
        entries,
        lines,
        whole_before and all(whole),
        whole_before and all(whole[:-1]),
        texts[-1],
    )
    _KEPT[0] = kept
    return kept


@functools.lru_cache(maxsize=1 << 14)
def _entry_lines(text: str) -> tuple[str, bool]:
    """``norm_lines(text)``, and whether ``text`` is whole lines. Remembered: every compaction
    reads the previous summary's goal and constraints again."""
    return norm_lines(text), _whole_lines(text)


def _whole_lines(text: str) -> bool:
    """Whether ``text`` is not empty and does not end in a line break: joined to a next text by
    a line break, its lines (``str.splitlines``) stay its own and the next text's theirs."""
    return bool(text) and text[-1].splitlines() != [""]


@functools.lru_cache(maxsize=1 << 14)
def plain(entry: str) -> str:
    """An entry's quoted words: no role or ``Later:`` label, no surrounding quotes, no
    references."""
    text = ROLE.sub("", strip_refs(entry).strip())
    text = text.removeprefix(LATER)
    return text.strip(QUOTES)


def norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def norm_lines(text: str) -> str:
    """``norm`` line by line: the line breaks stay (a clause may start after one)."""
    return "\n".join(" ".join(line.split()) for line in text.splitlines()).casefold()


def flattened(text: str) -> str:
    return text.replace("\n", " ")
