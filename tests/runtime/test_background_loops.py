"""Background compaction inside the agent loop and the stateful compact_messages form."""

from __future__ import annotations

from runtime_support import make_agent, run

from compactkit import FunctionCall, FunctionCallOutput
from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors.window import WindowedCompressor
from compactkit.governance.policy import CompactPolicy, tokens_over
from compactkit.governance.projector import ContextProjector
from compactkit.integrations.messages import MessageCompactor
from compactkit.runtime.background import BackgroundCompaction
from compactkit.runtime.events import BackgroundCompactionEvent, Event, ProjectionEvent
from compactkit.runtime.governor import Governor
from compactkit.testing import FakeOpenAI, text, tool_call

COUNTER = TiktokenCounter("o200k_base")


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: Which file.
    """
    return " ".join(f"{path}{i % 9}" for i in range(150))


def test_the_agent_loop_compacts_in_the_background(mode: str) -> None:
    events: list[Event] = []
    governor = Governor(
        ContextProjector(COUNTER, budget=6000),
        policy=CompactPolicy(tokens_over(4000), target=1500, budget=6000),
        compressor=WindowedCompressor(max_tokens=1500, counter=COUNTER),
        background=BackgroundCompaction(soft=2500),
        on_event=events.append,
    )
    calls = [tool_call("read_file", {"path": f"f{n}"}) for n in range(30)]
    fake = FakeOpenAI([*calls, text("All read.")])
    agent = make_agent(fake, mode, tools=[read_file], governor=governor)
    session = agent.new_session()
    result = run(session, mode, "Read the thirty files.")
    assert result.output == "All read."
    assert governor.background is not None
    statuses = [e.status for e in events if isinstance(e, BackgroundCompactionEvent)]
    assert "started" in statuses and "applied" in statuses  # the hard threshold waits at worst
    assert governor.background.stats.discarded == 0  # nobody else compacted this memory
    items = session.memory.snapshot().items
    calls_kept = {i.call_id for i in items if isinstance(i, FunctionCall)}
    outputs_kept = {i.call_id for i in items if isinstance(i, FunctionCallOutput)}
    assert calls_kept == outputs_kept  # every pair whole after background applies
    projections = [e for e in events if isinstance(e, ProjectionEvent)]
    assert len(projections) == len(fake.requests) == 31
    assert all(e.tokens <= e.budget <= 6000 for e in projections)  # every prompt fit
    governor.background.close()


def test_message_compactor_takes_a_background_option() -> None:
    events: list[Event] = []
    compactor = MessageCompactor(
        "gpt-4o-mini",
        format="chat",
        policy=CompactPolicy(tokens_over(4000), target=1500, budget=6000),
        compressor=WindowedCompressor(max_tokens=1500, counter=COUNTER),
        projector=ContextProjector(COUNTER, budget=6000),
        background=BackgroundCompaction(soft=2500),
        on_event=events.append,
    )
    background = compactor.governor.background
    assert background is not None
    messages: list[dict[str, object]] = [{"role": "user", "content": "read everything"}]
    n = 0
    while not background.running(compactor._memory):
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": read_file(f"f{n}")},
        ]
        messages = compactor(messages).history
        n += 1
    assert background.join()
    result = compactor(messages)
    assert result.compacted and len(result.history) < len(messages)
    statuses = [e.status for e in events if isinstance(e, BackgroundCompactionEvent)]
    assert statuses == ["started", "applied"]
