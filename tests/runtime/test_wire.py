"""The incremental prompt conversion is exactly the full conversion, step after step."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import FunctionCall, FunctionCallOutput, Item, Message, items_to_chat
from compactkit.formats import items_to_responses
from compactkit.items import Reasoning
from compactkit.runtime._wire import WireCache


@st.composite
def histories(draw: st.DrawFn) -> list[Item]:
    """Histories with parallel calls, late outputs, text between a call and its output,
    reasoning, and several user turns."""
    items: list[Item] = [Message(role="system", content="Be brief.")]
    waiting: list[str] = []
    for n in range(draw(st.integers(min_value=1, max_value=40))):
        kind = draw(st.sampled_from(["user", "assistant", "call", "output", "reasoning"]))
        if kind == "user":
            items.append(Message(role="user", content=f"u{n}"))
        elif kind == "assistant":
            items.append(Message(role="assistant", content=f"a{n}"))
        elif kind == "call":
            waiting.append(f"c{n}")
            items.append(FunctionCall(call_id=f"c{n}", name="read", arguments="{}"))
        elif kind == "output" and waiting:
            call_id = waiting.pop(draw(st.integers(min_value=0, max_value=len(waiting) - 1)))
            items.append(FunctionCallOutput(call_id=call_id, output=f"o{n}", name="read"))
        elif kind == "reasoning":
            items.append(
                Reasoning(
                    format="responses", payload={"type": "reasoning", "id": f"r{n}", "summary": []}
                )
            )
    return items


@settings(max_examples=60, deadline=None)
@given(
    history=histories(),
    cuts=st.lists(st.integers(min_value=0, max_value=45), max_size=8),
    data=st.data(),
)
def test_every_step_converts_like_the_full_conversion(
    history: list[Item], cuts: list[int], data: st.DataObject
) -> None:
    for api, convert in (("chat", items_to_chat), ("responses", items_to_responses)):
        wire = WireCache()
        for cut in [*sorted(cuts), len(history)]:
            prompt = history[: max(1, cut)]
            if data.draw(st.booleans()):  # a compaction: a new head, the rest re-sent
                prompt = [Message(role="user", content="summary"), *prompt[len(prompt) // 2 :]]
            assert list(wire.convert(api, prompt)) == convert(prompt, lossy=True)
