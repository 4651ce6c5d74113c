"""CompactPolicy and its triggers: composition, hysteresis, model defaults, measuring."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.profiles import budget_for
from compactkit.budget.tokens import TiktokenCounter
from compactkit.errors import ConfigError
from compactkit.governance.policy import (
    CompactPolicy,
    PolicyState,
    all_of,
    any_of,
    every_turns,
    items_over,
    ratio_over,
    tokens_over,
    usage_over,
)
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool
from compactkit.items.snapshot import MemorySnapshot

COUNTER = TiktokenCounter("o200k_base")
TOOLS = [Tool(name="grep", description="Search files.", parameters={"type": "object"})]


def state(**fields: object) -> PolicyState:
    values: dict[str, object] = {"tokens": 0, "items": 0}
    values.update(fields)
    return PolicyState(**values)  # type: ignore[arg-type]


def test_each_trigger_reads_its_field_of_the_state() -> None:
    assert tokens_over(100)(state(tokens=101)) and not tokens_over(100)(state(tokens=100))
    assert items_over(5)(state(items=6)) and not items_over(5)(state(items=5))
    assert ratio_over(0.8)(state(tokens=81, budget=100))
    assert not ratio_over(0.8)(state(tokens=80, budget=100))
    assert every_turns(3)(state(turns_since_compaction=3))
    assert not every_turns(3)(state(turns_since_compaction=2))
    assert usage_over(1000)(state(last_usage=1001))
    assert not usage_over(1000)(state(last_usage=None))


def test_triggers_compose_flat_with_or_and_and_and_accept_bare_callables() -> None:
    late = lambda s: s.turn > 10  # noqa: E731
    either = tokens_over(100) | items_over(5) | late
    assert isinstance(either, any_of) and len(either.triggers) == 3
    both = tokens_over(100) & items_over(5) & ratio_over(0.5)
    assert isinstance(both, all_of) and len(both.triggers) == 3
    assert either(state(turn=11)) and either(state(items=6)) and not either(state())
    assert not both(state(tokens=101, items=6, budget=1000))
    assert both(state(tokens=600, items=6, budget=1000))
    mixed = late | (tokens_over(100) & items_over(5))  # callable on the left
    assert isinstance(mixed, any_of) and isinstance(mixed.triggers[1], all_of)
    assert mixed(state(tokens=101, items=6)) and not mixed(state(tokens=101))
    assert repr(tokens_over(100) | ratio_over(0.8)) == "(tokens_over(100) | ratio_over(0.8))"


@settings(deadline=None)
@given(
    st.lists(st.integers(0, 200), min_size=1, max_size=5),
    st.integers(0, 200),
    st.booleans(),
)
def test_combinators_are_any_and_all(thresholds: list[int], tokens: int, use_or: bool) -> None:
    triggers = [tokens_over(n) for n in thresholds]
    combined = triggers[0]
    for trigger in triggers[1:]:
        combined = (combined | trigger) if use_or else (combined & trigger)
    fired = [tokens > n for n in thresholds]
    assert combined(state(tokens=tokens)) == (any(fired) if use_or else all(fired))


def test_bad_triggers_are_config_errors() -> None:
    for bad in (lambda: tokens_over(-1), lambda: ratio_over(0), lambda: ratio_over(1.5)):
        with pytest.raises(ConfigError):
            bad()
    with pytest.raises(ConfigError):
        every_turns(0)
    with pytest.raises(ConfigError):
        any_of()
    with pytest.raises(ConfigError, match="budget"):
        ratio_over(0.8)(state(tokens=10))


def test_a_ratio_trigger_without_a_budget_is_refused_when_the_policy_is_built() -> None:
    # Used to build fine and raise from inside a memory write, after the write was stored.
    for trigger in (
        ratio_over(0.8),
        ratio_over(0.8) | items_over(500),
        tokens_over(9) & ratio_over(0.5),
    ):
        with pytest.raises(ConfigError, match=r"ratio_over\(0\.\d\).*budget="):
            CompactPolicy(trigger, target=5)
    assert CompactPolicy(ratio_over(0.8) | items_over(500), target=5, budget=100).budget == 100


def test_measure_refuses_a_memory_or_a_list_of_items() -> None:
    # A memory's items hold the rendered summary message: measuring them as a snapshot (or the
    # memory itself, whose .items and .summary both exist) would count the summary twice.
    from compactkit.memory import InMemoryMemory

    memory = InMemoryMemory()
    memory.add_user_input("hello")
    policy = CompactPolicy(tokens_over(1000), target=500)
    with pytest.raises(ConfigError, match=r"memory\.snapshot\(\)"):
        policy.measure(memory, COUNTER)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="MemorySnapshot"):
        policy.measure(memory.items, COUNTER)  # type: ignore[arg-type]


def test_should_compact_fires_on_the_trigger_or_a_manual_request() -> None:
    policy = CompactPolicy(tokens_over(1000), target=500)
    assert policy.should_compact(state(tokens=1001))
    assert not policy.should_compact(state(tokens=900))
    assert policy.should_compact(state(tokens=10, forced=True))
    manual = CompactPolicy(None, target=500)
    assert not manual.should_compact(state(tokens=10**9))
    assert manual.should_compact(state(forced=True))


def test_the_target_must_sit_below_the_trigger() -> None:
    with pytest.raises(ConfigError, match="fire again"):
        CompactPolicy(tokens_over(1000), target=1000)
    with pytest.raises(ConfigError, match="fire again"):
        CompactPolicy(ratio_over(0.5) | items_over(10), target=0.6, budget=10_000)
    with pytest.raises(ConfigError, match="budget"):
        CompactPolicy(items_over(10), target=0.5)  # a ratio target needs the budget
    with pytest.raises(ConfigError):
        CompactPolicy(tokens_over(10), target=0)
    policy = CompactPolicy(ratio_over(0.8), target=0.5, budget=10_000)
    assert policy.target_tokens() == 5000


def test_for_model_takes_its_numbers_from_the_budget_policy() -> None:
    budget = budget_for("gpt-4o")
    policy = CompactPolicy.for_model("gpt-4o")
    assert policy.budget == budget.usable_input and policy.model == "gpt-4o"
    assert policy.target_tokens() == budget.target_tokens
    assert policy.should_compact(state(tokens=budget.trigger_tokens + 1))
    assert not policy.should_compact(state(tokens=budget.trigger_tokens))
    custom = CompactPolicy.for_model("gpt-4o", trigger=ratio_over(0.9) | items_over(400))
    assert custom.should_compact(state(items=401, budget=custom.budget))


def history(n: int) -> list[Item]:
    items: list[Item] = [Message(role="user", content="find the bug")]
    for i in range(n):
        items += [
            FunctionCall(call_id=f"c{i}", name="grep", arguments='{"q": "bug"}'),
            FunctionCallOutput(call_id=f"c{i}", output=f"match {i} " * 20),
        ]
    return items


def test_measure_counts_the_whole_unprojected_request_incrementally() -> None:
    policy = CompactPolicy(tokens_over(10_000), target=5000, budget=20_000, model="gpt-4o")
    items = history(30)
    for cut in (5, 20, 61, 61):
        snapshot = MemorySnapshot.of(items[:cut], summary="We searched.")
        measured = policy.measure(
            snapshot, COUNTER, instructions="Be careful.", tools=TOOLS, turn=7, last_usage=99
        )
        rendered = [Message(role="system", content="Be careful."), *snapshot.render_items()]
        assert measured.tokens == COUNTER.count(rendered, tools=TOOLS).tokens
        assert (measured.items, measured.budget, measured.model) == (cut, 20_000, "gpt-4o")
        assert (measured.turn, measured.last_usage) == (7, 99)
    # an old item replaced in place (same length) is noticed
    edited = [*items[:3], items[3].model_copy(update={"output": "short"}), *items[4:]]
    measured = policy.measure(MemorySnapshot.of(edited), COUNTER)
    assert measured.tokens == COUNTER.count(edited).tokens


def test_as_trigger_adapts_the_policy_to_a_memory_write_path() -> None:
    policy = CompactPolicy(tokens_over(500) | items_over(40), target=200)
    trigger = policy.as_trigger(COUNTER)
    assert not trigger(MemorySnapshot.of(history(2)))
    assert trigger(MemorySnapshot.of(history(25)))  # over 40 items and 500 tokens
