"""The post-condition reads what people wrote in a folded span together with the previous
summary's goal and constraints. It normalises each summary entry once (the summary keeps
most of them from one compaction to the next) instead of the joined text every time, and reads
only the entries a summary added after the ones it read last (``_verify_text._kept_lines``): the text it
checks against is exactly the joined text normalised, whatever came before."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit.compressors import _verify, _verify_text
from compactkit.compressors._facts_prose import is_observation
from compactkit.compressors.sections import SummaryDocument
from compactkit.items import Message

PROPERTY = settings(deadline=None, max_examples=400)
# Line breaks of every kind str.splitlines knows ("\r\n" is one), spaces, case.
_PIECES = ["ab", "Cé", "ΣΑΣ", " ", "\t", "\n", "\r", "\r\n", "\u2028", "\x85", "\x0b", "ß"]
texts = st.lists(st.sampled_from(_PIECES), max_size=6).map("".join)


def _reference(span: list[str], kept: list[str]) -> str:
    """The authored text as first written: everything joined, then normalised line by line."""
    joined = "\n".join([*span, *kept])
    return "\n".join(" ".join(line.split()) for line in joined.splitlines()).casefold()


@PROPERTY
@given(st.lists(texts, max_size=4), st.lists(texts, max_size=5))
def test_entries_normalised_one_by_one_give_the_joined_text_normalised(
    span: list[str], kept: list[str]
) -> None:
    plain = [_verify_text.plain(e) for e in kept]
    assert _verify_text._authored_lines(span, tuple(kept)) == _reference(span, plain)


_entries = st.lists(
    st.sampled_from(["Later: ", "[#3]", " [#2\u20134]", '"', "system: "]) | texts, max_size=4
).map("".join)


@PROPERTY
@given(
    st.lists(texts, max_size=3),
    st.lists(_entries, max_size=4),
    st.lists(
        st.tuples(st.integers(-1, 4), st.lists(_entries, max_size=3), st.lists(texts, max_size=2)),
        min_size=1,
        max_size=6,
    ),
)
def test_summaries_read_one_after_another_give_the_joined_text_normalised(
    span: list[str], start: list[str], steps: list[tuple[int, list[str], list[str]]]
) -> None:
    """Compaction after compaction: the summary grows at its end (only the new entries read),
    is cut (read anew), stays the same, or changes before its end."""
    kept = list(start)
    for cut, grown, said in steps:
        if cut >= 0:
            del kept[cut:]
        kept += grown
        plain = [_verify_text.plain(e) for e in kept]
        assert _verify_text._authored_lines(said, tuple(kept)) == _reference(said, plain)
        assert _verify_text._authored_lines(span, tuple(kept)) == _reference(span, plain)


@PROPERTY
@given(
    st.lists(texts, max_size=3),
    st.lists(texts.filter(str.strip), min_size=1, max_size=3),
    st.lists(texts.filter(str.strip), max_size=4),
)
def test_folded_text_reads_the_previous_goal_and_constraints_as_written(
    said: list[str], goals: list[str], rules: list[str]
) -> None:
    items = [Message(role="user", content=text) for text in said]
    previous = SummaryDocument.of(goal=goals, constraints=rules)
    kept = [_verify_text.plain(e) for key in ("goal", "constraints") for e in previous.entries(key)]
    authored, _everything = _verify_text.folded_text(items, previous, everything=False)
    span = [m.text for m in items if not is_observation(m.text)]
    assert authored == _reference(span, kept)


_clause_pieces = st.sampled_from(
    ["run tests", "Run", "tests", ".", "…", "...", ";", "\n", " ", "- ", "1) ", '"', "(", ",", "é"]
)
_clauses = st.lists(_clause_pieces, max_size=8).map("".join)


def plain_whole_clause(quote: str, authored: str) -> bool:
    """``_whole_clause`` as first written: the text before and after each find sliced whole."""
    pieces = [p for p in _verify._CLIP.split(_verify_text.norm(quote)) if p]
    if not pieces:
        return False
    clipped = len(pieces) > 1 or bool(_verify._CLIP.search(quote.rstrip()[-3:]))
    first = pieces[0].rstrip(".").strip(_verify_text.QUOTES)
    if not first:
        return False
    flat = _verify_text.flattened(authored)
    start, found = 0, False
    while (at := flat.find(first, start)) >= 0:
        before, after = authored[:at], authored[at + len(first) :]
        if _verify._CLAUSE_START.search(before[-12:] if at else "") and (
            clipped or re.match(r"^\s*(?:$|[.!?;:,\n)\]\"'\u201d])", after)
        ):
            found = True
            break
        start = at + 1
    return found and all(p.strip(_verify_text.QUOTES) in flat for p in pieces[1:])


@PROPERTY
@given(_clauses, _clauses)
@example("run tests", "x" + " " * 11 + "run tests")  # 12 characters before it read, not 11
@example("run tests", "." + " " * 11 + "run tests")
@example("run tests…", "do it; run tests now")
def test_a_whole_clause_is_found_as_the_plain_search_finds_it(quote: str, authored: str) -> None:
    assert _verify._whole_clause(quote, authored) == plain_whole_clause(quote, authored)


@PROPERTY
@given(_clauses | texts, st.lists(_clauses | texts, max_size=4).map("\n".join))
@example("é é", "é\né")  # no content word: the quote is looked for whole, line breaks as spaces
@example("run tests", "run\ntests")
def test_words_are_found_in_the_authored_text_as_in_its_flat_copy(
    quote: str, authored: str
) -> None:
    span = _verify_text.Span(authored, "")
    assert _verify._supported(quote, span) == _verify._supported(quote, span.flat)
