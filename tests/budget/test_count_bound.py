"""``TiktokenCounter.bound_item``: an upper bound of an item's count without encoding (what a
cold projection prices history no window can reach with) is never below the exact count."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

TEXT = st.text(st.characters(exclude_categories=()), max_size=400)  # surrogates included
ITEMS = st.one_of(
    st.builds(
        lambda role, text: Message(role=role, content=text),
        st.sampled_from(["user", "assistant", "system"]),
        TEXT,
    ),
    st.builds(lambda name, args: FunctionCall(call_id="c", name=name, arguments=args), TEXT, TEXT),
    st.builds(lambda text: FunctionCallOutput(call_id="c", output=text), TEXT),
    st.builds(lambda name, text: Message(role="user", content=text, name=name), TEXT, TEXT),
)


@settings(deadline=None, max_examples=400)
@given(item=ITEMS, encoding=st.sampled_from(["o200k_base", "cl100k_base"]))
def test_the_bound_is_at_least_the_exact_count(item: Item, encoding: str) -> None:
    counter = TiktokenCounter(encoding)  # a fresh cache: the bound is computed, not looked up
    bound = counter.bound_item(item)
    assert bound >= counter.count_item(item)
    assert counter.bound_item(item) == counter.count_item(item)  # once counted: the count
