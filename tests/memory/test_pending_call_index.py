"""``InMemoryMemory`` keeps its call ids in one set (``PendingCallIndex``: every call id, the
calls still waiting for an output, the outputs that answered no call) instead of
``CallIndex``'s two. Held to ``CallIndex`` over random batches of calls and outputs (repeated
ids, outputs before their calls, unknown ids accepted or not): the same batches are refused,
with the same message, and the same are accepted."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.errors import ConfigError
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.memory import InMemoryMemory
from compactkit.memory._call_ids import PendingCallIndex
from compactkit.memory.rules import CallIndex

IDS = st.sampled_from(["a", "b", "c", "d", "e"])
ITEMS = st.one_of(
    st.builds(FunctionCall, call_id=IDS, name=st.just("t")),
    st.builds(FunctionCallOutput, call_id=IDS, output=st.just("ok")),
    st.just(Message(role="user", content="hi")),
)


def refusal(index: CallIndex | PendingCallIndex, batch: list[Item], accept: bool) -> str | None:
    try:
        index.check(batch, accept_unknown=accept)
    except ConfigError as error:
        return str(error)
    return None


@settings(deadline=None, max_examples=300)
@given(st.lists(st.lists(ITEMS, max_size=5), max_size=8), st.booleans(), st.booleans())
def test_the_same_batches_are_refused_with_the_same_message(
    batches: list[list[Item]], accept: bool, rebuild: bool
) -> None:
    plain, lean = CallIndex(), PendingCallIndex()
    stored: list[Item] = []
    for batch in batches:
        refused = refusal(plain, batch, accept)
        assert refusal(lean, batch, accept) == refused
        if refused is None:
            for item in batch:
                plain.add(item)
                lean.add(item)
            stored += batch
        if rebuild:  # (a restore indexes the stored history at once)
            lean = PendingCallIndex.of(stored)
        for call_id in "abcde":
            assert lean.answered(call_id) == (call_id in plain.answered)


def test_a_memory_refuses_a_second_output_and_accepts_a_late_call() -> None:
    memory = InMemoryMemory(accept_unknown_call_ids=True)
    memory.add_output_items([FunctionCallOutput(call_id="x", output="early")])
    memory.add_output_items([FunctionCall(call_id="x", name="t")])
    try:
        memory.add_output_items([FunctionCallOutput(call_id="x", output="again")])
    except ConfigError as error:
        assert "already has an output" in str(error)
    else:
        raise AssertionError("a second output was stored")
