"""Triggers: when a ``CompactPolicy`` fires, as small strategy objects over one ``PolicyState``.

They compose like tenacity's stop strategies: ``|`` fires when any part fires, ``&`` when all do
(both flatten), and a bare callable ``(state) -> bool`` works wherever a trigger does. Importable
from ``compactkit.governance.policy`` too, where they were first defined.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeAlias

from compactkit.errors import ConfigError
from compactkit.governance._frozen import one_store_init

__all__ = [
    "PolicyState",
    "Trigger",
    "TriggerLike",
    "all_of",
    "any_of",
    "cache_cold",
    "every_turns",
    "items_over",
    "ratio_over",
    "tokens_over",
    "usage_over",
]


@one_store_init  # (measured on every model call: one store, not one per field)
@dataclass(frozen=True)
class PolicyState:
    """Everything a trigger may look at. Build it with ``CompactPolicy.measure``."""

    tokens: int
    """Tokens of the whole request if the memory were sent unprojected: instructions, the
    summary message, every active item, tool schemas and reply priming."""
    items: int
    """Active items in the memory."""
    budget: int | None = None
    """The model's usable input budget, when known (``ratio_over`` needs it)."""
    turn: int = 0
    """Model calls (agent-loop steps) so far in the session, as the caller counts them."""
    turns_since_compaction: int = 0
    """Model calls since the last compaction (a tool loop counts every step)."""
    last_usage: int | None = None
    """The provider-reported ``prompt_tokens`` of the last response, when there was one."""
    model: str | None = None
    """The model the request is for."""
    forced: bool = False
    """A manual compaction was requested (a command, an agent's compact tool): fire regardless."""
    idle_seconds: float | None = None
    """Seconds since the previous governance step of this memory (about the time since its last
    model call), or ``None`` on the first step; ``cache_cold`` reads it."""

    @property
    def ratio(self) -> float | None:
        """``tokens / budget``, or ``None`` without a budget."""
        return self.tokens / self.budget if self.budget else None


class Trigger(ABC):
    """A condition on a ``PolicyState``; combine with ``|`` (any) and ``&`` (all)."""

    @abstractmethod
    def __call__(self, state: PolicyState) -> bool:
        """Whether to compact."""

    def __or__(self, other: TriggerLike) -> any_of:
        return any_of(self, other)

    def __ror__(self, other: TriggerLike) -> any_of:
        return any_of(other, self)

    def __and__(self, other: TriggerLike) -> all_of:
        return all_of(self, other)

    def __rand__(self, other: TriggerLike) -> all_of:
        return all_of(other, self)

    def leaves(self) -> Iterator[TriggerLike]:
        """The simple triggers this one is made of (itself, for a simple trigger)."""
        yield self


TriggerLike: TypeAlias = Trigger | Callable[[PolicyState], bool]
"""A trigger, or any callable ``(state) -> bool``."""


class _Combined(Trigger):
    _operator = ""

    def __init__(self, *triggers: TriggerLike) -> None:
        if not triggers:
            raise ConfigError(f"{type(self).__name__}() needs at least one trigger")
        flat: list[TriggerLike] = []
        for trigger in triggers:
            if not callable(trigger):
                raise ConfigError(f"a trigger must be callable as trigger(state), got {trigger!r}")
            if type(trigger) is type(self):  # (a | b) | c is any_of(a, b, c), not nested
                assert isinstance(trigger, _Combined)
                flat.extend(trigger.triggers)
            else:
                flat.append(trigger)
        self.triggers: tuple[TriggerLike, ...] = tuple(flat)

    def leaves(self) -> Iterator[TriggerLike]:
        for trigger in self.triggers:
            if isinstance(trigger, Trigger):
                yield from trigger.leaves()
            else:
                yield trigger

    def __repr__(self) -> str:
        return "(" + f" {self._operator} ".join(map(repr, self.triggers)) + ")"


class any_of(_Combined):
    """Fires when any of ``triggers`` fires (what ``a | b`` builds)."""

    _operator = "|"

    def __call__(self, state: PolicyState) -> bool:
        return any(trigger(state) for trigger in self.triggers)


class all_of(_Combined):
    """Fires when every one of ``triggers`` fires (what ``a & b`` builds)."""

    _operator = "&"

    def __call__(self, state: PolicyState) -> bool:
        return all(trigger(state) for trigger in self.triggers)


class _Threshold(Trigger):
    def __init__(self, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{type(self).__name__}() needs a count >= 0, got {value!r}")
        self.value = value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value!r})"


class tokens_over(_Threshold):
    """Fires when the request would exceed ``tokens`` (``PolicyState.tokens``)."""

    def __call__(self, state: PolicyState) -> bool:
        return state.tokens > self.value


class items_over(_Threshold):
    """Fires when the memory holds more than ``items`` active items."""

    def __call__(self, state: PolicyState) -> bool:
        return state.items > self.value


class usage_over(_Threshold):
    """Fires when the provider reported more than ``tokens`` prompt tokens for the last call.

    It catches what a local count misses (unmodelled formatting, images, another tokenizer).
    """

    def __call__(self, state: PolicyState) -> bool:
        return state.last_usage is not None and state.last_usage > self.value


class every_turns(_Threshold):
    """Fires once ``turns`` model calls have passed since the last compaction."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        if value < 1:
            raise ConfigError(f"every_turns() needs at least 1 turn, got {value!r}")

    def __call__(self, state: PolicyState) -> bool:
        return state.turns_since_compaction >= self.value


class ratio_over(Trigger):
    """Fires when the request would exceed ``ratio`` of the usable input budget."""

    def __init__(self, ratio: float) -> None:
        if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 < ratio <= 1:
            raise ConfigError(f"ratio_over() needs a ratio in (0, 1], got {ratio!r}")
        self.ratio = float(ratio)

    def __call__(self, state: PolicyState) -> bool:
        if state.budget is None:
            raise ConfigError(
                "ratio_over() needs the usable input budget: give the policy a budget= or "
                "build it with CompactPolicy.for_model(model)"
            )
        return state.tokens > self.ratio * state.budget

    def __repr__(self) -> str:
        return f"ratio_over({self.ratio!r})"


class cache_cold(Trigger):
    """Fires when the provider's prompt cache has expired anyway: the memory has been idle
    (``PolicyState.idle_seconds``) for at least ``after`` seconds.

    A compaction rewrites the prompt after the instructions, so the next request pays full
    price for it either way; compacting while the cache is still warm also throws away the
    cached prefix. Compose it to compact early only when that is free, and at the usual
    threshold otherwise: ``ratio_over(0.9) | (ratio_over(0.6) & cache_cold(after=1800))``.
    ``after`` is the cache's lifetime, which the provider documents and the request may set
    (OpenAI's ``prompt_cache_options.ttl`` ``"30m"``): compactkit does not guess it.
    """

    def __init__(self, *, after: float) -> None:
        if isinstance(after, bool) or not isinstance(after, int | float) or not after > 0:
            raise ConfigError(
                f"cache_cold(after=...) needs the cache lifetime in seconds (> 0), got {after!r}"
            )
        if after == float("inf"):
            raise ConfigError("cache_cold(after=inf) would never fire; give the cache lifetime")
        self.after = float(after)

    def __call__(self, state: PolicyState) -> bool:
        return state.idle_seconds is not None and state.idle_seconds >= self.after

    def __repr__(self) -> str:
        return f"cache_cold(after={self.after!r})"
