"""``CompactionEvent.cost.until_next_compaction``: the cost change of a compaction over the
requests until the next one, checked against the counterfactual — the same conversation
governed twice, with compaction and without, each request priced from the prompt it sent and
the prefix it shared with the previous one (what OpenAI's prefix cache bills)."""

from __future__ import annotations

import itertools

import pytest

from compactkit import Governor, InMemoryMemory, Message
from compactkit.budget import get_profile
from compactkit.governance.cost import CompactionCost, Horizon, request_cost, until_next_change
from compactkit.governance.projector import Projection
from compactkit.runtime.events import CompactionEvent

MODEL = "gpt-4o"
BUDGET = 20_000
INSTRUCTIONS = "You are careful."


def billed(projection: Projection) -> float:
    """The input cost of a request as the provider's prefix cache bills it."""
    profile = get_profile(MODEL)
    assert profile.prices is not None and profile.prompt_cache is not None
    cached = profile.prompt_cache.cached_tokens(projection.report.cached_prefix_tokens)
    return request_cost(
        profile.prices, profile.prompt_cache, tokens=projection.tokens, cached_tokens=cached
    )


def test_the_horizon_matches_the_counterfactual_run() -> None:
    governed = Governor.for_model(MODEL, budget=BUDGET)
    uncompacted = Governor.for_model(MODEL, budget=BUDGET, compaction=False)
    memory, twin = InMemoryMemory(), InMemoryMemory()
    steps: list[tuple[CompactionEvent | None, float]] = []
    for k in range(70):
        for m in (memory, twin):
            m.add_user_input(f"step {k}: " + "alpha beta " * 100)
            m.add_output_items([Message(role="assistant", content="gamma delta " * 150)])
        step = governed.step(memory, instructions=INSTRUCTIONS)
        other = uncompacted.step(twin, instructions=INSTRUCTIONS)
        events = [e for e in step.events if isinstance(e, CompactionEvent) and e.applied]
        steps.append(
            (events[0] if events else None, billed(step.projection) - billed(other.projection))
        )
    at = [k for k, (event, _) in enumerate(steps) if event is not None]
    assert len(at) >= 3
    for start, end in itertools.pairwise(at):
        event = steps[start][0]
        assert event is not None and event.cost is not None
        cost: CompactionCost = event.cost
        actual = sum(change for _, change in steps[start:end])
        assert cost.requests_until_next == end - start
        assert cost.until_next_compaction is not None
        assert cost.until_next_compaction == pytest.approx(actual, rel=0.2)
        # The next request alone pays the cache miss; the horizon shows the compaction pays off.
        assert cost.until_next_compaction < 0 < cost.next_request_change  # type: ignore[operator]
        assert cost.net_until_next == pytest.approx(cost.summarizer + cost.until_next_compaction)  # type: ignore[operator]


def test_no_horizon_without_growth_or_token_trigger() -> None:
    profile = get_profile(MODEL)
    assert profile.prices is not None
    governor = Governor.for_model(MODEL, budget=BUDGET)
    memory = InMemoryMemory()
    for k in range(30):  # over the target: the forced compaction folds
        memory.add_user_input(f"step {k}: " + "alpha beta " * 100)
        memory.add_output_items([Message(role="assistant", content="gamma delta " * 150)])
    step = governor.step(memory, force=True)  # the first step: no growth measured yet
    (event,) = [e for e in step.events if isinstance(e, CompactionEvent)]
    assert event.applied and event.cost is not None and event.cost.until_next_compaction is None
    assert event.cost.net_until_next is None
    # The arithmetic: a compaction right under the next trigger lasts one request.
    change, requests = until_next_change(
        profile.prices,
        profile.prompt_cache,
        tokens_before=9_000,
        tokens_after=8_000,
        horizon=Horizon(growth=500.0, next_at=8_000),
    )
    assert requests == 1
    assert change == pytest.approx(
        request_cost(profile.prices, profile.prompt_cache, tokens=8_000)
        - request_cost(
            profile.prices,
            profile.prompt_cache,
            tokens=9_000,
            cached_tokens=profile.prompt_cache.cached_tokens(9_000),  # type: ignore[union-attr]
        )
    )
