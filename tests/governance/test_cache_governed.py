"""A governed session in cache-aware mode: between compactions every prompt extends the last."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_cache_prefix import COUNTER, TOOLS, sessions

from compactkit.formats.validate import validate_items
from compactkit.governance._cache import CACHE_TARGET, CACHE_TRIGGER
from compactkit.governance.policy import CompactPolicy, tokens_over
from compactkit.governance.projector import ContextProjector
from compactkit.items import FunctionCallOutput, Item, Message
from compactkit.memory.in_memory import InMemoryMemory
from compactkit.runtime.governor import Governor

BUDGET = 16_000  # a batch adds at most ~2k tokens: under the 15 % between trigger and budget


def renamed(item: Item, run: int) -> Item:
    """``item`` with call ids unique to ``run`` (a session never reuses one)."""
    call_id = getattr(item, "call_id", None)
    return item.model_copy(update={"call_id": f"r{run}_{call_id}"}) if call_id else item


def add(memory: InMemoryMemory, batch: list[Item]) -> None:
    for item in batch:
        if isinstance(item, FunctionCallOutput):
            memory.add_tool_output(item.call_id, item.output)
        elif isinstance(item, Message) and item.role in ("user", "system"):
            memory.add_user_input(item)
        else:
            memory.add_output_items([item])


@settings(deadline=None, max_examples=40)
@given(st.lists(sessions(), min_size=1, max_size=4), st.booleans())
def test_between_compactions_every_prompt_extends_the_previous_one(
    runs: list[list[list[Item]]], with_tools: bool
) -> None:
    governor = Governor(
        ContextProjector(COUNTER, budget=BUDGET, cache_aware=True),
        policy=CompactPolicy(
            tokens_over(int(CACHE_TRIGGER * BUDGET)),
            target=int(CACHE_TARGET * BUDGET),
            budget=BUDGET,
        ),
    )
    tools = TOOLS if with_tools else []
    memory = InMemoryMemory()
    previous: tuple[Item, ...] | None = None
    compactions = 0
    for run, batches in enumerate(runs):  # several sessions' worth of turns, one after another
        for number, batch in enumerate(batches):
            if number == 0 and previous is not None:
                batch = batch[1:]  # one system message is enough
            add(memory, [renamed(item, run) for item in batch])
            step = governor.step(memory, instructions="You are a coding agent.", tools=tools)
            assert step.projection.tokens <= BUDGET
            validate_items(step.items, format="chat")
            if step.compacted:
                compactions += 1
            elif previous is not None:
                assert step.items[: len(previous)] == previous  # only grew at its end
                assert step.projection.report.cached_prefix_tokens > 0
            previous = step.items
    assert compactions <= 1 + memory.version // 2  # sanity: compaction does not fire every step
