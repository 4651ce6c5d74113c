"""The shipped profiles are built without pydantic's validators (``budget._profiles_shipped``):
each must be exactly what validating its table makes, and a table that is not valid must still
be refused the way validation refuses it."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from compactkit.budget import BudgetPolicy, ModelProfile, ProfileRegistry, budget_for
from compactkit.budget._profiles_shipped import shipped, shipped_default_policy
from compactkit.budget.profiles import _bundled_profiles, _profile_tables
from compactkit.errors import ConfigError


def shipped_tables() -> list[dict[str, Any]]:
    text = (resources.files("compactkit.budget") / "profiles.toml").read_text("utf-8")
    return _profile_tables(text)


def same(made: BaseModel, validated: BaseModel) -> None:
    """Equal, of the same type, with the same fields set, field by field (nested too)."""
    assert type(made) is type(validated)
    assert made == validated
    assert made.model_fields_set == validated.model_fields_set
    for name in type(validated).model_fields:
        mine, theirs = getattr(made, name), getattr(validated, name)
        assert type(mine) is type(theirs), (name, mine, theirs)
        if isinstance(theirs, BaseModel):
            same(mine, theirs)


@pytest.mark.parametrize("index", range(len(shipped_tables())))
def test_every_shipped_profile_is_what_validating_its_table_makes(index: int) -> None:
    table = shipped_tables()[index]
    same(shipped(ModelProfile, table), ModelProfile(**table))
    same(_bundled_profiles()[index], ModelProfile(**table))


def test_the_default_policy_is_budget_policy() -> None:
    same(shipped_default_policy(), BudgetPolicy())
    same(ProfileRegistry().default_policy, BudgetPolicy())


def test_budgets_are_what_validating_them_makes() -> None:
    for model in ("gpt-4o", "claude-sonnet-4-5", "gpt-5", "qwen3-32b"):
        budget = budget_for(model)
        same(budget, type(budget)(**dict(budget)))
        assert budget.model_dump() == type(budget)(**dict(budget)).model_dump()


def test_a_wrong_profile_argument_is_still_refused() -> None:
    with pytest.raises(ConfigError):
        BudgetPolicy().resolve(
            ModelProfile(
                name="m", context_window=1000, max_output=100, encoding="o200k_base", source="x"
            ),
            model=5,
        )  # type: ignore[arg-type]


VALID = {
    "name": "m",
    "context_window": 1000,
    "max_output": 100,
    "encoding": "o200k_base",
    "source": "s",
}


@pytest.mark.parametrize(
    "change",
    [
        {"bogus": 1},  # a key the model does not have
        {"name": None},  # a required field missing (None drops it below)
        {"max_output": 5000},  # above the window: the model validator's check
        {"exact": True},  # exact needs message rules
        {"message_rules": {"tokens_per_message": 3, "typo": 1}},  # in a nested table
    ],
)
def test_a_table_that_is_not_valid_is_refused_as_validation_refuses_it(
    change: dict[str, Any],
) -> None:
    table = {key: value for key, value in {**VALID, **change}.items() if value is not None}
    with pytest.raises(ConfigError) as validated:
        ModelProfile(**table)
    with pytest.raises(ConfigError) as made:
        shipped(ModelProfile, table)
    assert str(made.value) == str(validated.value)


@settings(deadline=None, max_examples=60)
@given(
    window=st.integers(1, 10**6),
    share=st.floats(0.01, 1.0),
    chars=st.one_of(st.none(), st.integers(1, 8), st.floats(0.5, 8)),
    prices=st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {"input": st.integers(0, 100), "output": st.floats(0, 100), "source": st.just("p")}
        ),
    ),
)
def test_valid_tables_build_the_same_profile_either_way(
    window: int, share: float, chars: int | float | None, prices: dict[str, Any] | None
) -> None:
    table: dict[str, Any] = {"name": "m", "context_window": window, "source": "s"}
    table["max_output"] = max(1, int(window * share))
    table["encoding"] = "o200k_base" if chars is None else None
    if chars is not None:
        table["chars_per_token"] = chars
    if prices is not None:
        table["prices"] = prices
    table = {key: value for key, value in table.items() if value is not None}
    same(shipped(ModelProfile, table), ModelProfile(**table))
