"""``verify`` reads only the sections it judges (the user's words; the facts copied out of the
span when the span's text is given), finds the entries the previous summary held apart in one
pass, and reads what the summary holds only for a section the facts have must-keep entries of:
what it returns is what judging every entry of every section and reading every section returns
(the plain walks, kept here as the oracle)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _verify, _verify_text
from compactkit.compressors._entries import entry_key, key_of
from compactkit.compressors.sections import SECTIONS, SummaryDocument
from compactkit.items import Message

PROPERTY = settings(deadline=None, max_examples=400)

_ENTRIES = [
    "Don't change the public API.",
    "Later: run the tests first",
    "use uv",
    "`src/app.py` — edited",
    "`src/gone.py` — read",
    "`ValueError: bad` — resolved",
    "`abc1234`",
    "`max_retries` = 5 (current)",
    "Add retry support to the HTTP client.",
    "Never push to main",
    "push to main",
    "`make test` → exit 0",
    "went with plan B because A failed",
]
_TEXTS = [
    "Don't change the public API.",
    "Add retry support to the HTTP client.",
    "Later we run the tests first.",
    "Never push to main. Use uv.",
    "edited src/app.py and saw ValueError: bad",
    "commit abc1234",
    "",
]
_KEYS = [spec.key for spec in SECTIONS]
_docs = st.dictionaries(
    st.sampled_from(_KEYS),
    st.lists(st.sampled_from(_ENTRIES), min_size=1, max_size=5).map(tuple),  # (repeats too)
    max_size=6,
).map(lambda sections: SummaryDocument(sections=sections))  # type: ignore[arg-type]


def plain_reject(
    summary: SummaryDocument, span: _verify_text.Span
) -> tuple[SummaryDocument, tuple[str, ...]]:
    """``_verify._reject`` as written before it skipped sections: every entry judged."""
    rejected: list[str] = []
    sections = dict(summary.sections)
    for key, entries in summary.sections.items():
        kept = []
        for entry in entries:
            why = None if entry in span.known else _verify._unsupported(key, entry, span)
            if why is None:
                kept.append(entry)
            else:
                rejected.append(f"{key}: {why}: {entry[:160]}")
        if len(kept) != len(entries):
            if kept:
                sections[key] = tuple(kept)
            else:
                sections.pop(key)
    if not rejected:
        return summary, ()
    return replace(summary, sections=sections), tuple(rejected)


def plain_verify(
    summary: SummaryDocument,
    facts: SummaryDocument,
    text: tuple[str, str],
    previous: SummaryDocument,
    check_facts: bool,
) -> tuple[SummaryDocument, _verify.Verification]:
    authored, everything = text if check_facts else (text[0], "")
    known = frozenset(entry for key in summary.sections for entry in previous.entries(key))
    checked, rejected = plain_reject(summary, _verify_text.Span(authored, everything, known))
    checked, verified, re_added = plain_restore(checked, facts)
    return checked, _verify.Verification(verified, re_added, rejected)


def plain_restore(
    summary: SummaryDocument, facts: SummaryDocument
) -> tuple[SummaryDocument, tuple[str, ...], tuple[str, ...]]:
    """``_verify._restore`` as written before it read the summary's sections only when needed."""
    verified: list[str] = []
    missing: dict[str, list[str]] = {}
    have_constraints = set(map(_verify._constraint_key, summary.entries("constraints")))
    goals = summary.entries("goal")
    for entry in facts.entries("constraints"):
        if entry.startswith(_verify_text.LATER):
            continue
        if _verify._constraint_key(entry) in have_constraints or _verify._in_goal(entry, goals):
            verified.append(f"constraints: {entry[:160]}")
        else:
            missing.setdefault("constraints", []).append(entry)
    for key in ("files_modified", "errors"):
        have = {entry_key(e) for e in summary.entries(key)}
        text: str | None = None
        for entry in facts.entries(key):
            if key == "errors" and "resolved" in entry.partition(" — ")[2]:
                continue
            found = entry_key(entry) in have
            if not found:
                if text is None:
                    joined = "\n".join(summary.entries(key)).replace("`", "")
                    text = _verify_text.norm(joined)
                found = _verify_text.norm(key_of(entry) or entry).rstrip("…").strip() in text
            if found:
                verified.append(f"{key}: {entry[:160]}")
            else:
                missing.setdefault(key, []).append(entry)
    current = _verify._current_values(summary.entries("values"))
    for name, (value, entry) in _verify._current_values(facts.entries("values")).items():
        if current.get(name, (None, ""))[0] == value:
            verified.append(f"values: {entry[:160]}")
        else:
            missing.setdefault("values", []).append(entry)
    if facts.entries("goal") and not summary.entries("goal"):
        missing["goal"] = [facts.entries("goal")[0]]
    if not missing:
        return summary, tuple(verified), ()
    added = SummaryDocument.of(**missing)
    re_added = tuple(f"{key}: {e[:160]}" for key, entries in missing.items() for e in entries)
    return summary.merge(added), tuple(verified), re_added


@PROPERTY
@given(
    _docs,
    _docs,
    _docs,
    st.lists(st.sampled_from(_TEXTS), max_size=4),
    st.lists(st.sampled_from(_TEXTS), max_size=4),
    st.booleans(),
)
def test_verify_judges_as_the_plain_walk(
    summary: SummaryDocument,
    facts: SummaryDocument,
    previous: SummaryDocument,
    said: list[str],
    seen: list[str],
    check_facts: bool,
) -> None:
    items = [Message(role="user", content=t) for t in said if t]
    items += [Message(role="assistant", content=t) for t in seen if t]
    text = _verify_text.folded_text(items, previous)
    got = _verify.verify(
        summary, facts, items, previous=previous, text=text, check_facts=check_facts
    )
    assert got == plain_verify(summary, facts, text, previous, check_facts)


def test_a_fact_the_span_does_not_hold_is_rejected_only_when_its_text_is_checked() -> None:
    summary = SummaryDocument(sections={"files_read": ("`src/gone.py` — read",)})
    items = [Message(role="user", content="edited src/app.py")]
    checked, found = _verify.verify(summary, SummaryDocument(), items, check_facts=True)
    assert found.rejected and not checked.entries("files_read")
    checked, found = _verify.verify(summary, SummaryDocument(), items, check_facts=False)
    assert not found.rejected and checked == summary
