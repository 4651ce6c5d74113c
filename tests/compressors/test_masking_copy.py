"""``with_output`` (how a placeholder or a cut output is made from its original, without
pydantic's copy) makes exactly the item ``model_copy(update={"output": ...})`` makes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import ConfigError, FunctionCallOutput
from compactkit.compressors.masking import mask_output, with_output
from compactkit.items import TextPart

TEXT = st.text(max_size=20)


class _Output(FunctionCallOutput):
    """A subclass: copied the general way."""


def _output(cls: type[FunctionCallOutput], fields: dict[str, object]) -> FunctionCallOutput:
    return cls(**fields)  # type: ignore[arg-type]


OUTPUTS = st.builds(
    _output,
    st.sampled_from([FunctionCallOutput, _Output]),
    st.fixed_dictionaries(
        {"call_id": TEXT, "output": TEXT | st.builds(lambda t: (TextPart(text=t),), TEXT)},
        optional={
            "id": TEXT | st.none(),
            "seq": st.integers(0, 10**6) | st.none(),
            "pinned": st.booleans(),
            "name": TEXT | st.none(),
            "is_error": st.booleans() | st.none(),
            "extra": st.dictionaries(TEXT, TEXT, max_size=2) | st.none(),
        },
    ),
)


@settings(deadline=None, max_examples=400)
@given(output=OUTPUTS, text=TEXT)
def test_the_same_item_as_model_copy(output: FunctionCallOutput, text: str) -> None:
    ours, theirs = with_output(output, text), output.model_copy(update={"output": text})
    assert type(ours) is type(theirs)
    assert ours == theirs and ours.output == text
    assert list(ours.__dict__) == list(theirs.__dict__)
    assert ours.model_fields_set == theirs.model_fields_set
    assert ours.__pydantic_extra__ == theirs.__pydantic_extra__
    assert ours.__pydantic_private__ == theirs.__pydantic_private__
    assert ours.model_dump(exclude_unset=True) == theirs.model_dump(exclude_unset=True)
    assert ours.model_dump_json() == theirs.model_dump_json()
    if output.extra is None:  # (a dict in a field makes an item unhashable)
        assert hash(ours) == hash(theirs)
    assert output.output != text or output == ours  # the original is left as it was


def test_placeholders_stay_frozen() -> None:
    placeholder = mask_output(FunctionCallOutput(call_id="c", output="x" * 50), tokens=20)
    with pytest.raises((ConfigError, ValueError, TypeError)):
        placeholder.output = "y"  # type: ignore[misc]
    assert placeholder.model_copy(update={"seq": 4}).seq == 4 and placeholder.seq is None
