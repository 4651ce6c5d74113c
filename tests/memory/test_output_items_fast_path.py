"""``output_items`` takes a list of compactkit items (what ``MessageCompactor`` hands its
memory) without the SDK-object and dict conversion: the same items, or the same error, as the
general path (which a tuple of the same values takes)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.errors import ConfigError
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Reasoning
from compactkit.items.snapshot import summary_message
from compactkit.memory._inputs import output_items


class _MyMessage(Message):
    """A subclass: the general path takes it."""


_EXTRAS = (None, {"k": [1, "v"]}, {"k": [float("nan")]})  # the last one is refused


def _item(kind: int, n: int, seq: int | None, pinned: bool, extra: int) -> object:
    options = {"seq": seq, "pinned": pinned}
    if kind == 0:
        return Message(role="user", content=f"say {n}", extra=_EXTRAS[extra], **options)
    if kind == 1:
        return FunctionCall(call_id=f"c{n}", name="run", arguments='{"n": 1}', **options)
    if kind == 2:
        return FunctionCallOutput(call_id=f"c{n}", output=f"out {n}", **options)
    if kind == 3:
        return Reasoning(format="responses", payload={"type": "reasoning", "n": n}, **options)
    if kind == 4:
        return summary_message(f"- fact {n}")  # refused: a rendered summary
    if kind == 5:
        return Message(role="user", content="bad \ud800 text")  # refused: a lone surrogate
    if kind == 6:
        return _MyMessage(role="assistant", content=f"sub {n}")
    return {"role": "assistant", "content": f"dict {n}"}  # a chat dict: the general path


item_lists = st.lists(
    st.builds(
        _item,
        st.integers(0, 7),
        st.integers(0, 5),
        st.none() | st.integers(1, 9),
        st.booleans(),
        st.integers(0, len(_EXTRAS) - 1),
    ),
    max_size=8,
)


def _outcome(values: list[object] | tuple[object, ...]) -> tuple[str, object]:
    try:
        items: list[Item] = output_items(values)
    except ConfigError as exc:
        return "error", str(exc)
    return "items", [(type(i), i.model_dump(), i.seq) for i in items]


@settings(deadline=None, max_examples=300)
@given(item_lists)
def test_a_list_of_items_is_stored_as_the_general_path_stores_it(values: list[object]) -> None:
    assert _outcome(values) == _outcome(tuple(values))


def test_provider_data_that_would_not_load_back_is_refused() -> None:
    bad = Message(role="user", content="x", extra={"k": [float("nan")]})
    for values in ([bad], (bad,)):
        with pytest.raises(ConfigError, match="nan in provider data is not a JSON number"):
            output_items(values)
