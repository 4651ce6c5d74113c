"""When to compact, and down to what.

Triggers are small strategy objects that read one ``PolicyState`` and compose like tenacity's
stop strategies: ``|`` fires when any part fires, ``&`` when all do (both flatten), and a bare
callable ``(state) -> bool`` works wherever a trigger does::

    policy = CompactPolicy(ratio_over(0.8) | items_over(500), target=0.5, budget=117_411)
    state = policy.measure(snapshot, counter, tools=tools, turns_since_compaction=steps)
    if policy.should_compact(state):
        ...compress down to policy.target_tokens()

The target is separate from the trigger (hysteresis): compaction aims well under the point where
it fires, so it does not fire again on the next turn. ``CompactPolicy.for_model(model)`` takes
both from the model's ``BudgetPolicy``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING

from compactkit.budget.tokens import TokenCounter
from compactkit.errors import ConfigError
from compactkit.governance._incremental import ItemsTally, MessageCache, OverheadCache
from compactkit.governance.triggers import (
    PolicyState,
    Trigger,
    TriggerLike,
    all_of,
    any_of,
    cache_cold,
    every_turns,
    items_over,
    ratio_over,
    tokens_over,
    usage_over,
)
from compactkit.items import Message, Tool
from compactkit.items.snapshot import (
    DEFAULT_SUMMARY_ROLE,
    MemorySnapshot,
    SummaryRole,
    require_snapshot,
)

if TYPE_CHECKING:
    from compactkit.budget.profiles import ProfileRegistry

__all__ = [
    "CompactPolicy",
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


@dataclass(frozen=True)
class CompactPolicy:
    """When to compact, and down to what.

    Args:
        trigger: When to compact. ``None`` compacts only when asked (``PolicyState.forced``).
        target: What a compaction should get the request under: tokens (an ``int``) or a ratio
            of ``budget`` (a ``float`` in (0, 1)). It must be below every token threshold of the
            trigger, so that compaction does not fire again on the next turn.
        budget: The model's usable input budget; ``ratio_over`` and ratio targets need it.
        model: The model the policy is for (reported in the state it builds).
        registry: Where ``model``'s profile is looked up for what a compaction costs (its
            prices); ``None``: the process-wide registry. ``for_model`` keeps the one it got.

    Raises:
        ConfigError: a bad target, a target not below the trigger's thresholds, or a
            ``ratio_over`` trigger (or ratio target) without a budget.
    """

    trigger: TriggerLike | None
    _: KW_ONLY
    target: int | float
    budget: int | None = None
    model: str | None = None
    registry: ProfileRegistry | None = field(default=None, repr=False, compare=False)
    _tally: ItemsTally = field(default_factory=ItemsTally, init=False, repr=False, compare=False)
    _overhead: OverheadCache = field(
        default_factory=OverheadCache, init=False, repr=False, compare=False
    )
    _messages: MessageCache = field(
        default_factory=MessageCache, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # A number means what it means everywhere else: tokens (int) or a share of the budget
        # (float), like ``target`` and ``BudgetPolicy(trigger=...)``.
        object.__setattr__(self, "trigger", _as_trigger(self.trigger))
        if self.trigger is not None and not callable(self.trigger):
            raise ConfigError(f"trigger must be callable as trigger(state), got {self.trigger!r}")
        if self.budget is not None and (
            isinstance(self.budget, bool)
            or not isinstance(self.budget, int | float)
            or not self.budget > 0  # NaN is not > 0
            or self.budget == float("inf")
        ):
            raise ConfigError(f"budget must be a positive number of tokens, got {self.budget!r}")
        target = self.target
        if isinstance(target, bool) or not isinstance(target, int | float):
            raise ConfigError(f"target must be tokens (int) or a ratio (float), got {target!r}")
        if isinstance(target, float) and not 0 < target < 1:
            raise ConfigError(f"a ratio target must be in (0, 1), got {target!r}")
        if isinstance(target, int) and target <= 0:
            raise ConfigError(f"a target must be a positive number of tokens, got {target!r}")
        if isinstance(target, float) and self.budget is None:
            raise ConfigError(
                f"target={target!r} is a ratio of the budget: give budget= (the usable input "
                "budget) or use CompactPolicy.for_model(model)"
            )
        if self.budget is None and isinstance(self.trigger, Trigger):
            for leaf in self.trigger.leaves():
                if isinstance(leaf, ratio_over):
                    raise ConfigError(
                        f"the trigger {leaf!r} is a ratio of the usable input budget: give "
                        "budget= or build the policy with CompactPolicy.for_model(model)"
                    )
        tokens = self.target_tokens()
        for threshold, leaf in self._thresholds():
            if tokens >= threshold:
                raise ConfigError(
                    f"target ({tokens:,} tokens) is not below the trigger {leaf!r} "
                    f"({threshold:,} tokens): compaction would fire again next turn; "
                    "lower the target"
                )

    @classmethod
    def for_model(
        cls,
        model: str,
        *,
        budget: int | None = None,
        trigger: TriggerLike | int | float | None = None,
        target: int | float | None = None,
        registry: ProfileRegistry | None = None,
        **unknown: object,
    ) -> CompactPolicy:
        """The model's defaults from its ``BudgetPolicy``: fire over its trigger tokens, aim for
        its target tokens, with its usable input budget.

        Args:
            model: The model name as sent to the provider.
            budget: The usable input budget in tokens, instead of the profile's; the default
                trigger and target keep their share of it (80 % and 50 % by default).
            trigger: When to compact: tokens (``int``), a share of the budget (``float`` in
                (0, 1]) or a trigger (``ratio_over(0.8) | items_over(500)``).
            target: Down to what: tokens or a share of the budget. Without it, a ``trigger``
                gets a target below it (the default target, or 5/8 of the trigger's lowest
                token threshold when that is lower), so the two never contradict.
            registry: Where to look the model up (default: the process-wide registry).

        Raises:
            ConfigError: the model is unknown, an option is misspelt (the message names the
                closest one), or the target is not below the trigger.
        """
        if unknown:
            raise ConfigError.unknown_options(
                "CompactPolicy.for_model", unknown, ["budget", "trigger", "target", "registry"]
            )
        usable, default_trigger, default_target = model_thresholds(model, budget, registry)
        chosen = _as_trigger(default_trigger if trigger is None else trigger)
        if target is None:
            target = default_target
            probe = cls(chosen, target=1, budget=usable, model=model)
            lowest = min((threshold for threshold, _ in probe._thresholds()), default=None)
            if lowest is not None and target >= lowest:
                target = max(1, lowest * 5 // 8)
        return cls(chosen, target=target, budget=usable, model=model, registry=registry)

    def target_tokens(self) -> int:
        """The target in tokens (a ratio target is resolved against ``budget``)."""
        if isinstance(self.target, float):
            assert self.budget is not None
            return max(1, int(self.target * self.budget))
        return self.target

    def should_compact(self, state: PolicyState) -> bool:
        """Whether to compact now: a manual request, or the trigger fires."""
        return state.forced or (self.trigger is not None and bool(self.trigger(state)))

    def measure(
        self,
        snapshot: MemorySnapshot,
        counter: TokenCounter,
        *,
        instructions: str | Sequence[Message] | None = None,
        tools: Sequence[Tool] = (),
        turn: int = 0,
        turns_since_compaction: int = 0,
        last_usage: int | None = None,
        forced: bool = False,
        summary_role: SummaryRole = DEFAULT_SUMMARY_ROLE,
        idle_seconds: float | None = None,
    ) -> PolicyState:
        """The state of ``snapshot`` as the triggers see it.

        ``tokens`` counts the request as if the whole memory were sent: ``instructions``, the
        summary message, every item, ``tools`` and reply priming. Counting is incremental:
        measuring a grown history costs only the appended items. The summary is counted as the
        message it is sent as: pass the projector's ``summary_role`` when it is not the default.

        Raises:
            ConfigError: ``snapshot`` is not a ``MemorySnapshot`` (pass ``memory.snapshot()``).
        """
        snapshot = require_snapshot(snapshot, "measure()")
        if summary_role not in ("system", "developer", "user"):
            raise ConfigError(
                f"summary_role must be 'system', 'developer' or 'user', got {summary_role!r}"
            )
        head: list[Message] = []
        if isinstance(instructions, str):
            if instructions:
                head.append(self._messages.get("system", instructions))
        elif instructions is not None:
            head.extend(instructions)
        if snapshot.summary:
            head.append(self._messages.get(summary_role, snapshot.summary, summary=True))
        tokens = sum(map(counter.count_item, head)) if head else 0
        tokens += self._tally(counter, snapshot.items) + self._overhead(counter, tools)
        return PolicyState(
            tokens=tokens,
            items=len(snapshot.items),
            budget=self.budget,
            turn=turn,
            turns_since_compaction=turns_since_compaction,
            last_usage=last_usage,
            model=self.model,
            forced=forced,
            idle_seconds=idle_seconds,
        )

    def as_trigger(
        self,
        counter: TokenCounter,
        *,
        instructions: str | Sequence[Message] | None = None,
        tools: Sequence[Tool] = (),
    ) -> Callable[[MemorySnapshot], bool]:
        """This policy as a memory's write-path trigger: ``(snapshot) -> bool``.

        ``InMemoryMemory(compressor=..., policy=policy.as_trigger(counter))`` compacts after a
        write when the policy fires. The memory knows no turns or provider usage, so
        ``every_turns`` and ``usage_over`` never fire there; token, ratio and item triggers do.
        """

        def trigger(snapshot: MemorySnapshot) -> bool:
            state = self.measure(snapshot, counter, instructions=instructions, tools=tools)
            return self.should_compact(state)

        return trigger

    def rearm_tokens(self, tokens_after: int) -> int | None:
        """After a compaction that left the request at ``tokens_after``: the size it must grow
        to before the trigger is honoured again, or ``None`` when the compaction reached the
        target (the trigger's own distance above the target is the hysteresis then).

        A compaction that could not get under the target (the newest group alone is bigger,
        say) would otherwise fire again on the very next step, and every step after it, paying
        the summarizer each time for no progress. It waits instead until the request has grown
        by the same distance the trigger keeps above the target. ``force`` is always honoured.
        """
        target = self.target_tokens()
        lowest = min((threshold for threshold, _ in self._thresholds()), default=None)
        if tokens_after <= target or lowest is None:
            return None
        return tokens_after + max(1, lowest - target)

    def trigger_tokens(self) -> int | None:
        """The size at which the trigger fires whatever else holds: the lowest threshold of
        ``tokens_over``/``usage_over``/``ratio_over`` parts joined by ``|``; an ``&`` part counts
        only when all its parts are thresholds (its highest), since a condition such as
        ``cache_cold`` may never come. ``None`` when there is no such size. Where the budget
        status says compaction happens, and where a compaction's cost horizon ends."""
        return self._sure_tokens(self.trigger)

    def _sure_tokens(self, trigger: TriggerLike | None) -> int | None:
        if isinstance(trigger, tokens_over | usage_over):
            return trigger.value
        if isinstance(trigger, ratio_over):
            return int(trigger.ratio * self.budget) if self.budget is not None else None
        if isinstance(trigger, any_of | all_of):
            parts = [self._sure_tokens(part) for part in trigger.triggers]
            if isinstance(trigger, any_of):
                return min((p for p in parts if p is not None), default=None)
            return None if None in parts else max(p for p in parts if p is not None)
        return None

    def cache_lifetime(self) -> float | None:
        """The cache lifetime a ``cache_cold`` part of the trigger names (the shortest), or
        ``None`` when the trigger has none."""
        if not isinstance(self.trigger, Trigger):
            return None
        lives = [leaf.after for leaf in self.trigger.leaves() if isinstance(leaf, cache_cold)]
        return min(lives, default=None)

    def _thresholds(self) -> Iterator[tuple[int, TriggerLike]]:
        if not isinstance(self.trigger, Trigger):
            return
        for leaf in self.trigger.leaves():
            if isinstance(leaf, tokens_over | usage_over):
                yield leaf.value, leaf
            elif isinstance(leaf, ratio_over) and self.budget is not None:
                yield int(leaf.ratio * self.budget), leaf


def model_thresholds(
    model: str, budget: int | None = None, registry: ProfileRegistry | None = None
) -> tuple[int, int, int]:
    """``(usable input budget, trigger tokens, target tokens)`` of ``model``'s profile; with
    ``budget`` given, that budget with the trigger and target at the same shares of it."""
    from compactkit.budget.profiles import budget_for

    found = budget_for(model, registry=registry)
    usable = found.usable_input
    if budget is None:
        return usable, found.trigger_tokens, found.target_tokens
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ConfigError(
            f"budget must be a positive whole number of tokens, got {budget!r}; pass an int "
            "such as budget=6000"
        )
    trigger = max(2, int(budget * found.trigger_tokens / usable))
    return budget, trigger, max(1, min(trigger - 1, int(budget * found.target_tokens / usable)))


def _as_trigger(trigger: TriggerLike | int | float | None) -> TriggerLike | None:
    """A number as the trigger it means: tokens (``int``) or a share of the budget (``float``)."""
    if isinstance(trigger, bool):
        raise ConfigError(f"trigger must be tokens, a ratio or a trigger, got {trigger!r}")
    if isinstance(trigger, int):
        return tokens_over(trigger)
    if isinstance(trigger, float):
        return ratio_over(trigger)
    return trigger
