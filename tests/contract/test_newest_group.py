"""The newest group reaches the model verbatim (contract row b), measured at the HTTP boundary.

The failure this holds: an ``Agent`` on gpt-4 (8,192-token window) in a 30-step tool loop with
~1,100-token outputs folded the call it had just made, and its output, into the summary — the
model never saw the result it asked for. And an output larger than the whole budget is cut with
a marker saying what was cut and how to see it, and is still the last thing sent.
"""

from __future__ import annotations

import random

import pytest
from contract_support import newest_tool_output, request_tokens
from runtime_support import NO_WAIT

from compactkit import Agent
from compactkit.budget import counter_for
from compactkit.testing import FakeOpenAI, text, tool_call

MODEL = "gpt-4"
COUNTER = counter_for(MODEL)
RULES = " ".join(f"Rule {n}: never touch file_{n}.py." for n in range(100))  # a long task


def part(n: int, tokens: int = 1_100) -> str:
    """A tool output of about ``tokens`` tokens of varied facts, ending in a unique marker."""
    rng = random.Random(n)
    lines: list[str] = []
    size = 0
    while size < tokens:  # (per line: close enough, and linear)
        k = rng.randrange(10**6)
        lines.append(f"src/pkg{k % 97}/mod_{k}.py:{k % 400}: ValueError: bad value {k}")
        size += COUNTER.count_text(lines[-1]) + 1
    return "\n".join(lines) + f"\nPART-{n:03d}"


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_newest_call_and_its_output_are_sent_verbatim_every_step(api: str) -> None:
    def read_part(n: int) -> str:
        """Read one part."""
        return part(n)

    fake = FakeOpenAI(
        [tool_call("read_part", {"n": n}) for n in range(30)] + [text("done")], model=MODEL
    )
    agent = Agent(
        MODEL,
        fake.client(),
        tools=[read_part],
        instructions="Be brief.",
        api=api,
        max_steps=40,
        retry=NO_WAIT,
    )
    agent.new_session().run("Read parts 0 to 29, one at a time. " + RULES)
    assert len(fake.requests) == 31
    for number, body in enumerate(fake.requests[1:], 1):
        call_id, output = newest_tool_output(body)
        assert call_id == f"call_{number}", f"request {number}: the newest call is missing"
        assert output == part(number - 1), f"request {number}: the newest output was changed"
        assert request_tokens(body, MODEL) <= agent.governor.projector.budget


def test_an_output_larger_than_the_budget_is_cut_with_a_marker_and_sent_last() -> None:
    huge = part(99, tokens=9_000)  # more than gpt-4's whole window

    def read_all() -> str:
        """Read everything."""
        return huge

    fake = FakeOpenAI([tool_call("read_all"), text("done")], model=MODEL)
    agent = Agent(MODEL, fake.client(), tools=[read_all], retry=NO_WAIT)
    agent.new_session().run("Read everything.")
    call_id, sent = newest_tool_output(fake.requests[1])
    assert call_id == "call_1"
    assert "[cut by compactkit: " in sent and "call_id call_1" in sent
    assert "Call the tool again for a narrower part" in sent
    assert sent.startswith(huge[:200]) and sent.endswith("PART-099")  # head and end kept
    assert request_tokens(fake.requests[1], MODEL) <= agent.governor.projector.budget
