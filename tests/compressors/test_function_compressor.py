"""A plain function is a compressor wherever one is taken (``FunctionCompressor``): what it keeps
is what reaches the model, and what it returns is held to the memory's rules."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit import (
    Agent,
    ConfigError,
    FunctionCall,
    FunctionCallOutput,
    FunctionCompressor,
    Governor,
    InMemoryMemory,
    MemorySnapshot,
    Message,
    MessageCompactor,
    compact_messages,
)
from compactkit.budget.tokens import TiktokenCounter
from compactkit.evals import as_compressor
from compactkit.governance import CompactPolicy, ContextProjector, tokens_over
from compactkit.runtime.background import BackgroundCompaction
from compactkit.runtime.events import BackgroundCompactionEvent, Event
from compactkit.testing import FakeOpenAI, text

Messages = list[dict[str, Any]]


def read(n: int) -> Messages:
    """One tool round trip: the user's ask, the call and its (long) output."""
    call = {"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        {"role": "user", "content": f"Read part {n}."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": f"part {n}\n" + "x\n" * 400},
    ]


def session(turns: int) -> Messages:
    messages: Messages = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(turns):
        messages += read(n)
    return messages


def keep_last_three_turns(messages: Messages) -> Messages:
    starts = [i for i, m in enumerate(messages) if m["role"] == "user"]
    instructions = [m for m in messages[: starts[0]] if m["role"] == "system"]
    return [*instructions, *messages[starts[-3] :]]


def asks(messages: list[Any]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


def test_compact_messages_sends_what_the_function_kept() -> None:
    turn = compact_messages(session(40), model="gpt-4", compressor=keep_last_three_turns)
    assert turn.compacted
    assert turn.compaction is not None
    assert turn.compaction.stats.compressor == "keep_last_three_turns"
    assert turn.send[0] == {"role": "system", "content": "You are a coding agent."}
    assert asks(turn.send) == ["Read part 37.", "Read part 38.", "Read part 39."]
    assert [m.get("tool_call_id") for m in turn.send if m["role"] == "tool"] == [
        "c37",
        "c38",
        "c39",
    ]


def test_message_compactor_keeps_the_functions_history_between_calls() -> None:
    compactor = MessageCompactor(model="gpt-4", compressor=keep_last_three_turns)
    first = compactor(session(40))
    later = compactor([*first.history, *read(40)])
    assert asks(later.send)[-1] == "Read part 40."
    assert "Read part 0." not in asks(later.send)


def test_the_agent_sends_the_model_what_the_function_kept() -> None:
    def keep_last_two_asks(messages: Messages) -> Messages:
        starts = [i for i, m in enumerate(messages) if m["role"] == "user"]
        return messages[starts[-2] :] if len(starts) > 2 else messages

    fake = FakeOpenAI([text("ok " * 150) for _ in range(8)])
    agent = Agent(
        model="gpt-4", client=fake.client(), trigger=700, target=400, compressor=keep_last_two_asks
    )
    run = agent.new_session()
    for n in range(8):
        run.run(f"question {n}")
    sent = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "user"]
    assert sent[-1] == "question 7"
    assert "question 0" not in sent
    assert len(sent) < 8


def test_a_snapshot_function_keeps_the_summary_and_stored_items() -> None:
    def keep_last_two_items(snapshot: MemorySnapshot) -> MemorySnapshot:
        return snapshot.model_copy(update={"items": snapshot.items[-2:]})

    memory = InMemoryMemory()
    memory.add_user_input("first")
    memory.add_output_items([Message(role="assistant", content="one")])
    memory.add_user_input("second")
    memory.add_output_items([Message(role="assistant", content="two")])
    before = memory.snapshot()
    result = memory.compact(keep_last_two_items)
    assert result.outcome == "compacted"
    seqs = [i.seq for i in before.items]
    assert [i.seq for i in result.folded] == seqs[:2]
    assert [i.seq for i in memory.snapshot().items] == seqs[2:]  # stored items, same seqs
    assert [m.text for m in memory.snapshot().items if isinstance(m, Message)] == ["second", "two"]


def test_a_governor_takes_a_function_and_names_it_in_the_result() -> None:
    memory = InMemoryMemory()
    for message in session(40)[1:]:
        if message["role"] == "user":
            memory.add_user_input(message["content"])
        elif message["role"] == "assistant":
            memory.add_output_items([message])
        else:
            memory.add_tool_output(message["tool_call_id"], message["content"])
    governor = Governor.for_model("gpt-4", compressor=keep_last_three_turns)
    step = governor.step(memory, instructions="You are a coding agent.")
    assert step.compaction is not None and step.compaction.outcome == "compacted"
    texts = [i.text for i in step.projection.items if isinstance(i, Message) and i.role == "user"]
    assert texts == ["Read part 37.", "Read part 38.", "Read part 39."]


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (lambda messages: "done", "must return a list of messages, got str"),
        (lambda messages: [object()], "returned a object among its messages"),
        (lambda messages: [{"role": "nobody"}], "not Chat Completions"),
        (lambda messages: [messages[-1]], "tool output of call_id='c1' without its call"),
        (lambda messages: messages[:-1], "kept the call call_id='c1' but dropped its output"),
    ],
)
def test_an_unusable_return_is_a_config_error_and_changes_nothing(
    function: Any, message: str
) -> None:
    memory = InMemoryMemory()
    memory.add_user_input("read it")
    memory.add_output_items([FunctionCall(call_id="c1", name="read", arguments="{}")])
    memory.add_tool_output("c1", "the file")
    before = memory.snapshot()
    with pytest.raises(ConfigError, match=message):
        memory.compact(function)
    assert memory.snapshot() == before


def test_a_dropped_pinned_item_is_a_config_error() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("never forget: use tabs")
    memory.add_user_input("later")
    memory.pin(memory.snapshot().items[0].seq)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="dropped the pinned message"):
        memory.compact(lambda messages: messages[-1:])
    assert memory.compact(lambda messages: messages).outcome == "unchanged"


def test_a_function_that_raises_is_a_failed_result_that_loses_nothing() -> None:
    def broken(messages: Messages) -> Messages:
        raise RuntimeError("boom")

    memory = InMemoryMemory()
    memory.add_user_input("hello")
    result = FunctionCompressor(broken).compress(memory.snapshot())
    assert result.outcome == "failed"
    assert result.error == "broken raised RuntimeError: boom"
    assert result.snapshot == memory.snapshot()


def test_what_is_not_a_compressor_is_refused_where_it_is_configured() -> None:
    with pytest.raises(ConfigError, match="or be a function messages -> messages"):
        Governor.for_model("gpt-4", compressor=42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="takes a function, got int"):
        FunctionCompressor(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="takes must be 'messages' or 'snapshot'"):
        FunctionCompressor(len, takes="items")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must return a MemorySnapshot, got list"):
        FunctionCompressor(lambda s: [], takes="snapshot").compress(MemorySnapshot())


def test_the_evals_score_a_function_as_the_same_compressor() -> None:
    factory = as_compressor(keep_last_three_turns, name="mine")
    compressor = factory(None)  # type: ignore[arg-type]
    assert isinstance(compressor, FunctionCompressor)
    assert compressor.name == "mine"


# A history of turns, each a user ask and either a reply or a call with its output.
turns = st.lists(st.tuples(st.text(min_size=1, max_size=8), st.booleans()), min_size=1, max_size=8)


@settings(deadline=None, max_examples=60)
@given(turns=turns, keep=st.integers(min_value=0, max_value=40), pin=st.integers(0, 40))
def test_any_slice_either_applies_by_the_rules_or_is_refused(
    turns: list[tuple[str, bool]], keep: int, pin: int
) -> None:
    memory = InMemoryMemory()
    for n, (ask, calls) in enumerate(turns):
        memory.add_user_input(ask)
        if calls:
            memory.add_output_items([FunctionCall(call_id=f"c{n}", name="f", arguments="{}")])
            memory.add_tool_output(f"c{n}", f"out {n}")
        else:
            memory.add_output_items([Message(role="assistant", content=f"reply {n}")])
    before = memory.snapshot()
    if pin < len(before.items):
        memory.pin(before.items[pin].seq)  # type: ignore[arg-type]
        before = memory.snapshot()
    try:
        memory.compact(lambda messages: messages[-keep:] if keep else [])
    except ConfigError:
        assert memory.snapshot() == before  # refused: nothing changed
        return
    after = memory.snapshot().items
    stored = {i.seq: i for i in before.items}
    assert all(stored[i.seq] == i for i in after)  # kept items are the stored ones
    assert all(i.seq in {a.seq for a in after} for i in before.items if i.pinned)
    calls = {i.call_id for i in after if isinstance(i, FunctionCall)}
    outputs = {i.call_id for i in after if isinstance(i, FunctionCallOutput)}
    assert calls == outputs  # every call with its output, no orphan


def filled_memory(turns: int = 40) -> InMemoryMemory:
    memory = InMemoryMemory()
    for message in session(turns)[1:]:
        if message["role"] == "user":
            memory.add_user_input(message["content"])
        elif message["role"] == "assistant":
            memory.add_output_items([message])
        else:
            memory.add_tool_output(message["tool_call_id"], message["content"])
    return memory


def answers_text(messages: Messages) -> str:
    return "done"


def test_a_governed_step_raises_a_functions_config_error_with_the_memory_unchanged() -> None:
    """A function that returns no messages is the user's to fix: the step raises it (retrying or
    falling back every step would hide it while the context grows), and nothing is stored."""
    memory = filled_memory()
    before = memory.snapshot()
    governor = Governor.for_model("gpt-4", compressor=answers_text)
    with pytest.raises(ConfigError, match="answers_text must return a list of messages, got str"):
        governor.step(memory, instructions="You are a coding agent.")
    with pytest.raises(ConfigError, match="must return a list of messages"):
        asyncio.run(governor.astep(memory, instructions="You are a coding agent."))
    assert memory.snapshot() == before


def test_the_agent_raises_a_functions_config_error_at_the_first_compaction() -> None:
    fake = FakeOpenAI([text("ok " * 150) for _ in range(8)])
    agent = Agent(
        model="gpt-4", client=fake.client(), trigger=700, target=400, compressor=answers_text
    )
    run = agent.new_session()
    with pytest.raises(ConfigError, match="answers_text must return a list of messages"):
        for n in range(8):
            run.run(f"question {n}")
    sent = len(fake.requests)
    assert 0 < sent < 8  # raised at the step that would compact, before its request
    asked = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "user"]
    assert asked == [f"question {n}" for n in range(sent)]  # nothing was dropped before


def test_a_background_job_raises_a_functions_config_error_at_the_next_step() -> None:
    events: list[Event] = []
    budget = 6000
    governor = Governor(
        ContextProjector(TiktokenCounter("o200k_base"), budget=budget),
        policy=CompactPolicy(tokens_over(4000), target=1500, budget=budget),
        background=BackgroundCompaction(soft=2500, compressor=FunctionCompressor(answers_text)),
        on_event=events.append,
    )
    memory = InMemoryMemory()
    memory.add_user_input("Read the parts.")
    n = 0
    assert governor.background is not None
    while not governor.background.running(memory):
        memory.add_output_items([FunctionCall(call_id=f"c{n}", name="read", arguments="{}")])
        memory.add_tool_output(f"c{n}", " ".join(f"w{i % 9}" for i in range(100)))
        governor.step(memory)
        n += 1
    governor.background.join(memory)
    before = memory.snapshot()
    with pytest.raises(ConfigError, match="answers_text must return a list of messages"):
        governor.step(memory)
    assert memory.snapshot() == before
    failed = [e for e in events if isinstance(e, BackgroundCompactionEvent)][-1]
    assert failed.status == "failed" and "ConfigError" in (failed.error or "")
