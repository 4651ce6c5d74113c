"""The digest's shortcuts give what the plain paths give: a call's arguments scanned directly
are what ``parsed_arguments`` returns."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors._extract import arguments_of
from compactkit.items import FunctionCall

PROPERTY = settings(deadline=None, max_examples=400)

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@PROPERTY
@given(
    st.one_of(
        st.dictionaries(st.text(max_size=6), _JSON, max_size=4).map(json.dumps),
        _JSON.map(json.dumps),
        st.text(st.sampled_from('{}[]":,1 a\\\n'), max_size=14),
    ),
    st.sampled_from(["", " ", "\n", "\ufeff", "x"]),
    st.sampled_from(["", " ", "\n\t", "x", "}", ",1", "{}"]),
    st.integers(0, 40),
)
def test_arguments_scanned_directly_are_the_parsed_arguments(
    body: str, before: str, after: str, cut: int
) -> None:
    for text in (before + body + after, body[: len(body) - cut] if cut < len(body) else body):
        call = FunctionCall(call_id="c", name="t", arguments=text)
        assert arguments_of(call) == call.parsed_arguments()


def test_arguments_nested_too_deeply_to_read_are_no_arguments() -> None:
    call = FunctionCall(call_id="c", name="t", arguments='{"a":' * 100_000)
    assert arguments_of(call) == call.parsed_arguments() == {}
