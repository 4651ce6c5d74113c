"""A summary's text is counted line by line while the digest grows it; the count is exactly
the counter's count of the whole text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget import TiktokenCounter
from compactkit.compressors._plan import text_tokens
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
