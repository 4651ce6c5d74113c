"""Model prices (issue 29): bundled where published, overridable in TOML, exact arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from compactkit.budget import Prices, ProfileRegistry, budget_for
from compactkit.errors import ConfigError


def test_bundled_prices_are_the_published_ones() -> None:
    prices = budget_for("gpt-4o").profile.prices
    assert prices is not None
    assert (prices.input, prices.cached_input, prices.output) == (2.5, 1.25, 10.0)
    mini = budget_for("gpt-4o-mini-2024-07-18").profile.prices  # a dated snapshot matches
    assert mini is not None and (mini.input, mini.output) == (0.15, 0.6)
    assert budget_for("gpt-4o-2024-05-13").profile.prices is None  # priced apart: left unset


def test_cost_is_exact() -> None:
    prices = Prices(input=3, output=15, cached_input=0.3, cache_write=3.75, source="test")
    cost = prices.cost(input=1_000_000, output=200_000, cached_input=500_000, cache_write=40_000)
    assert cost == pytest.approx(3 + 3 + 0.15 + 0.15, abs=1e-12)
    assert prices.cost() == 0.0


def test_unknown_prices_are_refused_not_guessed() -> None:
    prices = Prices(input=1, output=2, source="test")
    assert prices.cost(input=10) == pytest.approx(1e-5, abs=1e-15)
    with pytest.raises(ConfigError, match="no cached_input price is known"):
        prices.cost(cached_input=10)
    with pytest.raises(ConfigError, match="output must be a token count"):
        prices.cost(output=-1)


def test_prices_are_overridden_in_toml(tmp_path: Path) -> None:
    path = tmp_path / "profiles.toml"
    path.write_text(
        '[[profile]]\nname = "gpt-4o"\n'
        'prices = { input = 2.0, output = 8.0, source = "our contract" }\n',
        encoding="utf-8",
    )
    registry = ProfileRegistry.from_toml(path)
    prices = budget_for("gpt-4o", registry=registry).profile.prices
    assert prices is not None and (prices.input, prices.output) == (2.0, 8.0)
    assert prices.cached_input is None
    path.write_text(
        '[[profile]]\nname = "gpt-4o"\nprices = { input = -1, output = 8.0, source = "x" }\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="input"):
        ProfileRegistry.from_toml(path)
