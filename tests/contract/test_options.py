"""One vocabulary of options (contract, "Options"): every entry point takes ``budget=``,
``model=``, ``registry=``, ``trigger=``, ``target=``, ``compressor=`` and ``summary_role=`` with
one meaning; a misspelt option is a ``ConfigError`` naming the nearest one; a budget reaches the
compaction policy, not only the projection."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from agents import SQLiteSession
from contract_support import body_items
from runtime_support import NO_WAIT

from compactkit import Agent
from compactkit.budget import counter_for
from compactkit.budget.profiles import default_registry
from compactkit.compressors import LadderCompressor
from compactkit.errors import ConfigError
from compactkit.integrations import MessageCompactor, compact_messages
from compactkit.integrations.langchain import CompactkitMiddleware
from compactkit.integrations.openai_agents import CompactkitInputFilter, CompactkitSession
from compactkit.integrations.pydantic_ai import CompactkitCapability
from compactkit.items.snapshot import is_summary_message
from compactkit.runtime.governor import Governor
from compactkit.testing import FakeOpenAI, text, tool_call

MODEL = "gpt-4o"

ENTRY_POINTS: dict[str, Callable[..., Any]] = {
    "Agent": lambda **o: Agent(o.pop("model"), **o),
    "Governor.for_model": lambda **o: Governor.for_model(o.pop("model"), **o),
    "MessageCompactor": lambda **o: MessageCompactor(o.pop("model"), **o),
    "compact_messages": lambda **o: compact_messages([{"role": "user", "content": "hi"}], **o),
    "CompactkitInputFilter": lambda **o: CompactkitInputFilter(o.pop("model"), **o),
    "CompactkitSession": lambda **o: CompactkitSession(SQLiteSession("s"), **o),
    "CompactkitMiddleware": lambda **o: CompactkitMiddleware(o.pop("model"), mode="compact", **o),
    "CompactkitCapability": lambda **o: CompactkitCapability(o.pop("model"), mode="compact", **o),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_entry_point_takes_the_shared_options(entry: str) -> None:
    ENTRY_POINTS[entry](
        model=MODEL,
        budget=6_000,
        trigger=4_000,
        target=2_000,
        registry=default_registry(),
        compressor=LadderCompressor(2_000, counter=counter_for(MODEL)),
        summary_role="user",
    )
    ENTRY_POINTS[entry](model=MODEL, trigger=4_000)  # a target is derived below the trigger


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_misspelt_option_names_the_nearest_one(entry: str) -> None:
    with pytest.raises(ConfigError, match=r"'budgte' \(did you mean 'budget'\?\)"):
        ENTRY_POINTS[entry](model=MODEL, budgte=6_000)
    with pytest.raises(ConfigError, match=r"did you mean 'trigger'"):
        ENTRY_POINTS[entry](model=MODEL, triger=4_000)


def test_a_budget_reaches_the_policy_so_history_is_compacted_not_masked() -> None:
    """budget=6,000 on a 128k model: requests stay under 6,000 because compaction fires at
    its share of 6,000 (a summary is sent), not because the prompt masks most outputs."""

    def read(n: int) -> str:
        """Read one part."""
        return f"part {n}: " + " ".join(f"v{n}_{k}" for k in range(300))

    fake = FakeOpenAI([tool_call("read", {"n": n}) for n in range(40)] + [text("done")])
    agent = Agent(MODEL, fake.client(), tools=[read], budget=6_000, max_steps=50, retry=NO_WAIT)
    agent.new_session().run("Read parts 0 to 39.")
    counter = counter_for(MODEL)
    most_masked = 0
    summaries = 0
    for body in fake.requests:
        items, tools = body_items(body)
        assert counter.count(items, tools=tools).tokens <= 6_000
        summaries += any(is_summary_message(item) for item in items)
        most_masked = max(most_masked, sum("[masked output of " in str(i) for i in items))
    assert summaries > 0  # compaction happened
    assert most_masked <= 5  # (on main: the prompt masked up to 37 outputs, no compaction)


def test_a_budget_given_to_compact_messages_compacts_the_history() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read every part."}]
    compacted = False
    for n in range(30):
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "read", "arguments": f'{{"n": {n}}}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": "x " * 400 + f"PART-{n}"},
        ]
        turn = compact_messages(messages, model=MODEL, budget=6_000)
        assert turn.tokens <= 6_000
        compacted = compacted or turn.compacted
        messages = turn.history
    assert compacted
