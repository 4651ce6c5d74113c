"""Token budgets per model: what a model can take, and how much of it to use.

Three objects, three jobs:

- ``ModelProfile`` — facts about a model (window, output cap, input cap, tokenizer, formatting
  rules, and where those numbers come from). compactkit ships profiles for the OpenAI, Anthropic,
  Gemini, Llama, Qwen and Mistral families in ``compactkit/budget/profiles.toml``.
- ``BudgetPolicy`` — the user's choices for a model (reserved output, safety margin, compaction
  trigger and target). Its arithmetic turns a profile into a ``Budget``::

      usable input = min(window - reserved output, input cap) - safety margin

- ``ProfileRegistry`` — finds the profile and policy for a model name. An exact name beats any
  pattern; among patterns the most specific wins; a plain name also matches its dated snapshots
  (``gpt-4o`` matches ``gpt-4o-2024-08-06``). Extend it in code (``register``, ``set_policy``) or
  from a TOML file (``load_toml``; the default registry also reads the file named by the
  ``COMPACTKIT_PROFILES`` environment variable). ``docs/models.md`` describes the format.
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from compactkit.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

__all__ = [
    "DEFAULT_RESERVED_OUTPUT",
    "PROFILES_ENV",
    "Budget",
    "BudgetPolicy",
    "Counting",
    "MessageRules",
    "ModelProfile",
    "ProfileRegistry",
    "ToolSchemaRules",
    "budget_for",
    "default_registry",
    "get_profile",
]

Counting: TypeAlias = Literal["exact", "approximate", "estimate"]
"""How far a model's token counts can be trusted (see ``ModelProfile.counting``)."""

PROFILES_ENV = "COMPACTKIT_PROFILES"
"""The environment variable naming a TOML file that the default registry loads on first use."""

DEFAULT_RESERVED_OUTPUT = 8192
"""The most output a policy reserves by default (see ``BudgetPolicy.reserved_output``)."""

# Default safety margins, as a share of the input ceiling: counts verified against the API need
# little; a real tokenizer with unverified rules a bit more; a characters-per-token estimate most.
_MARGIN_EXACT, _MARGIN_APPROXIMATE, _MARGIN_ESTIMATE = 0.02, 0.05, 0.10

# What may follow a plain profile name for a model to be one of its snapshots or aliases:
# gpt-4o-2024-08-06, claude-sonnet-4-5-20250929, gpt-4-0613, gemini-1.5-pro-002,
# mistral-large-2411, claude-sonnet-4-0, *-latest, *-preview-06-05, *-exp, claude-3-5-sonnet@2024…
_SNAPSHOT_SUFFIX = re.compile(
    r"@.*|-(?:\d{4}-\d{2}-\d{2}|\d{3,8}|0|latest|preview|exp)(?:[-:@].*)?", re.DOTALL
)
_GLOB_SYNTAX = re.compile(r"\[[^\]]*\]|[*?]")
_nesting: ContextVar[int] = ContextVar("compactkit_profiles_nesting", default=0)


class _Frozen(BaseModel):
    """Immutable; an invalid value raises ``ConfigError`` naming the field (not pydantic's error)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **data: Any) -> None:
        # Pydantic runs this for nested models too; only the outermost call converts, so the
        # nested errors reach it with their full location (message_rules.tokens_per_message).
        depth = _nesting.set(_nesting.get() + 1)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            if _nesting.get() > 1:
                raise
            raise _invalid(_describe(type(self), data), exc) from exc
        finally:
            _nesting.reset(depth)


_Model = TypeVar("_Model", bound=_Frozen)


class MessageRules(_Frozen):
    """How a chat request's messages are billed beyond their text (OpenAI cookbook rules)."""

    tokens_per_message: int = 3
    """Tokens every message costs on top of its encoded values."""
    tokens_per_name: int = 1
    """Tokens a ``name`` field adds (``-1`` for gpt-3.5-turbo-0301, whose name replaces the role)."""
    reply_priming: int = 3
    """Tokens priming the reply (``<|start|>assistant<|message|>``), once per request."""


class ToolSchemaRules(_Frozen):
    """The constants of the cookbook's tool-schema formula (how function definitions are billed)."""

    func_init: int = 7
    """Tokens per function (7 for the gpt-4o family, 10 for gpt-3.5-turbo and gpt-4)."""
    prop_init: int = 3
    """Tokens when a function has any parameters."""
    prop_key: int = 3
    """Tokens per parameter."""
    enum_init: int = -3
    """Tokens when a parameter has an ``enum``."""
    enum_item: int = 3
    """Tokens per enum value, on top of the value's text."""
    func_end: int = 12
    """Tokens once after the last function."""


class ModelProfile(_Frozen):
    """Facts about a model or a family of models, with the documentation they come from.

    Counting is *exact* only where the encoding and rules reproduce the API's billed count (the
    cookbook verified this for the gpt-3.5-turbo, gpt-4, gpt-4o and gpt-4o-mini families). With
    an encoding but ``exact=False`` the count is a close approximation; without an encoding it is
    an estimate from ``chars_per_token``.
    """

    name: str = Field(min_length=1)
    """The model name (``gpt-4o``, which also matches its dated snapshots) or a glob pattern
    (``*qwen3*``, ``mistral-small*``). Matching ignores case."""
    provider: str = "custom"
    """Who makes the model: ``openai``, ``anthropic``, ``google``, ``meta``, ``qwen``, …"""
    context_window: int = Field(gt=0)
    """Tokens the model holds at once: prompt and reply together."""
    max_output: int = Field(gt=0)
    """The most tokens one reply may have (reasoning tokens included); at most the window."""
    input_cap: int | None = Field(default=None, gt=0)
    """The provider's limit on prompt tokens where it is below the window (gpt-5: 272,000 inside
    400,000); ``None`` when only the window limits the prompt."""
    encoding: str | None = None
    """The tiktoken encoding (``o200k_base``, ``cl100k_base``), or ``None`` when there is no local
    tokenizer and counts are estimated from ``chars_per_token``."""
    message_rules: MessageRules | None = None
    """Per-message billing rules for the encoding; ``None`` when none are published."""
    tool_rules: ToolSchemaRules | None = None
    """Tool-schema billing rules; ``None`` when none are published."""
    exact: bool = False
    """Whether counting with ``encoding`` and the rules reproduces the API's count."""
    chars_per_token: float | None = Field(default=None, gt=0)
    """Average characters per token, for estimating models without ``encoding``."""
    source: str = Field(min_length=1)
    """Where the numbers come from: the provider's documentation (URLs), or the file they were
    read from."""

    @model_validator(mode="after")
    def _consistent(self) -> ModelProfile:
        if self.max_output > self.context_window:
            raise ValueError(
                f"max_output ({self.max_output}) exceeds context_window ({self.context_window});"
                " the reply has to fit in the window"
            )
        if self.input_cap is not None and self.input_cap >= self.context_window:
            raise ValueError(
                f"input_cap ({self.input_cap}) is not below context_window"
                f" ({self.context_window}); leave input_cap out when the window is the only limit"
            )
        if self.encoding is None and self.chars_per_token is None:
            raise ValueError("a profile without an encoding needs chars_per_token to estimate")
        if self.exact and (self.encoding is None or self.message_rules is None):
            raise ValueError("exact=true needs an encoding and message_rules that are verified")
        return self

    @property
    def input_limit(self) -> int:
        """The most prompt tokens the provider accepts: the input cap, else the window."""
        return self.input_cap if self.input_cap is not None else self.context_window

    @property
    def counting(self) -> Counting:
        """``"exact"``, ``"approximate"`` (real tokenizer, unverified rules) or ``"estimate"``."""
        if self.exact:
            return "exact"
        return "approximate" if self.encoding is not None else "estimate"


class BudgetPolicy(_Frozen):
    """The user's choices for a model: how much of its window to use, and when to compact.

    Amounts are a ratio when they are floats and a number of tokens when they are integers:
    ``trigger=0.8`` is 80 % of the usable input budget, ``trigger=100_000`` is 100,000 tokens.
    """

    reserved_output: int | None = Field(default=None, ge=0)
    """Tokens kept free for the reply. ``None``: the smallest of the profile's ``max_output``,
    8,192 and a quarter of the window. Reasoning models may need more (OpenAI suggests reserving
    at least 25,000 tokens for reasoning and output)."""
    safety_margin: int | float | None = None
    """Head-room for counting error, below the input ceiling (``min(window - reserved output,
    input cap)``): tokens, or a ratio of that ceiling in [0, 1). ``None``: 2 % for exact
    profiles, 5 % for approximate ones, 10 % for estimates."""
    trigger: int | float = 0.8
    """Compact when the prompt reaches this: a ratio of the usable input in (0, 1], or tokens."""
    target: int | float = 0.5
    """Compact down to this (below ``trigger``): a ratio of the usable input, or tokens."""

    @field_validator("safety_margin", mode="plain")
    @classmethod
    def _margin(cls, value: object) -> int | float | None:
        return None if value is None else _amount(value, zero_ok=True)

    @field_validator("trigger", "target", mode="plain")
    @classmethod
    def _threshold(cls, value: object) -> int | float:
        return _amount(value, zero_ok=False)

    @model_validator(mode="after")
    def _ordered(self) -> BudgetPolicy:
        if isinstance(self.trigger, float) == isinstance(self.target, float) and not (
            self.target < self.trigger
        ):
            raise ValueError(
                f"target ({self.target!r}) must be below trigger ({self.trigger!r}), or"
                " compaction would fire again at once"
            )
        return self

    def reserved_output_tokens(self, profile: ModelProfile) -> int:
        """The output reserve for ``profile``, checked against its limits."""
        if self.reserved_output is None:
            return min(profile.max_output, DEFAULT_RESERVED_OUTPUT, profile.context_window // 4)
        if self.reserved_output > profile.max_output:
            raise ConfigError(
                f"reserved_output={self.reserved_output!r} exceeds max_output"
                f" ({profile.max_output}) of profile {profile.name!r}; reserve at most that"
            )
        if self.reserved_output >= profile.context_window:
            raise ConfigError(
                f"reserved_output={self.reserved_output!r} leaves no room for input in the"
                f" {profile.context_window}-token window of profile {profile.name!r}; lower it"
            )
        return self.reserved_output

    def safety_margin_tokens(self, profile: ModelProfile) -> int:
        """The safety margin for ``profile`` in tokens (ratios round up)."""
        ceiling = self._input_ceiling(profile)
        margin = self.safety_margin
        if margin is None:
            margin = {"exact": _MARGIN_EXACT, "approximate": _MARGIN_APPROXIMATE}.get(
                profile.counting, _MARGIN_ESTIMATE
            )
        return math.ceil(ceiling * margin) if isinstance(margin, float) else margin

    def usable_input_budget(self, profile: ModelProfile) -> int:
        """Prompt tokens available: ``min(window - reserved output, input cap) - margin``.

        Raises:
            ConfigError: The reserve or margin leaves no positive budget.
        """
        budget = self._input_ceiling(profile) - self.safety_margin_tokens(profile)
        if budget <= 0:
            raise ConfigError(
                f"the usable input budget of profile {profile.name!r} is {budget} tokens: lower"
                f" safety_margin ({self.safety_margin!r}) or reserved_output"
                f" ({self.reserved_output!r})"
            )
        return budget

    def trigger_tokens(self, profile: ModelProfile) -> int:
        """The compaction trigger for ``profile`` in tokens."""
        usable = self.usable_input_budget(profile)
        tokens = self._tokens(self.trigger, usable)
        if tokens > usable:
            raise ConfigError(
                f"trigger={self.trigger!r} exceeds the usable input budget of profile"
                f" {profile.name!r} ({usable} tokens); lower it or give a ratio"
            )
        return tokens

    def target_tokens(self, profile: ModelProfile) -> int:
        """The compaction target for ``profile`` in tokens (always below the trigger)."""
        trigger = self.trigger_tokens(profile)
        tokens = self._tokens(self.target, self.usable_input_budget(profile))
        if tokens >= trigger:
            raise ConfigError(
                f"target={self.target!r} is {tokens} tokens for profile {profile.name!r}, not"
                f" below trigger={self.trigger!r} ({trigger} tokens); lower the target"
            )
        return tokens

    def resolve(self, profile: ModelProfile, *, model: str | None = None) -> Budget:
        """All of this policy's numbers for ``profile``, checked, as a ``Budget``."""
        return Budget(
            model=model or profile.name,
            profile=profile,
            policy=self,
            reserved_output=self.reserved_output_tokens(profile),
            safety_margin=self.safety_margin_tokens(profile),
            usable_input=self.usable_input_budget(profile),
            trigger_tokens=self.trigger_tokens(profile),
            target_tokens=self.target_tokens(profile),
        )

    def _input_ceiling(self, profile: ModelProfile) -> int:
        return min(
            profile.context_window - self.reserved_output_tokens(profile), profile.input_limit
        )

    @staticmethod
    def _tokens(amount: int | float, usable: int) -> int:
        return max(1, math.floor(usable * amount)) if isinstance(amount, float) else amount


class Budget(_Frozen):
    """A model's token budget in absolute numbers: what the projector and policies work with."""

    model: str
    """The model name the budget was made for."""
    profile: ModelProfile
    """The profile that matched it."""
    policy: BudgetPolicy
    """The policy that applied."""
    reserved_output: int
    """Tokens kept free for the reply."""
    safety_margin: int
    """Tokens of head-room for counting error."""
    usable_input: int
    """The ceiling on the whole prompt: system, tools, summary, conversation, reply priming."""
    trigger_tokens: int
    """Compact when the prompt reaches this many tokens."""
    target_tokens: int
    """Compact down to this many tokens."""


class ProfileRegistry:
    """Finds the profile and the budget policy for a model name.

    Matching ignores case. An exact name beats every pattern. Otherwise the most specific match
    wins: the one with the most literal characters (a plain name that matches a snapshot counts
    its whole length; a glob counts its characters other than ``*``, ``?`` and ``[...]``), and on a
    tie the one registered last. A name with a provider prefix (``openai/gpt-4o``) is also tried
    without it. Policies are matched the same way.

    Args:
        profiles: Profiles to start with.
        policies: Budget policies by model name or pattern.
        default: The profile for models nothing matches; ``None`` makes them an error.
        default_policy: The policy for models no policy pattern matches.

    Attributes:
        default: The profile for models nothing matches (``None``: unknown models are an error).
        default_policy: The policy for models no policy pattern matches.
    """

    def __init__(
        self,
        profiles: Iterable[ModelProfile] = (),
        *,
        policies: Mapping[str, BudgetPolicy] | None = None,
        default: ModelProfile | None = None,
        default_policy: BudgetPolicy | None = None,
    ) -> None:
        self._profiles: dict[str, ModelProfile] = {}
        self._policies: dict[str, tuple[str, BudgetPolicy]] = {}
        self.default = default
        self.default_policy = default_policy or BudgetPolicy()
        for profile in profiles:
            self.register(profile)
        for pattern, policy in (policies or {}).items():
            self.set_policy(pattern, policy)

    @classmethod
    def bundled(cls) -> ProfileRegistry:
        """A new registry holding the profiles compactkit ships (no environment overrides)."""
        return cls(_bundled_profiles())

    @property
    def profiles(self) -> tuple[ModelProfile, ...]:
        """The registered profiles, in registration order."""
        return tuple(self._profiles.values())

    @property
    def policies(self) -> dict[str, BudgetPolicy]:
        """The policies set per name or pattern, in registration order."""
        return dict(self._policies.values())

    def register(self, profile: ModelProfile) -> None:
        """Add ``profile``, replacing any profile of the same name (case-insensitively)."""
        key = profile.name.lower()
        self._profiles.pop(key, None)  # re-registering moves it last: it wins pattern ties
        self._profiles[key] = profile

    def set_policy(self, pattern: str, policy: BudgetPolicy) -> None:
        """Use ``policy`` for models matching ``pattern`` (a name or glob, as for profiles)."""
        if not pattern:
            raise ConfigError("a policy pattern must not be empty; use '*' for every model")
        self._policies.pop(pattern.lower(), None)
        self._policies[pattern.lower()] = (pattern, policy)

    def get(self, model: str) -> ModelProfile:
        """The profile for ``model``.

        Raises:
            ConfigError: Nothing matches and there is no default profile.
        """
        found = self._find(model)
        if found is not None:
            return found
        if self.default is not None:
            return self.default
        raise ConfigError(
            f"unknown model {model!r}: no profile matches it. Register one"
            f" (registry.register(ModelProfile(name={model!r}, ...))), describe it in a TOML file"
            f" (registry.load_toml(path), or the {PROFILES_ENV} environment variable), or set a"
            " default profile for unknown models (registry.default = ...)"
        )

    def policy_for(self, model: str) -> BudgetPolicy:
        """The budget policy for ``model``: the best matching pattern's, else the default."""
        key = _best(model, (name for name, _ in self._policies.values()))
        return self._policies[key][1] if key is not None else self.default_policy

    def budget_for(self, model: str, *, policy: BudgetPolicy | None = None) -> Budget:
        """The checked budget for ``model``, with ``policy`` instead of the registered one."""
        return (policy or self.policy_for(model)).resolve(self.get(model), model=model)

    def copy(self) -> ProfileRegistry:
        """An independent registry with the same profiles, policies and defaults."""
        clone = ProfileRegistry(default=self.default, default_policy=self.default_policy)
        clone._profiles = dict(self._profiles)
        clone._policies = dict(self._policies)
        return clone

    def load_toml(self, path: str | os.PathLike[str]) -> None:
        """Add or override profiles and policies from a TOML file (format: docs/models.md).

        A ``[[profile]]`` whose name is already registered changes only the fields it gives; a new
        one needs ``name``, ``context_window``, ``max_output`` and an ``encoding`` or
        ``chars_per_token``. ``[policies."<pattern>"]`` tables work the same way. The file applies
        entirely or not at all.

        Raises:
            ConfigError: The file is unreadable, not TOML, or holds an invalid value (named).
        """
        where = os.fspath(path)
        try:
            data = tomllib.loads(Path(where).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read profiles file {where!r}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"profiles file {where!r} is not valid TOML: {exc}") from exc
        staged = self.copy()
        staged._apply(data, where)
        self._profiles, self._policies, self.default = (
            staged._profiles,
            staged._policies,
            staged.default,
        )

    def _find(self, model: str) -> ModelProfile | None:
        key = _best(model, (profile.name for profile in self._profiles.values()))
        return self._profiles[key] if key is not None else None

    def _apply(self, data: dict[str, Any], where: str) -> None:
        unknown = set(data) - {"profile", "policies", "default"}
        if unknown:
            raise ConfigError(
                f"{where}: unknown top-level keys {sorted(unknown)!r}; expected [[profile]],"
                ' [policies."<pattern>"] and default'
            )
        for index, table in enumerate(_tables(data.get("profile", []), where, "[[profile]]")):
            name = table.get("name")
            if not isinstance(name, str) or not name:
                raise ConfigError(f"{where}: [[profile]] number {index + 1} needs a name")
            existing = self._profiles.get(name.lower())
            base = existing.model_dump(exclude={"source"}) if existing is not None else {}
            fields = {**base, "source": where, **table}
            self.register(_validate(ModelProfile, fields, where))
        policies = data.get("policies", {})
        if not isinstance(policies, dict):
            raise ConfigError(f'{where}: policies must be tables: [policies."<pattern>"]')
        for pattern, table in policies.items():
            (table,) = _tables([table], where, f"[policies.{pattern!r}]")
            existing_policy = self._policies.get(pattern.lower())
            base = existing_policy[1].model_dump(exclude_unset=True) if existing_policy else {}
            what = f"{where}: policy {pattern!r}"
            self.set_policy(pattern, _validate(BudgetPolicy, {**base, **table}, what))
        if "default" in data:
            name = data["default"]
            found = self._find(name) if isinstance(name, str) else None
            if found is None:
                raise ConfigError(
                    f"{where}: default={name!r} names no known profile; give the name of a"
                    " shipped profile or of a [[profile]] in this file"
                )
            self.default = found


def _best(model: str, names: Iterable[str]) -> str | None:
    """The lower-cased name among ``names`` that matches ``model`` best, or ``None``."""
    candidates = [model.strip().lower()]
    if "/" in candidates[0]:
        candidates.append(candidates[0].rsplit("/", 1)[1])
    best: tuple[int, int, int] | None = None
    best_key: str | None = None
    for order, name in enumerate(names):
        key = name.lower()
        for candidate in candidates:
            score = _match(key, candidate)
            if score is not None and (best is None or (*score, order) > best):
                best, best_key = (*score, order), key
    return best_key


def _match(pattern: str, model: str) -> tuple[int, int] | None:
    """(1, 0) for an exact name, (0, specificity) for a pattern match, ``None`` otherwise."""
    if _GLOB_SYNTAX.search(pattern) is None:
        if model == pattern:
            return (1, 0)
        if model.startswith(pattern) and _SNAPSHOT_SUFFIX.fullmatch(model, len(pattern)):
            return (0, len(pattern))
        return None
    if fnmatch.fnmatchcase(model, pattern):
        return (0, len(_GLOB_SYNTAX.sub("", pattern)))
    return None


def _amount(value: object, *, zero_ok: bool) -> int | float:
    """Check a ratio (float) or a token count (int); the message names the allowed range."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be a ratio (a float such as 0.8) or a number of tokens (an integer)")
    if isinstance(value, float):
        in_range = 0 <= value < 1 if zero_ok else 0 < value <= 1
        if not in_range:
            bounds = "[0, 1)" if zero_ok else "(0, 1]"
            raise ValueError(f"a ratio must be in {bounds}; write a number of tokens as an integer")
    elif value < 0 or (value == 0 and not zero_ok):
        raise ValueError(f"a number of tokens must be {'>= 0' if zero_ok else '> 0'}")
    return value


def _tables(value: object, where: str, what: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ConfigError(f"{where}: {what} must be a table (see docs/models.md)")
    return value


def _validate(cls: type[_Model], data: dict[str, Any], where: str) -> _Model:
    try:
        return cls(**data)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _describe(cls: type[BaseModel], data: Mapping[str, Any]) -> str:
    name = data.get("name")
    return f"{cls.__name__} {name!r}" if isinstance(name, str) else cls.__name__


def _invalid(what: str, exc: ValidationError) -> ConfigError:
    """A ``ConfigError`` naming each bad field and value of a pydantic ``ValidationError``."""
    problems = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field; check its spelling (docs/models.md lists the fields)"
        elif error["type"] == "missing":
            message = "required"
        if not field:
            problems.append(message)
        elif error["type"] == "missing":
            problems.append(f"{field}: {message}")
        else:
            problems.append(f"{field}={error['input']!r}: {message}")
    return ConfigError(f"invalid {what}: " + "; ".join(problems))


@cache
def _bundled_profiles() -> tuple[ModelProfile, ...]:
    text = (resources.files("compactkit.budget") / "profiles.toml").read_text("utf-8")
    tables = tomllib.loads(text)["profile"]
    return tuple(
        _validate(ModelProfile, table, "compactkit/budget/profiles.toml") for table in tables
    )


@cache
def default_registry() -> ProfileRegistry:
    """The process-wide registry: the shipped profiles plus the ``COMPACTKIT_PROFILES`` file.

    Built on first use; changes made to it (``register``, ``set_policy``) apply to every caller of
    ``get_profile`` and ``budget_for`` in the process.

    Raises:
        ConfigError: The file named by ``COMPACTKIT_PROFILES`` is unreadable or invalid.
    """
    registry = ProfileRegistry.bundled()
    path = os.environ.get(PROFILES_ENV)
    if path:
        try:
            registry.load_toml(path)
        except ConfigError as exc:
            raise ConfigError(f"{PROFILES_ENV}={path!r}: {exc}") from exc
    return registry


def get_profile(model: str) -> ModelProfile:
    """The profile for ``model`` from the default registry."""
    return default_registry().get(model)


def budget_for(
    model: str,
    *,
    registry: ProfileRegistry | None = None,
    policy: BudgetPolicy | None = None,
) -> Budget:
    """The checked token budget for ``model``.

    Args:
        model: The model name as sent to the provider (snapshots and prefixes are matched).
        registry: Where to look; the default registry when ``None``.
        policy: Use this policy instead of the one registered for the model.

    Raises:
        ConfigError: The model is unknown, or the policy does not fit its profile.
    """
    return (registry or default_registry()).budget_for(model, policy=policy)
