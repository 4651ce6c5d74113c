"""The shas and the code-id hint of ASCII text, read from its whole runs of seven or more hex
digits (found by byte searches), are those read from every run the regex engine finds from a
digit on (``_lettered_runs``, which text beyond ASCII is still read with)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _facts_ids as facts_ids

PROPERTY = settings(deadline=None, max_examples=3000)

# Runs of hex digits of every length around seven and eight (letters first, digits first,
# digits only, letters only), the capitals before a code id's digits, and the characters a
# sha may not follow or precede.
ASCII_HEX = st.lists(
    st.text(st.sampled_from("0123456789abcdef"), min_size=1, max_size=14)
    | st.text(st.sampled_from("0123456789"), min_size=6, max_size=10)
    | st.sampled_from(["-", "/", ".", " ", "_", "0x", "A", "Z", "g", "\n", "X12345678", "#"]),
    max_size=10,
).map("".join)


@PROPERTY
@given(ASCII_HEX)
def test_long_runs_read_as_the_runs_from_each_digit_read(text: str) -> None:
    assert facts_ids._long_runs(text) == facts_ids._lettered_runs(text)


@pytest.mark.parametrize(
    "text",
    [
        "9f2c1ab",
        "abcdef1",
        "abcdefa",
        "1234567",
        "A12345678",
        "A1234567",
        "A1234567b",
        "Z12345678ab",
        "x" + "f" * 39 + "1",
        "f" * 39 + "1",
        "f" * 40 + "1",
        "9f2c1ab 9f2c1ab",
        "-9f2c1ab",
        "9f2c1ab-",
        "9f2c1ab_",
        "/9f2c1ab.",
        "12ab3 ab1234",
        "abc12345678",
    ],
)
def test_each_run_is_read_as_the_runs_from_each_digit_read_it(text: str) -> None:
    assert facts_ids._long_runs(text) == facts_ids._lettered_runs(text)
