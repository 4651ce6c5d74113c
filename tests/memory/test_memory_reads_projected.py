"""A projector that serves one ``InMemoryMemory`` for a whole session sends what a fresh one would.

The projector recognises reads of one memory grown only by appends without comparing their
items; pins, unpins, compactions and clears between reads must still be seen.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit import InMemoryMemory
from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors.window import WindowedCompressor
from compactkit.governance.projector import ContextProjector
from compactkit.items import FunctionCall, FunctionCallOutput, Message

COUNTER = TiktokenCounter("o200k_base")

steps = st.lists(
    st.sampled_from(["user", "tool", "answer", "pin", "unpin", "compact", "clear", "read"]),
    min_size=1,
    max_size=40,
)


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(steps, st.sampled_from([60, 400, 100_000]))
def test_a_long_lived_projector_sends_what_a_fresh_one_sends(
    actions: list[str], budget: int
) -> None:
    memory = InMemoryMemory()
    served = ContextProjector(COUNTER, budget=budget)
    for step, action in enumerate(actions):
        if action == "user":
            memory.add_user_input(Message(role="user", content=f"request {step} " * 5))
        elif action == "tool":
            call = f"call_{step}"
            memory.add_output_items([FunctionCall(call_id=call, name="read", arguments="{}")])
            memory.add_output_items([FunctionCallOutput(call_id=call, output=f"out {step} " * 9)])
        elif action == "answer":
            memory.add_output_items([Message(role="assistant", content=f"done {step}")])
        elif action in ("pin", "unpin"):
            seqs = [item.seq for item in memory.snapshot().items if item.seq is not None]
            if seqs:
                seq = seqs[step % len(seqs)]
                memory.pin(seq) if action == "pin" else memory.unpin(seq)
        elif action == "compact":
            memory.apply(WindowedCompressor(max_items=2).compress(memory.snapshot()))
        elif action == "clear":
            memory.clear()
        snapshot = memory.snapshot()
        try:
            expected = ContextProjector(COUNTER, budget=budget).project(snapshot).items
        except Exception as fresh_error:  # the budget cannot hold what must be sent
            try:
                served.project(snapshot)
            except Exception as error:
                assert type(error) is type(fresh_error)
                continue
            raise AssertionError("the served projector did not raise") from fresh_error
        assert served.project(snapshot).items == expected
