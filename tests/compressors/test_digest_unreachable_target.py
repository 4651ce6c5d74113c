"""A target the kept part alone exceeds never costs the user's goal and rules (issue 25-class
defect: the target is a wish, the budget is the law)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors import DigestCompressor
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory import InMemoryMemory
from compactkit.runtime import Governor

COUNTER = TiktokenCounter("o200k_base")
TASK = "Summarize the quarterly report part by part. Never quote customer names (RULE-0A)."


def session(rounds: int, newest_lines: int) -> list[Item]:
    """A task with a rule, ``rounds`` reads, then the user's next input (the task is folded)
    and a newest read of ``newest_lines`` lines."""
    items: list[Item] = [Message(role="user", content=TASK)]
    for n in range(rounds):
        if n == rounds - 1:
            items.append(Message(role="user", content="Go on with the next part."))
        lines = newest_lines if n == rounds - 1 else 40
        body = "\n".join(
            f"src/pkg{n}/mod_{k}.py:{k}: value {k * 7919 % 10**6}" for k in range(lines)
        )
        items += [
            FunctionCall(call_id=f"c{n}", name="read", arguments=f'{{"n": {n}}}'),
            FunctionCallOutput(call_id=f"c{n}", output=f"{body}\nPART-{n:04d}"),
        ]
    return items


def test_the_pinned_example_keeps_goal_and_rule_over_an_unreachable_target() -> None:
    """The fault-suite shape: the newest read alone is over the 2,500-token target."""
    snapshot = MemorySnapshot.from_items(session(rounds=8, newest_lines=200))
    result = DigestCompressor(target_tokens=2_500, counter=COUNTER).compress(snapshot)
    sent = "\n".join(str(i.text) for i in result.snapshot.render_items() if hasattr(i, "text"))
    assert result.snapshot.summary is not None, "nothing was folded: the example proves nothing"
    assert "RULE-0A" in sent and "Never quote customer names" in sent
    assert "Summarize the quarterly report part by part." in sent
    assert "PART-0007" in sent  # the newest group stays verbatim
    assert result.stats.details["target_met"] is False  # the wish, honestly reported


def test_an_explicit_summary_cap_still_holds() -> None:
    """The user's own cap is not a wish: the summary stays within it, rules or not."""
    snapshot = MemorySnapshot.from_items(session(rounds=8, newest_lines=200))
    result = DigestCompressor(target_tokens=2_500, summary_cap_tokens=40, counter=COUNTER).compress(
        snapshot
    )
    summary = result.snapshot.summary or ""
    assert COUNTER.count_text(summary) <= 40
    assert "RULE-0A" not in summary


@settings(max_examples=15, deadline=None)
@given(
    rounds=st.integers(min_value=3, max_value=9),
    newest_lines=st.integers(min_value=10, max_value=260),
    target=st.integers(min_value=200, max_value=3_000),
)
def test_a_folded_goal_and_rule_always_reach_the_model(
    rounds: int, newest_lines: int, target: int
) -> None:
    snapshot = MemorySnapshot.from_items(session(rounds, newest_lines))
    result = DigestCompressor(target_tokens=target, counter=COUNTER).compress(snapshot)
    sent = "\n".join(str(i.text) for i in result.snapshot.render_items() if hasattr(i, "text"))
    assert "RULE-0A" in sent, (rounds, newest_lines, target)


def test_goals_and_rules_that_outgrow_the_summary_ceiling_never_break_the_budget() -> None:
    """Goals and rules are kept whole only within the summary's own ceiling: a long session
    gives a new task every turn, and kept whole they would outgrow any budget (the projection
    never cuts a summary: on the first version of the fix, every request failed with a
    ``BudgetError`` from turn 174 on at a 3,000-token budget)."""
    budget = 3_000
    governor = Governor.for_model("gpt-4o", budget=budget)
    memory = InMemoryMemory()
    for n in range(200):
        ask = f"Task {n}: fix module m{n % 37}.py, keep the API stable."
        memory.add_user_input(ask)
        call = FunctionCall(call_id=f"c{n}", name="read_file", arguments=f'{{"n": {n}}}')
        memory.add_output_items([call])
        memory.add_tool_output(f"c{n}", "\n".join(f"line {i}: v = compute({i})" for i in range(20)))
        memory.add_output_items([Message(role="assistant", content=f"Done with task {n}.")])
        step = governor.step(memory, instructions="You are a coding agent.")
        assert step.projection.tokens <= budget
        sent = [i.text for i in step.projection.items if isinstance(i, Message)]
        assert ask in sent  # the newest task is sent verbatim
