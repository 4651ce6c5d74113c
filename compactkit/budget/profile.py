"""One model's profile and the user's budget policy for it (see ``profiles`` for the registry).

``ModelProfile`` holds facts about a model (window, output cap, input cap, tokenizer, formatting
rules, sources); ``BudgetPolicy`` the user's choices (reserved output, safety margin, compaction
trigger and target), whose arithmetic turns a profile into a ``Budget``::

    usable input = min(window - reserved output, input cap) - safety margin
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from compactkit.errors import ConfigError

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - exercised on Python 3.10 only
    pass  # type: ignore[import-not-found, unused-ignore]

__all__ = [
    "DEFAULT_RESERVED_OUTPUT",
    "Budget",
    "BudgetPolicy",
    "Counting",
    "MessageRules",
    "ModelProfile",
    "Prices",
    "PromptCaching",
    "ToolSchemaRules",
]

Counting: TypeAlias = Literal["exact", "approximate", "estimate"]
"""How far a model's token counts can be trusted (see ``ModelProfile.counting``)."""

DEFAULT_RESERVED_OUTPUT = 8192
"""The most output a policy reserves by default (see ``BudgetPolicy.reserved_output``)."""

# Default safety margins, as a share of the input ceiling: counts verified against the API need
# little; a real tokenizer with unverified rules a bit more; a characters-per-token estimate most.
_MARGIN_EXACT, _MARGIN_APPROXIMATE, _MARGIN_ESTIMATE = 0.02, 0.05, 0.10

_nesting: ContextVar[int] = ContextVar("compactkit_profiles_nesting", default=0)


class _Frozen(BaseModel):
    """Immutable; an invalid value raises ``ConfigError`` naming the field (not pydantic's error)."""

    # Pydantic builds a model's validator when it first validates, not when the module loads:
    # a process that reads only the shipped profiles (constructed unvalidated: see
    # ``_profiles_shipped``) and the default policy never builds them.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

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


class PromptCaching(_Frozen):
    """How a provider caches prompt prefixes, and what a cached input token costs.

    OpenAI caches the longest previously seen prefix automatically; Anthropic caches up to the
    ``cache_control`` breakpoints a request marks. Either way only a byte-identical prefix hits,
    so a prompt that keeps its beginning stable pays ``cached_input_ratio`` for most of it.
    """

    mode: Literal["automatic", "breakpoints"]
    """``automatic``: the provider finds the cached prefix itself (OpenAI); ``breakpoints``: the
    request marks where cached prefixes end (Anthropic ``cache_control``)."""
    min_prefix_tokens: int = Field(ge=0)
    """The shortest prefix the provider caches (OpenAI 1,024; Anthropic 1,024-4,096 by model)."""
    granularity_tokens: int = Field(default=1, gt=0)
    """Cached prefixes grow in steps of this many tokens past the minimum (OpenAI 128)."""
    cached_input_ratio: float = Field(gt=0, le=1)
    """Price of a cached input token as a share of the normal input price (gpt-5 0.1, gpt-4o 0.5,
    Anthropic cache reads 0.1)."""
    cache_write_ratio: float = Field(default=1.0, ge=1)
    """Price of an input token written to the cache, as a share of the input price (Anthropic's
    5-minute cache: 1.25; OpenAI charges nothing extra: 1.0)."""
    max_breakpoints: int | None = Field(default=None, gt=0)
    """The most ``cache_control`` breakpoints one request may carry (Anthropic: 4); ``None`` for
    automatic caching."""
    source: str = Field(min_length=1)
    """The provider's documentation of these numbers (URLs)."""

    def cached_tokens(self, prefix_tokens: int) -> int:
        """How many tokens of a ``prefix_tokens``-long repeated prefix the provider can serve
        from its cache: 0 under the minimum, else rounded down to the granularity."""
        if prefix_tokens < max(1, self.min_prefix_tokens):
            return 0
        steps = (prefix_tokens - self.min_prefix_tokens) // self.granularity_tokens
        return self.min_prefix_tokens + steps * self.granularity_tokens


class Prices(_Frozen):
    """What a model's tokens cost, in US dollars per million tokens (the providers' unit).

    Only ``input`` and ``output`` are required; a price left out is not known (``cost`` then
    refuses tokens of that kind rather than guess).
    """

    input: float = Field(ge=0)
    """An input (prompt) token not read from the cache."""
    output: float = Field(ge=0)
    """An output (completion) token, reasoning tokens included."""
    cached_input: float | None = Field(default=None, ge=0)
    """An input token read from the provider's prompt cache."""
    cache_write: float | None = Field(default=None, ge=0)
    """An input token written to the prompt cache (Anthropic charges extra for it)."""
    source: str = Field(min_length=1)
    """The provider's pricing page."""

    def cost(
        self, *, input: int = 0, output: int = 0, cached_input: int = 0, cache_write: int = 0
    ) -> float:
        """The cost in dollars of the given token counts (``input`` excludes cached ones).

        Raises:
            ConfigError: a count below 0, or tokens of a kind whose price is not known.
        """
        total = 0.0
        for kind, tokens, price in (
            ("input", input, self.input),
            ("output", output, self.output),
            ("cached_input", cached_input, self.cached_input),
            ("cache_write", cache_write, self.cache_write),
        ):
            if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
                raise ConfigError(f"{kind} must be a token count >= 0, got {tokens!r}")
            if tokens and price is None:
                raise ConfigError(
                    f"{tokens} {kind} tokens but no {kind} price is known: add "
                    f"prices.{kind} to the model's profile (docs/models.md)"
                )
            total += tokens * (price or 0.0) / 1_000_000
        return total


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
    prompt_cache: PromptCaching | None = None
    """How the provider caches prompt prefixes (``None``: it does not, or it is not known).
    Where it caches, the projector keeps each prompt a prefix extension of the last one
    (cache-aware mode, docs/projector.md)."""

    prices: Prices | None = None
    """What its tokens cost, per million (``None``: not known; compactkit never guesses)."""

    @model_validator(mode="after")
    def _consistent(self) -> ModelProfile:
        problem = inconsistency(self)
        if problem is not None:
            raise ValueError(problem)
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
        name = model or profile.name
        # Validating would change nothing (the numbers are this policy's checked ints, models
        # are taken as they are: pydantic never revalidates instances), so a right call skips
        # it; a wrong argument gets the validating constructor's ConfigError.
        right = isinstance(profile, ModelProfile) and isinstance(name, str)
        build: Callable[..., Budget] = Budget.model_construct if right else Budget
        return build(
            model=name,
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


def inconsistency(profile: ModelProfile) -> str | None:
    """What contradicts what in ``profile``'s numbers, or ``None`` (``ModelProfile``'s check)."""
    if profile.max_output > profile.context_window:
        return (
            f"max_output ({profile.max_output}) exceeds context_window ({profile.context_window});"
            " the reply has to fit in the window"
        )
    if profile.input_cap is not None and profile.input_cap >= profile.context_window:
        return (
            f"input_cap ({profile.input_cap}) is not below context_window"
            f" ({profile.context_window}); leave input_cap out when the window is the only limit"
        )
    if profile.encoding is None and profile.chars_per_token is None:
        return "a profile without an encoding needs chars_per_token to estimate"
    if profile.exact and (profile.encoding is None or profile.message_rules is None):
        return "exact=true needs an encoding and message_rules that are verified"
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
