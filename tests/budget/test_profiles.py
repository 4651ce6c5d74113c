"""Model profiles, budget policies and the registry that matches them to model names."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compactkit.budget.profiles import (
    PROFILES_ENV,
    BudgetPolicy,
    MessageRules,
    ModelProfile,
    ProfileRegistry,
    budget_for,
    default_registry,
    get_profile,
)
from compactkit.errors import ConfigError


def profile(name: str, **fields: Any) -> ModelProfile:
    values: dict[str, Any] = {
        "context_window": 100_000,
        "max_output": 10_000,
        "chars_per_token": 4.0,
        "source": "test",
    }
    return ModelProfile(name=name, **{**values, **fields})


@pytest.fixture
def registry() -> ProfileRegistry:
    return ProfileRegistry.bundled()


@pytest.fixture
def fresh_default(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Rebuild the process-wide registry around the test, so env changes are seen and undone."""
    monkeypatch.delenv(PROFILES_ENV, raising=False)
    default_registry.cache_clear()
    yield
    default_registry.cache_clear()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "profiles.toml"
    path.write_text(text, encoding="utf-8")
    return path


# -- matching ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),  # its own entry beats the family
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),  # not gpt-4o: "-mini" is no snapshot
        ("GPT-4o", "gpt-4o"),
        ("openai/gpt-4o", "gpt-4o"),
        ("gpt-4-0613", "gpt-4"),
        ("gpt-4-1106-preview", "gpt-4-*-preview"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
        ("gpt-5-2025-08-07", "gpt-5"),
        ("o3-mini-2025-01-31", "o3-mini"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),  # not claude-sonnet-4
        ("claude-sonnet-4-0", "claude-sonnet-4"),
        ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
        ("claude-3-5-sonnet@20240620", "claude-3-5-sonnet"),
        ("models/gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("gemini-2.5-flash-lite-preview-06-17", "gemini-2.5-flash-lite"),
        ("meta-llama/Llama-3.3-70B-Instruct", "*llama*3.3*"),
        ("llama3.1:8b", "*llama*3.1*"),
        ("Qwen/Qwen3-8B", "*qwen3*"),
        ("mistral-small-latest", "mistral-small*"),
        ("mistral-small-2501", "mistral-small-2501"),
        ("mistral-large-2411", "mistral-large*"),
    ],
)
def test_model_names_find_their_family(
    registry: ProfileRegistry, model: str, expected: str
) -> None:
    assert registry.get(model).name == expected


def test_exact_name_beats_any_pattern() -> None:
    registry = ProfileRegistry(
        [profile("exact-model-long-name", max_output=1), profile("exact-model-long-name*")]
    )
    registry.register(profile("exact-model-long-nam?", max_output=2))
    assert registry.get("exact-model-long-name").max_output == 1
    assert registry.get("exact-model-long-names").max_output == 10_000


def test_most_specific_pattern_wins_and_ties_go_to_the_last_registered() -> None:
    registry = ProfileRegistry(
        [profile("acme-*", max_output=1), profile("acme-large-*", max_output=2)]
    )
    assert registry.get("acme-large-2").max_output == 2
    assert registry.get("acme-small-2").max_output == 1
    registry.register(profile("acme-large-?*", max_output=3))  # as specific, registered later
    assert registry.get("acme-large-2").max_output == 3


def test_a_plain_name_matches_snapshots_but_not_other_models() -> None:
    registry = ProfileRegistry([profile("acme")])
    for snapshot in ("acme-2025-01-31", "acme-20250131", "acme-0613", "acme-latest", "acme@v2"):
        assert registry.get(snapshot).name == "acme"
    for other in ("acme-mini", "acme-2", "acme.1", "acmex"):
        with pytest.raises(ConfigError):
            registry.get(other)


def test_unknown_model_error_names_it_and_the_fixes(registry: ProfileRegistry) -> None:
    with pytest.raises(ConfigError) as caught:
        registry.get("no-such-model-7")
    message = str(caught.value)
    assert "'no-such-model-7'" in message
    assert "register" in message
    assert "TOML" in message
    assert PROFILES_ENV in message
    assert "default" in message


def test_default_profile_serves_unknown_models(registry: ProfileRegistry) -> None:
    fallback = profile("my-fallback")
    registry.default = fallback
    assert registry.get("no-such-model-7") is fallback
    assert registry.get("gpt-4o").name == "gpt-4o"  # known models are unaffected


# -- budget arithmetic ------------------------------------------------------------------------


def test_gpt5_input_cap_limits_the_budget(registry: ProfileRegistry) -> None:
    gpt5 = registry.get("gpt-5")
    assert gpt5.input_cap == 272_000
    policy = BudgetPolicy(reserved_output=8192, safety_margin=1000)
    # min(400_000 - 8_192, 272_000) - 1_000: the cap, not the window, decides
    assert policy.usable_input_budget(gpt5) == 271_000
    assert policy.trigger_tokens(gpt5) == math.floor(271_000 * 0.8)
    assert policy.target_tokens(gpt5) == math.floor(271_000 * 0.5)


def test_gpt4o_budget_is_window_minus_reserve_minus_margin(registry: ProfileRegistry) -> None:
    gpt4o = registry.get("gpt-4o")
    policy = BudgetPolicy(reserved_output=4096, safety_margin=0.02)
    ceiling = 128_000 - 4096
    assert policy.usable_input_budget(gpt4o) == ceiling - math.ceil(ceiling * 0.02)


def test_default_policy_numbers(registry: ProfileRegistry) -> None:
    budget = budget_for("gpt-4o", registry=registry)
    assert budget.reserved_output == 8192  # min(max_output 16_384, 8_192, window / 4)
    assert budget.safety_margin == math.ceil((128_000 - 8192) * 0.02)  # exact: 2 %
    assert budget.usable_input == 128_000 - 8192 - budget.safety_margin
    assert budget.trigger_tokens == math.floor(budget.usable_input * 0.8)
    assert budget.target_tokens == math.floor(budget.usable_input * 0.5)
    small = budget_for("gpt-4", registry=registry)
    assert small.reserved_output == 8192 // 4  # a quarter of an 8k window
    claude = budget_for("claude-sonnet-4-5", registry=registry)
    assert claude.safety_margin == math.ceil((200_000 - 8192) * 0.10)  # estimate: 10 %


def test_absolute_trigger_and_target(registry: ProfileRegistry) -> None:
    budget = budget_for(
        "gpt-4o", registry=registry, policy=BudgetPolicy(trigger=90_000, target=40_000)
    )
    assert (budget.trigger_tokens, budget.target_tokens) == (90_000, 40_000)


def test_every_shipped_profile_is_cited_and_consistent(registry: ProfileRegistry) -> None:
    assert registry.profiles
    for shipped in registry.profiles:
        assert shipped.source.startswith("https://"), shipped.name
        assert 0 < shipped.max_output <= shipped.context_window, shipped.name
        if shipped.input_cap is not None:
            assert shipped.input_cap + shipped.max_output <= shipped.context_window, shipped.name
        if shipped.exact:
            assert shipped.provider == "openai" and shipped.encoding is not None
        else:
            assert shipped.encoding is not None or shipped.chars_per_token, shipped.name
        budget = BudgetPolicy().resolve(shipped)
        assert 0 < budget.target_tokens < budget.trigger_tokens <= budget.usable_input


def test_only_cookbook_verified_families_are_exact(registry: ProfileRegistry) -> None:
    exact = {p.name for p in registry.profiles if p.exact}
    assert exact == {
        "gpt-3.5-turbo",
        "gpt-3.5-turbo-0301",
        "gpt-4",
        "gpt-4o",
        "gpt-4o-2024-05-13",
        "gpt-4o-mini",
    }
    assert registry.get("gpt-3.5-turbo-0301").message_rules == MessageRules(
        tokens_per_message=4, tokens_per_name=-1, reply_priming=3
    )
    func_init = {}
    for name in ("gpt-4o", "gpt-4"):
        rules = registry.get(name).tool_rules
        assert rules is not None
        func_init[name] = rules.func_init
    assert func_init == {"gpt-4o": 7, "gpt-4": 10}


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"trigger": 1.5}, "trigger"),
        ({"trigger": 0.0}, "trigger"),
        ({"trigger": -100}, "trigger"),
        ({"target": True}, "target"),
        ({"safety_margin": -1}, "safety_margin"),
        ({"safety_margin": 1.0}, "safety_margin"),
        ({"reserved_output": -1}, "reserved_output"),
        ({"trigger": 0.5, "target": 0.6}, "target"),
        ({"trigger": 50_000, "target": 50_000}, "target"),
        ({"trigger_ratio": 0.5}, "trigger_ratio"),
    ],
)
def test_invalid_policies_are_rejected_naming_the_field(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        BudgetPolicy(**fields)


@pytest.mark.parametrize(
    ("policy", "named"),
    [
        (BudgetPolicy(reserved_output=20_000), "reserved_output"),  # > max_output 16_384
        (BudgetPolicy(safety_margin=200_000), "safety_margin"),  # budget <= 0
        (BudgetPolicy(trigger=500_000, target=0.5), "trigger"),  # above the usable input
        (BudgetPolicy(trigger=0.8, target=110_000), "target"),  # mixed kinds, not below
    ],
)
def test_policies_that_do_not_fit_the_profile_are_rejected(
    registry: ProfileRegistry, policy: BudgetPolicy, named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        policy.resolve(registry.get("gpt-4o"))


def test_reserve_that_fills_the_window_is_rejected() -> None:
    whole = profile("shared", context_window=4096, max_output=4096)
    with pytest.raises(ConfigError, match="reserved_output"):
        BudgetPolicy(reserved_output=4096).usable_input_budget(whole)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"context_window": 0}, "context_window"),
        ({"max_output": 200_000}, "max_output"),
        ({"input_cap": 100_000}, "input_cap"),
        ({"chars_per_token": None}, "chars_per_token"),
        ({"exact": True}, "exact"),
        ({"windw": 5}, "windw"),
    ],
)
def test_invalid_profiles_are_rejected_naming_the_field(fields: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        profile("broken", **fields)


# -- TOML -------------------------------------------------------------------------------------


def test_toml_extends_overrides_and_sets_policies(
    registry: ProfileRegistry, tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        """
        default = "local-llm"

        [[profile]]
        name = "local-llm*"
        provider = "self-hosted"
        context_window = 32768
        max_output = 4096
        chars_per_token = 3.0

        [[profile]]           # change one number of a shipped profile
        name = "*qwen3*"
        context_window = 131072

        [policies."o3*"]
        reserved_output = 25000

        [policies."*"]
        safety_margin = 0.03
        """,
    )
    registry.load_toml(path)

    local = registry.get("local-llm-v2")
    assert (local.context_window, local.provider, local.source) == (32768, "self-hosted", str(path))
    assert registry.default is local  # the default names the file's own profile
    assert registry.get("unknown-thing") is local

    qwen = registry.get("qwen3-32b")
    assert qwen.context_window == 131_072
    assert qwen.max_output == 32_768  # the rest of the shipped entry is kept
    assert qwen.source == str(path)

    assert registry.policy_for("o3-2025-04-16").reserved_output == 25_000
    assert registry.policy_for("o3-2025-04-16").safety_margin is None  # most specific only
    assert registry.policy_for("gpt-4o").safety_margin == 0.03
    # o3 counts approximately: the default margin is 5 % of min(window - reserve, no cap)
    assert registry.budget_for("o3").usable_input == 175_000 - math.ceil(175_000 * 0.05)


def test_toml_policy_tables_change_only_the_keys_they_give(
    registry: ProfileRegistry, tmp_path: Path
) -> None:
    registry.set_policy("gpt-4o*", BudgetPolicy(trigger=0.9, target=0.6))
    registry.load_toml(write(tmp_path, '[policies."gpt-4o*"]\ntarget = 0.4\n'))
    policy = registry.policy_for("gpt-4o")
    assert (policy.trigger, policy.target) == (0.9, 0.4)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            '[[profile]]\nname = "x"\ncontext_window = -1\nmax_output = 1\nchars_per_token = 3.0',
            "context_window",
        ),
        ('[[profile]]\nname = "x"\ncontext_window = 100\nchars_per_token = 3.0', "max_output"),
        ("[[profile]]\ncontext_window = 100", "name"),
        ('[policies."gpt-4o"]\ntrigger = 1.5', "trigger"),
        ('[policies."gpt-4o"]\ntriger = 0.5', "triger"),
        ('default = "nothing-like-this"', "default"),
        ("[profiles]\nname = 'typo'", "profiles"),
    ],
)
def test_invalid_toml_is_rejected_naming_the_file_and_value(
    registry: ProfileRegistry, tmp_path: Path, text: str, named: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=named) as caught:
        registry.load_toml(path)
    assert str(path) in str(caught.value)


def test_a_file_with_an_error_changes_nothing(registry: ProfileRegistry, tmp_path: Path) -> None:
    before = (registry.profiles, registry.policies, registry.default)
    path = write(
        tmp_path,
        'default = "no-such-profile"\n'
        '[[profile]]\nname = "fine"\nencoding = "o200k_base"\ncontext_window = 10\nmax_output = 1\n'
        '[policies."fine"]\ntrigger = 0.9\n',
    )
    with pytest.raises(ConfigError, match="no-such-profile"):
        registry.load_toml(path)
    assert (registry.profiles, registry.policies, registry.default) == before


def test_malformed_toml_is_a_config_error(registry: ProfileRegistry, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        registry.load_toml(write(tmp_path, "this is = not toml"))


def test_missing_toml_file_is_a_config_error(registry: ProfileRegistry, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        registry.load_toml(tmp_path / "missing.toml")


# -- the default registry ---------------------------------------------------------------------


@pytest.mark.usefixtures("fresh_default")
def test_environment_variable_file_is_loaded(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        '[[profile]]\nname = "env-model"\ncontext_window = 50000\nmax_output = 5000\n'
        "chars_per_token = 3.5\n",
    )
    monkeypatch.setenv(PROFILES_ENV, str(path))
    assert get_profile("env-model").context_window == 50_000
    assert budget_for("env-model").profile.name == "env-model"
    assert get_profile("gpt-4o").name == "gpt-4o"  # shipped profiles are still there


@pytest.mark.usefixtures("fresh_default")
def test_bad_environment_file_error_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(PROFILES_ENV, str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match=PROFILES_ENV):
        default_registry()


@pytest.mark.usefixtures("fresh_default")
def test_default_registry_without_environment_is_the_shipped_one() -> None:
    shipped = ProfileRegistry.bundled()
    assert default_registry().profiles == shipped.profiles
    assert default_registry() is default_registry()


def test_bundled_registries_are_independent() -> None:
    first = ProfileRegistry.bundled()
    first.register(profile("gpt-4o", context_window=1000, max_output=100))
    assert ProfileRegistry.bundled().get("gpt-4o").context_window == 128_000


# -- docs/models.md ---------------------------------------------------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "models.md"


def doc_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def test_doc_toml_example_loads(registry: ProfileRegistry, tmp_path: Path) -> None:
    (block,) = doc_blocks("toml")
    registry.load_toml(write(tmp_path, block))
    assert registry.get("local-llm-7b").provider == "self-hosted"
    assert registry.get("qwen3:32b").context_window == 131_072
    assert registry.policy_for("o3").reserved_output == 25_000


def test_doc_table_lists_every_shipped_profile(registry: ProfileRegistry) -> None:
    text = DOC.read_text(encoding="utf-8")
    missing = [p.name for p in registry.profiles if f"`{p.name}`" not in text]
    assert not missing
