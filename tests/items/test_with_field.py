"""``with_field`` (a frozen item copied with one field replaced, without pydantic's generic
copy; the SQL memory numbers every stored item with it and masking builds every placeholder
with it) makes exactly the item ``model_copy(update={name: value})`` makes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, with_field

TEXT = st.text(max_size=20)
COMMON = {
    "id": TEXT | st.none(),
    "seq": st.integers(0, 10**6) | st.none(),
    "pinned": st.booleans(),
}
ITEMS = st.one_of(
    st.builds(
        lambda fields: Message(**fields),
        st.fixed_dictionaries(
            {"role": st.sampled_from(["system", "user", "assistant"]), "content": TEXT},
            optional={**COMMON, "name": TEXT | st.none()},
        ),
    ),
    st.builds(
        lambda fields: FunctionCall(**fields),
        st.fixed_dictionaries({"call_id": TEXT, "name": TEXT, "arguments": TEXT}, optional=COMMON),
    ),
    st.builds(
        lambda fields: FunctionCallOutput(**fields),
        st.fixed_dictionaries({"call_id": TEXT, "output": TEXT}, optional=COMMON),
    ),
)


@settings(deadline=None, max_examples=300)
@given(item=ITEMS, seq=st.integers(0, 10**9))
def test_numbering_an_item_is_model_copy(item: Item, seq: int) -> None:
    ours, theirs = with_field(item, "seq", seq), item.model_copy(update={"seq": seq})
    assert type(ours) is type(theirs) and ours == theirs and ours.seq == seq
    assert list(ours.__dict__) == list(theirs.__dict__)  # the fields in the class's order
    assert ours.model_fields_set == theirs.model_fields_set
    assert ours.model_dump_json(exclude_unset=True) == theirs.model_dump_json(exclude_unset=True)
    assert hash(ours) == hash(theirs)
    assert item.seq != seq or item == ours  # the original is left as it was
