"""A stored item's texts are checked for lone surrogates by encoding them, except an ASCII
string, which cannot hold one (``str.isascii`` reads a flag): held to the plain check over any
text, in every field the check reads."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.items import FunctionCall, FunctionCallOutput, Message, TextPart
from compactkit.memory._inputs import _check_storable, _check_storable_generally

TEXTS = st.one_of(
    st.text(alphabet=st.characters(codec="ascii"), max_size=40),
    st.text(max_size=40),  # any code point, lone surrogates included
)


def encodes(*texts: str) -> bool:
    try:
        for text in texts:
            text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@settings(deadline=None, max_examples=200)
@given(TEXTS, TEXTS, st.sampled_from(["message", "call", "output", "extra"]))
def test_refused_exactly_when_a_text_does_not_encode(first: str, second: str, kind: str) -> None:
    if kind == "message":
        item, texts = (
            Message.model_construct(role="user", content=first, name=second),
            [first, second],
        )
    elif kind == "call":
        item = FunctionCall.model_construct(call_id="c", name=first, arguments=second)
        texts = [first, second]
    elif kind == "output":
        item = FunctionCallOutput.model_construct(call_id=first, output=second)
        texts = [first, second]
    else:
        item = Message.model_construct(role="user", content="x", extra={first: [second]})
        texts = [first, second]
    if encodes(*texts):
        _check_storable(item)
    else:
        with pytest.raises(ValueError):
            _check_storable(item)


def _raised(check: Any, item: Any) -> str | None:
    try:
        check(item)
    except (ValueError, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


SURROGATE_TEXTS = st.one_of(TEXTS, st.none())
ITEMS = st.one_of(
    st.builds(
        Message.model_construct,
        role=st.sampled_from(["user", "assistant"]),
        content=TEXTS | st.lists(st.builds(TextPart, text=TEXTS), max_size=2).map(tuple),
        name=SURROGATE_TEXTS,
        extra=st.none() | st.dictionaries(TEXTS, TEXTS, max_size=2),
    ),
    st.builds(
        FunctionCall.model_construct,
        call_id=TEXTS,
        name=TEXTS,
        arguments=TEXTS,
        extra=st.none() | st.dictionaries(TEXTS, st.floats(), max_size=2),
    ),
    st.builds(
        FunctionCallOutput.model_construct,
        call_id=TEXTS,
        output=TEXTS | st.lists(st.builds(TextPart, text=TEXTS), max_size=2).map(tuple),
        name=SURROGATE_TEXTS,
    ),
)


@settings(deadline=None, max_examples=400)
@given(ITEMS)
def test_the_exact_classes_fast_check_raises_as_the_general_one(item: Any) -> None:
    assert _raised(_check_storable, item) == _raised(_check_storable_generally, item)
