"""Every ``for_model`` takes the same ``registry=``, refuses a misspelt option by naming the
close match, and reads a number as a token trigger the way ``BudgetPolicy`` does."""

from __future__ import annotations

import pytest

from compactkit import (
    BudgetPolicy,
    CompactPolicy,
    ConfigError,
    ContextProjector,
    MemorySnapshot,
    Message,
    ModelProfile,
)
from compactkit.budget import ProfileRegistry, budget_for
from compactkit.governance import PolicyState


@pytest.fixture
def registry() -> ProfileRegistry:
    made = ProfileRegistry.bundled()
    made.register(
        ModelProfile(
            name="acme-coder-*",
            provider="acme",
            context_window=65_536,
            max_output=8_192,
            chars_per_token=3.2,
            source="https://acme.example/docs/models",
        )
    )
    made.set_policy("acme-coder-*", BudgetPolicy(trigger=40_000, target=20_000))
    return made


def test_projector_for_a_model_only_a_registry_knows(registry: ProfileRegistry) -> None:
    projector = ContextProjector.for_model("acme-coder-2", registry=registry)
    assert projector.budget == budget_for("acme-coder-2", registry=registry).usable_input
    prompt = projector.project(MemorySnapshot(items=(Message(role="user", content="hi"),)))
    assert prompt.tokens <= prompt.budget
    with pytest.raises(ConfigError, match="acme-coder-2"):
        ContextProjector.for_model("acme-coder-2")  # not in the default registry


def test_policy_for_a_model_only_a_registry_knows(registry: ProfileRegistry) -> None:
    policy = CompactPolicy.for_model("acme-coder-2", registry=registry)
    assert policy.target_tokens() == 20_000
    assert policy.should_compact(PolicyState(tokens=40_001, items=3, budget=policy.budget))
    assert not policy.should_compact(PolicyState(tokens=39_000, items=3, budget=policy.budget))


def test_a_misspelt_option_names_the_close_match() -> None:
    with pytest.raises(ConfigError, match="did you mean 'mask_threshold'"):
        ContextProjector.for_model("gpt-4o", mask_treshold=100)


@pytest.mark.parametrize("trigger", [20_000, 0.5])
def test_a_number_is_a_trigger(trigger: int | float) -> None:
    policy = CompactPolicy.for_model("gpt-4o", trigger=trigger, target=8_000)
    budget = policy.budget
    assert budget is not None
    assert policy.should_compact(PolicyState(tokens=budget - 1, items=2, budget=budget))
    assert not policy.should_compact(PolicyState(tokens=7_000, items=2, budget=budget))
    direct = CompactPolicy(trigger, target=8_000, budget=budget)
    assert direct.should_compact(PolicyState(tokens=budget - 1, items=2, budget=budget))


def test_a_bool_is_not_a_trigger() -> None:
    with pytest.raises(ConfigError, match="trigger"):
        CompactPolicy.for_model("gpt-4o", trigger=True)


def test_every_for_model_names_the_close_match_of_a_misspelt_option() -> None:
    from compactkit import Governor

    with pytest.raises(ConfigError, match="did you mean 'target'"):
        CompactPolicy.for_model("gpt-4o", traget=8_000)
    with pytest.raises(ConfigError, match="did you mean 'compressor'"):
        Governor.for_model("gpt-4o", compresor=None)
