"""The digest counts the summary message it sends from the summary's own count
(``SummarySizer.message_tokens``): always exactly what counting the sealed message gives, and
the count it leaves the counter for the sealed text (``remember_text_tokens``) is that too."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget import EstimateCounter, TiktokenCounter, line_pieces
from compactkit.budget._encodings import text_counts
from compactkit.compressors._plan import summary_tokens
from compactkit.compressors.digest import _sizer
from compactkit.compressors.digest._sizer import SummarySizer
from compactkit.compressors.sections import SummaryDocument

COUNTERS = [TiktokenCounter("o200k_base"), TiktokenCounter("cl100k_base")]
# Line starts the split patterns treat specially (spaces, "/", line breaks, "\r", marks, unicode
# spaces and separators), and ordinary text.
PIECE = st.sampled_from(
    [
        *"\n\n\r /-#`<_",
        "ab",
        "42",
        "'s",
        "\t",
        "\u00a0",
        "\u2028",
        "\u0085",
        "\x1c",
        "\u3000",
        "日本",
        "—",
        "x\n/",
        "\n  ",
    ]
)
ENTRY = st.lists(PIECE, max_size=12).map("".join)
SECTION_KEYS = st.sampled_from(["goal", "files_read", "commands", "values", "state", "next_steps"])


@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: c.encoding_name)
@settings(deadline=None, max_examples=300)
@given(
    sections=st.dictionaries(SECTION_KEYS, st.lists(ENTRY, max_size=4)),
    extra=st.dictionaries(ENTRY, st.lists(ENTRY, max_size=3), max_size=2),
    trimmed=st.integers(0, 3),
    given_count=st.booleans(),
)
def test_the_summary_message_counts_as_sealed(
    counter: TiktokenCounter,
    sections: dict[str, list[str]],
    extra: dict[str, list[str]],
    trimmed: int,
    given_count: bool,
) -> None:
    sizer = SummarySizer(counter)
    raw = SummaryDocument(
        sections={k: tuple(v) for k, v in sections.items()},  # type: ignore[misc]
        extra={k: tuple(v) for k, v in extra.items()},
        trimmed=trimmed,
        omitted={"files_read": trimmed} if trimmed else {},
    )
    counts = text_counts(counter.encoding_name)
    for doc in (raw, SummaryDocument().merge(raw)):
        counts.clear()  # (the sizer leaves the sealed text's count to the counter: not yet)
        expected = summary_tokens(doc.render(), counter)
        counts.clear()
        tokens = sizer(doc) if given_count else None
        assert sizer.message_tokens(doc, tokens) == expected
        assert summary_tokens(doc.render(), counter) == expected  # the count it left


@settings(deadline=None, max_examples=500)
@given(text=st.lists(PIECE, max_size=40).map(lambda pieces: "".join(pieces) + "\n"))
def test_the_last_piece_is_the_last_line_piece(text: str) -> None:
    assert _sizer._last_piece(text) == line_pieces(text)[-1]


def test_a_long_summary_and_an_empty_one() -> None:
    counter = COUNTERS[0]
    doc = SummaryDocument.of(
        goal=["Port the CLI to click"],
        files_read=[f"`src/m{n}.py` — read\n/ slash line\n  indented" for n in range(300)],
        next_steps=["run the tests"],
    )
    assert SummarySizer(counter).message_tokens(doc) == summary_tokens(doc.render(), counter)
    empty = SummaryDocument()
    assert SummarySizer(counter).message_tokens(empty) == summary_tokens(empty.render(), counter)


def test_other_counters_count_the_sealed_message() -> None:
    counter = EstimateCounter(4)
    doc = SummaryDocument.of(goal=["Port the CLI to click"], files_read=["`a.py` — read"])
    assert SummarySizer(counter).message_tokens(doc) == summary_tokens(doc.render(), counter)
