"""A summary's text is counted line by line while the digest grows it; the count is exactly
the counter's count of the whole text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget import TiktokenCounter, line_pieces
from compactkit.compressors._plan import text_tokens
from compactkit.compressors.digest import _sizer
from compactkit.compressors.digest._sizer import SummarySizer
from compactkit.compressors.sections import SummaryDocument

COUNTERS = [TiktokenCounter("o200k_base"), TiktokenCounter("cl100k_base")]
# Line starts that split patterns treat specially (spaces, "/", newlines, contractions,
# punctuation runs, marks, unicode spaces and separators), and ordinary text.
ALPHABET = st.sampled_from(
    [
        *"\n\n\n /-#`'_*.:,;()[]",
        "'s",
        "'ll",
        "\t",
        "  ",
        "ab",
        "Zeta",
        "42",
        "1234",
        "é",
        "\u0301",
        "\u00a0",
        "\u2028",
        "\u0085",
        "\u200b",
        "\ufeff",
        "\x1c",
        "\u3000",
        "日本",
        "→",
        "—",
        "x\n/",
    ]
)


@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: c.encoding_name)
@settings(deadline=None, max_examples=500)
@given(text=st.lists(ALPHABET, max_size=40).map("".join))
def test_counted_by_lines_it_is_the_whole_text_count(counter: TiktokenCounter, text: str) -> None:
    assert text_tokens(text, counter) == counter.count_text(text)


@settings(deadline=None, max_examples=500)
@given(text=st.lists(ALPHABET, max_size=40).map("".join))
def test_a_text_is_cut_before_each_line_the_split_pattern_starts_anew(text: str) -> None:
    # as first written: a split at every position after a line break and before a character
    # other than whitespace or "/"
    assert line_pieces(text) == re.split(r"(?<=\n)(?=[^\s/])", text)


@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: c.encoding_name)
def test_a_rendered_summary_counts_the_same(counter: TiktokenCounter) -> None:
    doc = SummaryDocument.of(
        goal=["Port the CLI to click; keep `--json` output identical"],
        files_read=[f"`src/m{n}.py` — read" for n in range(200)],
        files_modified=["`pyproject.toml` — edited `a` → `b`\nsecond line\n/ slash line"],
        commands=["`pytest -q` → exit 1; `FAILED tests/test_x.py::test_y`"],
        errors=["`KeyError: 'user_id'` — from `pytest -q`"],
    )
    text = doc.render()
    assert text_tokens(text, counter) == counter.count_text(text)


def test_other_counters_count_the_whole_text() -> None:
    class Halves:
        def count_text(self, text: str) -> int:
            return len(text) // 2

    text = "- a\n- b\n" * 10
    assert text_tokens(text, Halves()) == len(text) // 2  # type: ignore[arg-type]


ENTRY = st.lists(
    st.sampled_from([*"\n\r /-#`_", "ab", "42", "\u00a0", "\u2028", "日本", "—"]), max_size=12
)
SECTION_KEYS = st.sampled_from(["goal", "files_read", "commands", "values", "state"])


@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: c.encoding_name)
@settings(deadline=None, max_examples=300)
@given(
    sections=st.dictionaries(SECTION_KEYS, st.lists(ENTRY.map("".join), max_size=4)),
    extra=st.dictionaries(ENTRY.map("".join), st.lists(ENTRY.map("".join), max_size=3), max_size=2),
    trimmed=st.integers(0, 3),
    grown=st.lists(ENTRY.map("".join), max_size=3),
)
def test_a_summary_sized_without_rendering_counts_the_same(
    counter: TiktokenCounter,
    sections: dict[str, list[str]],
    extra: dict[str, list[str]],
    trimmed: int,
    grown: list[str],
) -> None:
    """The digest's sizer (entries counted once, across the documents it is asked about) gives
    the count of the rendered text, for any document, merged or built directly."""
    sizer = SummarySizer(counter)
    raw = SummaryDocument(
        sections={k: tuple(v) for k, v in sections.items()},  # type: ignore[misc]
        extra={k: tuple(v) for k, v in extra.items()},
        trimmed=trimmed,
        omitted={"files_read": trimmed} if trimmed else {},
    )
    merged = SummaryDocument().merge(raw)
    grew = merged.merge(SummaryDocument.of(files_read=grown, state=grown))
    for doc in (raw, raw, merged, grew, grew, merged, raw):  # (asked twice: the last remembered)
        assert sizer(doc) == counter.count_text(doc.render())


@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: c.encoding_name)
@settings(deadline=None, max_examples=300)
@given(
    start=st.dictionaries(SECTION_KEYS, st.lists(ENTRY.map("".join), max_size=4)),
    steps=st.lists(
        st.tuples(SECTION_KEYS, st.lists(ENTRY.map("".join), max_size=3), st.integers(-1, 3)),
        max_size=6,
    ),
)
def test_a_summary_sized_as_it_grows_counts_the_same(
    counter: TiktokenCounter,
    start: dict[str, list[str]],
    steps: list[tuple[str, list[str], int]],
) -> None:
    """One sizer asked about a summary round after round — sections growing at their end (their
    gain counted by what it adds), changed in the middle, emptied, new — gives the count of each
    rendered text."""
    sizer = SummarySizer(counter)
    sections = {k: list(v) for k, v in start.items()}
    for key, grown, cut in steps:
        entries = sections.setdefault(key, [])
        if cut >= 0:  # a change before the end: the section no longer only grew
            del entries[cut:]
        entries += grown
        doc = SummaryDocument(sections={k: tuple(v) for k, v in sections.items() if v})  # type: ignore[misc]
        assert sizer(doc) == counter.count_text(doc.render())


@settings(deadline=None, max_examples=300)
@given(
    sections=st.lists(
        st.dictionaries(SECTION_KEYS, st.lists(ENTRY.map("".join), max_size=4)),
        min_size=1,
        max_size=4,
    ),
    limit=st.sampled_from([2, 8, 1 << 16]),
)
def test_bullet_counts_shared_by_sizers_are_each_encodings_own(
    sections: list[dict[str, list[str]]], limit: int
) -> None:
    """Sizers of both encodings, one per summary as a compaction makes them, share the bullet
    counts of their encoding (the older half dropped when they outgrow the limit): each gives
    the count of the rendered text in its encoding."""
    _sizer._BULLET_LIMIT, kept = limit, _sizer._BULLET_LIMIT
    try:
        for raw in sections:
            doc = SummaryDocument(sections={k: tuple(v) for k, v in raw.items() if v})  # type: ignore[misc]
            for counter in (*COUNTERS, *reversed(COUNTERS)):
                assert SummarySizer(counter)(doc) == counter.count_text(doc.render())
    finally:
        _sizer._BULLET_LIMIT = kept
