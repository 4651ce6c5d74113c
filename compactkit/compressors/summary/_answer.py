"""Reading the summarizer's answer: it must be text, and every exact fact must be in it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from compactkit.compressors._facts_prose import is_observation
from compactkit.compressors._refs import spans_of, split_refs, strip_refs, with_refs
from compactkit.compressors.sections import SectionKey, SummaryDocument
from compactkit.errors import SummarizationError
from compactkit.items import Item, Message

# Sections whose facts are exact strings the answer must carry (the digest's other sections —
# decisions, state, next steps — are heuristic prose the model writes better). The goal and the
# constraints are the user's own words: they must appear under their own heading.
_EXACT: tuple[SectionKey, ...] = (
    "goal",
    "constraints",
    "files_read",
    "files_modified",
    "commands",
    "measurements",
    "errors",
    "identifiers",
    "values",
)
_OWN_SECTION: frozenset[SectionKey] = frozenset({"goal", "constraints"})
_NOTES = "Notes"
_NOTHING = re.compile(
    r"^[(\[]?(?:none|n/?a|nothing(?: new)?|no (?:changes?|updates?))[)\].]*$", re.I
)
_ERROR_TEXT = re.compile(
    r"^\s*(?:error\b|exception\b|traceback\b|failed to\b|an error occurred|i'?m sorry|sorry,"
    r"|i cannot\b|i can'?t\b|i am unable|i'?m unable|as an ai\b)",
    re.IGNORECASE,
)
_LEADING_CODE = re.compile(r"^`([^`]+)`")
_VALUE = re.compile(r"^`(?P<name>[^`]+)` = (?P<value>.*?)(?: \((?:current|superseded)\))?$")
_ROLE_PREFIX = re.compile(r"^\((?:system|developer)\) ")


def _answer_text(answer: object) -> str:
    """The summarizer's answer, which must be text: anything else (``None`` from a client whose
    message had no content, a response object) is a failed request, never a crash."""
    if not isinstance(answer, str):
        raise SummarizationError(
            f"the summarizer returned {type(answer).__name__}, not text: its complete() and "
            f"acomplete() must return the answer as a str (got {answer!r:.80})"
        )
    return answer


def _body(doc: SummaryDocument) -> str:
    """A document's sections without the title (for the prompt's <exact-facts>)."""
    lines = doc.render().splitlines()
    return "\n".join(lines[1:]).strip()


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _needles(key: SectionKey, entry: str) -> list[str]:
    """The exact strings that show an entry's fact is present in a text (its references
    aside: the same fact may be cited from other items)."""
    entry = strip_refs(entry)
    if key == "values":
        match = _VALUE.match(entry)
        if match:
            return [match.group("name"), match.group("value")]
    if key in _OWN_SECTION:
        return [_ROLE_PREFIX.sub("", entry)]
    code = _LEADING_CODE.match(entry)
    return [code.group(1) if code else entry]


def _present(needles: list[str], haystack: str) -> bool:
    return all(_normalise(n) in haystack for n in needles if n.strip())


def _only(key: SectionKey, entries: Sequence[str]) -> SummaryDocument:
    return SummaryDocument(sections={key: tuple(entries)}) if entries else SummaryDocument()


def _absent(facts: SummaryDocument, doc: SummaryDocument) -> SummaryDocument:
    """The exact facts ``doc`` does not hold, verbatim, in their sections. The user's words (the
    goal, a constraint) count only when quoted under their own heading; any other fact counts
    anywhere in ``doc``."""
    text = _normalise(doc.render())
    absent = SummaryDocument()
    for key in _EXACT:
        where = _normalise("\n".join(doc.entries(key))) if key in _OWN_SECTION else text
        lost = [e for e in facts.entries(key) if not _present(_needles(key, e), where)]
        absent = absent.merge(_only(key, lost))
    return absent


_QUOTES = "\"'`\u201c\u201d\u2018\u2019*_ "


def _authored(items: Sequence[Item], summary: SummaryDocument) -> str:
    """The text people wrote in ``items`` (user messages that are not a tool's output fed back,
    system or developer messages) and the constraints already in ``summary``, normalised."""
    texts = [
        item.text
        for item in items
        if isinstance(item, Message)
        and (
            item.role in ("system", "developer")
            or (item.role == "user" and not is_observation(item.text))
        )
    ]
    texts += [_ROLE_PREFIX.sub("", e) for e in summary.entries("constraints")]
    return _normalise("\n".join(texts)).casefold()


def _verbatim_constraints(
    update: SummaryDocument, items: Sequence[Item], summary: SummaryDocument
) -> tuple[SummaryDocument, int]:
    """``update`` with only the constraint entries that quote text a person wrote in ``items``
    (or that the summary already holds), and how many were dropped. Tool output, the
    assistant's words and the summarizer's own inventions never become constraints; the
    digest's exact facts re-add every real constraint the answer lost."""
    entries = update.entries("constraints")
    if not entries:
        return update, 0
    haystack = _authored(items, summary)
    kept = []
    for entry in entries:
        quote = _normalise(_ROLE_PREFIX.sub("", entry)).strip(_QUOTES).rstrip(".").casefold()
        if quote and quote in haystack:
            kept.append(entry)
    sections = dict(update.sections)
    if kept:
        sections["constraints"] = tuple(kept)
    else:
        sections.pop("constraints", None)
    return replace(update, sections=sections), len(entries) - len(kept)


def within_items(doc: SummaryDocument, items: Sequence[Item]) -> SummaryDocument:
    """``doc`` (a summarizer's entries about ``items``) with each entry's references checked:
    a range kept only when both its ends name one of ``items``; an entry left without any
    names every one of ``items`` (it may draw on any of them). Items never stored (no seq)
    give no references, and an invented one is dropped."""
    seqs = {item.seq for item in items if item.seq is not None}
    whole = spans_of(seqs)

    def checked(entry: str) -> str:
        text, spans = split_refs(entry)
        kept = tuple((a, b) for a, b in spans if a in seqs and b in seqs) if whole else ()
        return with_refs(text, kept or whole)

    return replace(
        doc,
        sections={k: tuple(map(checked, v)) for k, v in doc.sections.items()},
        extra={k: tuple(map(checked, v)) for k, v in doc.extra.items()},
    )
