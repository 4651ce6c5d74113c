"""A model defined in a TOML file, reached the ways a newcomer tries first."""

from __future__ import annotations

from pathlib import Path

import pytest

from compactkit import ConfigError, Governor, counter_for
from compactkit.budget import ProfileRegistry, budget_for

TOML = (
    '[[profile]]\nname = "local-llm*"\ncontext_window = 32768\nmax_output = 4096\n'
    "chars_per_token = 3.0\n"
)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    file = tmp_path / "models.toml"
    file.write_text(TOML, encoding="utf-8")
    return file


def test_from_toml_and_chained_load_are_the_registry(path: Path) -> None:
    for registry in (ProfileRegistry.from_toml(path), ProfileRegistry.bundled().load_toml(path)):
        assert isinstance(registry, ProfileRegistry)
        assert budget_for("local-llm-7b", registry=registry).profile.context_window == 32768
        assert budget_for("gpt-4o", registry=registry).profile.context_window == 128_000
        assert Governor.for_model("local-llm-7b", registry=registry).counter.encoding_name is None


def test_a_path_where_a_registry_goes_says_how_to_read_it(path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ProfileRegistry\.from_toml\(path\)"):
        ProfileRegistry(str(path))  # type: ignore[arg-type]
    for wrong in (str(path), path):
        with pytest.raises(ConfigError, match=r"registry must be a ProfileRegistry.*from_toml"):
            budget_for("local-llm-7b", registry=wrong)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"registry must be a ProfileRegistry"):
            counter_for("local-llm-7b", registry=wrong)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"registry must be a ProfileRegistry"):
            Governor.for_model("local-llm-7b", registry=wrong)  # type: ignore[arg-type]
