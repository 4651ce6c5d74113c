"""The post-condition of every compaction: what the folded span must leave in the summary.

After a summary is built (by the digest or by an LLM) and before it is applied, ``verify``
checks it deterministically against the facts extracted from the folded span (``digest_items``)
and the text of that span:

* **rejected** — entries the folded text does not support: a constraint that is not a whole
  sentence or clause of text a person wrote (so never a cut that drops a negation, as "push to
  main without review" cut out of "do not push to main without review"), a one-word
  constraint, a goal whose words the span does not hold, a file, error or identifier that
  appears nowhere in it. Entries the previous summary already held are not re-judged;
* **re-added** — must-keep facts of the span the summary lacks: every user constraint (kept
  under "Constraints", or once under "Goal" when the goal quotes it verbatim as a whole
  clause: ``rules_said_once``), every file modified (under "Files modified"), every open error,
  every current value (a value the summary presents as current is corrected when the span set
  a newer one);
* **verified** — the must-keep facts found in place.

``Verification`` lists the three; compressors put it in ``stats.details["verification"]``
(and so in the compaction events, which carry the result). Every check is linear in the
entries and the span's text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import chain, filterfalse
from typing import Any

from compactkit.compressors._entries import VALUE, entry_key, key_of
from compactkit.compressors._refs import strip_refs
from compactkit.compressors._verify_text import (
    LATER,
    QUOTES,
    ROLE,
    Span,
    flattened,
    folded_text,
    norm,
    norm_lines,
    plain,
)
from compactkit.compressors.sections import SectionKey, SummaryDocument
from compactkit.items import Item

__all__ = ["MUST_KEEP", "Verification", "rules_said_once", "unkept", "verify"]

MUST_KEEP: tuple[SectionKey, ...] = ("constraints", "files_modified", "errors", "values")
"""The sections whose facts a summary of a span must hold: the user's constraints, the files
modified, the errors still open and the current values."""

_CLIP = re.compile(r"\s*(?:…|\.\.\.)\s*")
# Where a clause may start: the text's start, after a sentence end, a semicolon or colon, a
# line break, an opening quote or bracket, a list marker.
_CLAUSE_START = re.compile(r"(?:^|[.!?;:\n(\[\"'\u201c]|(?:^|\n)\s*(?:[-*+>]|\d+[.)]))\s*$")
_CLAUSE_END = re.compile(r"\s*(?:$|[.!?;:,\n)\]\"'\u201d])")  # (matched where a quote ends)
_WORD = re.compile(r"[^\W_]{4,}")
_STOP = frozenset(
    "that this with from have will into about them they then than your what when which would "
    "there their these those should could please make sure also just like want need some".split()
)
_GOAL_SUPPORT = 0.6  # share of a goal's content words the span must hold
_LISTED = 20  # entries listed per kind in the details (the counts are exact)


@dataclass(frozen=True)
class Verification:
    """What the post-condition found: must-keep facts in place, added back, and entries
    refused."""

    verified: tuple[str, ...] = ()
    """Must-keep facts of the folded span found in the summary."""
    re_added: tuple[str, ...] = ()
    """Must-keep facts the summary lacked, added back from the extraction."""
    rejected: tuple[str, ...] = ()
    """Entries refused, each with why (``constraints: not a whole clause of user text: …``)."""
    dropped: tuple[str, ...] = ()
    """Must-keep facts left out only because the token cap could not hold them (counted in
    the summary's trimming note)."""

    def __add__(self, other: Verification) -> Verification:
        return Verification(
            self.verified + other.verified,
            self.re_added + other.re_added,
            self.rejected + other.rejected,
            self.dropped + other.dropped,
        )

    def details(self) -> dict[str, Any]:
        """The counts and (the first few of) the entries, for ``stats.details``."""
        out: dict[str, Any] = {}
        for name in ("verified", "re_added", "rejected", "dropped"):
            values: tuple[str, ...] = getattr(self, name)
            out[name] = len(values)
            if values and name != "verified":
                out[f"{name}_entries"] = list(values[:_LISTED])
        return out


def verify(
    summary: SummaryDocument,
    facts: SummaryDocument,
    items: Sequence[Item],
    *,
    previous: SummaryDocument | None = None,
    text: tuple[str, str] | None = None,
    check_facts: bool = True,
) -> tuple[SummaryDocument, Verification]:
    """``summary`` checked against the folded span (see the module docstring).

    Args:
        summary: The summary built (the previous one merged with what the span adds).
        facts: The facts extracted from the folded span (``digest_items``).
        items: The folded items (their originals, when outputs were masked).
        previous: The summary before this compaction (its entries are not re-judged).
        text: ``folded_text(items, previous)``, when the caller has it already.
        check_facts: Also reject files, errors and identifiers the span does not hold (the
            digest, which copies them out of the span, skips this scan of the span's text).

    Returns:
        The summary with unsupported entries removed and missing must-keep facts added back,
        and what was verified, re-added and rejected.
    """
    if text is None:
        text = folded_text(items, previous, everything=check_facts)
    authored, everything = text if check_facts else (text[0], "")
    before = previous or SummaryDocument()
    known = frozenset(chain.from_iterable(before.entries(key) for key in summary.sections))
    span = Span(authored, everything, known)
    checked, rejected = _reject(summary, span)
    checked, verified, re_added = _restore(checked, facts)
    return checked, Verification(verified, re_added, rejected)


def unkept(summary: SummaryDocument, facts: SummaryDocument) -> tuple[str, ...]:
    """The must-keep facts of ``facts`` that ``summary`` does not hold (after a trim: the ones
    its token cap left out)."""
    return _restore(summary, facts)[2]


# -- rejection --------------------------------------------------------------------------------


# The sections ``_unsupported`` judges (it supports every entry of the others): the user's
# words always, the facts copied out of the span only when its text is there to find them in.
_JUDGED: frozenset[SectionKey] = frozenset({"constraints", "goal"})
_JUDGED_IN_TEXT: frozenset[SectionKey] = frozenset(
    {"constraints", "goal", "files_read", "files_modified", "errors", "identifiers"}
)


def _reject(summary: SummaryDocument, span: Span) -> tuple[SummaryDocument, tuple[str, ...]]:
    """``summary`` without the entries the span does not support (``_unsupported``), and why
    each was refused. Only the sections ``_unsupported`` judges are read: a summary's other
    entries, most of it, are not walked each compaction."""
    rejected: list[str] = []
    sections = dict(summary.sections)
    judged = _JUDGED_IN_TEXT if span.everything else _JUDGED
    for key, entries in summary.sections.items():
        if key not in judged:
            continue
        # The entries the previous summary held are not judged again: found apart in one pass
        # in C (a long session's summary holds hundreds of constraints, a few of them new).
        refused: set[str] = set()
        for entry in filterfalse(span.known.__contains__, entries):
            why = _unsupported(key, entry, span)
            if why is not None:
                refused.add(entry)
                rejected.append(f"{key}: {why}: {entry[:160]}")
        if refused:  # (an entry's judgement is its text's: a repeated entry goes with it)
            kept = tuple(entry for entry in entries if entry not in refused)
            if kept:
                sections[key] = kept
            else:
                sections.pop(key)
    if not rejected:
        return summary, ()
    return replace(summary, sections=sections), tuple(rejected)


def _unsupported(key: SectionKey, entry: str, span: Span) -> str | None:
    """Why the span does not support ``entry`` of section ``key``, or ``None``."""
    if key == "constraints":
        quote = plain(entry)
        if entry.startswith(LATER):  # the user's later words, joined: held word by word
            ok = _supported(quote, span)
            return None if ok else "the folded text does not hold it"
        if len(quote.split()) < 2:
            return "a single word is no rule"
        if not _whole_clause(quote, span.authored):
            return "not a whole clause of text a person wrote"
        return None
    if key == "goal":
        goal = plain(entry)
        if norm(goal) in span.flat or _supported(goal, span.flat + span.everything):
            return None
        return "the folded text does not hold it"
    if key in ("files_read", "files_modified", "errors", "identifiers") and span.everything:
        fact = key_of(entry)
        if fact is None or norm(fact).rstrip("…").strip() in span.everything:
            return None
        # a clipped fact: what is left of it must be there
        head = _CLIP.split(norm(fact))[0]
        return None if head and head in span.everything else "appears nowhere in the folded text"
    return None


def _whole_clause(quote: str, authored: str) -> bool:
    """Whether every clipped piece of ``quote`` occurs in ``authored`` and the first starts a
    clause there (so no negation or condition before it was cut off); an unclipped quote must
    also end one."""
    pieces = [p for p in _CLIP.split(norm(quote)) if p]
    if not pieces:
        return False
    clipped = len(pieces) > 1 or bool(_CLIP.search(quote.rstrip()[-3:]))
    first = pieces[0].rstrip(".").strip(QUOTES)
    if not first:
        return False
    flat = flattened(authored)  # line breaks as spaces, at the same positions
    start = 0
    found = False
    while (at := flat.find(first, start)) >= 0:
        # (what is before and after it read in place: a long text is not copied per find)
        if _CLAUSE_START.search(authored[max(0, at - 12) : at]) and (
            clipped or _CLAUSE_END.match(authored, at + len(first))
        ):
            found = True
            break
        start = at + 1
    return found and all(p.strip(QUOTES) in flat for p in pieces[1:])


def _supported(goal: str, text: str | Span) -> bool:
    """Whether ``text`` holds enough of ``goal``'s content words (or, having none, all of it);
    a span's text with its line breaks as spaces (``flat``). A word holds no space or line
    break, so it occurs in the authored text as written where it occurs in the flat one: the
    flat copy of a long text is made only for a goal without content words."""
    words = {w for w in _WORD.findall(goal.casefold()) if w not in _STOP}
    if isinstance(text, Span):
        if not words:
            return norm(goal) in text.flat
        text = text.authored
    elif not words:
        return norm(goal) in text
    held = sum(1 for w in words if w in text)
    return held / len(words) >= _GOAL_SUPPORT


# -- restoring what is missing ----------------------------------------------------------------


def _restore(
    summary: SummaryDocument, facts: SummaryDocument
) -> tuple[SummaryDocument, tuple[str, ...], tuple[str, ...]]:
    verified: list[str] = []
    missing: dict[SectionKey, list[str]] = {}
    # What the summary holds is read only for a section the facts have must-keep entries of
    # (a long session's summary holds hundreds of constraints; most folds add only requests).
    have_constraints: set[str] | None = None
    goals = summary.entries("goal")
    for entry in facts.entries("constraints"):
        if entry.startswith(LATER):
            continue  # a request, not a rule: not must-keep
        if have_constraints is None:
            have_constraints = set(map(_constraint_key, summary.entries("constraints")))
        if _constraint_key(entry) in have_constraints or _in_goal(entry, goals):
            verified.append(f"constraints: {entry[:160]}")
        else:
            missing.setdefault("constraints", []).append(entry)
    for key in ("files_modified", "errors"):
        have: set[str] | None = None
        text: str | None = None  # the section's text, read only for a fact not found by key
        for entry in facts.entries(key):
            if key == "errors" and "resolved" in entry.partition(" — ")[2]:
                continue  # only open errors are must-keep
            if have is None:
                have = set(map(entry_key, summary.entries(key)))
            found = entry_key(entry) in have
            if not found:  # written in other words around it (no `code` span, a remark)
                if text is None:
                    text = norm("\n".join(summary.entries(key)).replace("`", ""))
                found = norm(key_of(entry) or entry).rstrip("…").strip() in text
            if found:
                verified.append(f"{key}: {entry[:160]}")
            else:
                missing.setdefault(key, []).append(entry)
    news = _current_values(facts.entries("values"))
    current = _current_values(summary.entries("values")) if news else {}
    for name, (value, entry) in news.items():
        if current.get(name, (None, ""))[0] == value:
            verified.append(f"values: {entry[:160]}")
        else:  # absent, or an older value presented as current: the span's newest wins
            missing.setdefault("values", []).append(entry)
    if facts.entries("goal") and not summary.entries("goal"):  # a refused goal: the user's own
        missing["goal"] = [facts.entries("goal")[0]]
    if not missing:
        return summary, tuple(verified), ()
    added = SummaryDocument.of(**missing)
    re_added = tuple(f"{key}: {e[:160]}" for key, entries in missing.items() for e in entries)
    return summary.merge(added), tuple(verified), re_added


def rules_said_once(doc: SummaryDocument, goals: Sequence[str] | None = None) -> SummaryDocument:
    """``doc`` without the constraints a goal entry (``goals``, default ``doc``'s own) already
    quotes verbatim, each as a whole clause (the first message's first paragraph is both the
    goal and, sentence by sentence, rules; a later message may repeat one): the rule stays in
    the summary once, word for word, and ``verify`` finds it there."""
    goals = doc.entries("goal") if goals is None else goals
    constraints = doc.entries("constraints")
    if not goals or not constraints:
        return doc
    kept = tuple(e for e in constraints if e.startswith(LATER) or not _in_goal(e, goals))
    if len(kept) == len(constraints):
        return doc
    sections = dict(doc.sections)
    if kept:
        sections["constraints"] = kept
    else:
        del sections["constraints"]
    return replace(doc, sections=sections)


def _in_goal(entry: str, goals: Sequence[str]) -> bool:
    """Whether a goal entry quotes the constraint ``entry`` verbatim as a whole clause (it
    starts and ends one there, so a goal saying "never do X" does not hold the rule "do X")."""
    if not goals or ROLE.match(entry):  # a system or developer rule is never the user's goal
        return False
    quote = plain(entry)
    return len(quote.split()) >= 2 and any(
        _whole_clause(quote, _goal_lines(goal)) for goal in goals
    )


@functools.lru_cache(maxsize=1 << 10)
def _goal_lines(goal: str) -> str:
    """A goal entry's words as ``_whole_clause`` reads a text (remembered: the same goal is
    read by every compaction)."""
    return norm_lines(plain(goal))


@functools.lru_cache(maxsize=1 << 14)
def _constraint_key(entry: str) -> str:
    """What a constraint is matched on: its quoted words, normalised, no final period.

    Remembered: every compaction matches the whole summary's constraints again (twice, when
    it trims), and the summary keeps most of them from one compaction to the next."""
    return norm(plain(entry)).rstrip(".")


def _current_values(entries: Iterable[str]) -> dict[str, tuple[str, str]]:
    """name -> (its current value, the entry), the last current entry of each name."""
    out: dict[str, tuple[str, str]] = {}
    for entry in entries:
        match = VALUE.match(strip_refs(entry))
        if match and match.group("status") != "superseded":
            out[match.group("name")] = (match.group("value").strip(), entry)
    return out
