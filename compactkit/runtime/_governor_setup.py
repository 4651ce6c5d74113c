"""The ``Governor``'s setup: its options checked (each contradiction a ``ConfigError`` naming
the fix) and the defaults ``Governor.for_model`` builds (the projector, the policy)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from compactkit.budget import ProfileRegistry, budget_for, counter_for
from compactkit.compressors import as_memory_compressor
from compactkit.compressors.base import CompressorLike, MemoryCompressor
from compactkit.errors import ConfigError
from compactkit.governance import cache_hysteresis
from compactkit.governance.policy import (
    CompactPolicy,
    TriggerLike,
    model_thresholds,
    tokens_over,
    usage_over,
)
from compactkit.governance.projector import ContextProjector
from compactkit.governance.status import BudgetStatus
from compactkit.items.snapshot import SummaryRole
from compactkit.runtime.events import CompactionRequest, EventHandler

if TYPE_CHECKING:  # loaded with its use (it brings asyncio): see _check_parts
    from compactkit.runtime.background import BackgroundCompaction

_MEMORY_METHODS = ("snapshot", "apply", "add_user_input", "add_output_items", "add_tool_output")


def _checked_init(
    projector: ContextProjector,
    policy: CompactPolicy | None,
    compressor: CompressorLike | None,
    on_event: EventHandler | None,
    before_compaction: Callable[[CompactionRequest], bool] | None,
) -> MemoryCompressor | None:
    """A ``Governor``'s projector, policy and hooks checked (a ``ConfigError`` naming the fix),
    and its compressor as a ``MemoryCompressor``."""
    if not isinstance(projector, ContextProjector):
        raise ConfigError(
            f"projector must be a ContextProjector, got {type(projector).__name__}; build "
            "one with ContextProjector.for_model(model)"
        )
    if policy is not None and not isinstance(policy, CompactPolicy):
        raise ConfigError(f"policy must be a CompactPolicy or None, got {policy!r:.80}")
    if compressor is not None:  # a plain function is a FunctionCompressor
        compressor = as_memory_compressor(compressor)
    for name, hook in (("on_event", on_event), ("before_compaction", before_compaction)):
        if hook is not None and not callable(hook):
            raise ConfigError(f"{name} must be callable, got {hook!r:.80}")
    return compressor


def _check_prompt_tokens(prompt_tokens: object) -> None:
    """A provider-reported ``prompt_tokens`` is a count >= 0, or a ``ConfigError``."""
    if isinstance(prompt_tokens, bool) or not isinstance(prompt_tokens, int):
        raise ConfigError(f"prompt_tokens must be an int, got {prompt_tokens!r}")
    if prompt_tokens < 0:
        raise ConfigError(f"prompt_tokens must be >= 0, got {prompt_tokens!r}")


def _check_parts(
    background: BackgroundCompaction | None,
    policy: CompactPolicy | None,
    status: BudgetStatus | None,
) -> None:
    """A ``Governor``'s background scheduler and status line, or a ``ConfigError``."""
    if background is not None:
        from compactkit.runtime.background import BackgroundCompaction
    if background is not None and not isinstance(background, BackgroundCompaction):
        raise ConfigError(
            f"background must be a BackgroundCompaction, got {type(background).__name__}"
        )
    if background is not None:
        if policy is None:
            raise ConfigError(
                "background compaction needs a policy (its trigger is the hard threshold): "
                "pass policy= or drop background="
            )
        background.soft_tokens(policy)  # a soft threshold not above the target is refused
    if status is not None and not isinstance(status, BudgetStatus):
        raise ConfigError(f"status must be a BudgetStatus or None, got {status!r:.80}")


def _require_memory(memory: object) -> None:
    # Not isinstance(memory, AgentMemory): a runtime Protocol check reads every member,
    # and the `items` property renders the whole history, an O(history) cost per step.
    cls = type(memory)
    for name in _MEMORY_METHODS:  # (a loop, not all() over a generator: it runs every step)
        if not callable(getattr(cls, name, None)):
            raise ConfigError(
                f"step() takes the session's memory (an AgentMemory), got {cls.__name__}"
            )


def _default_projector(
    model: str, usable: int, registry: ProfileRegistry | None, summary_role: SummaryRole | None
) -> ContextProjector:
    """The model's projector: its counter, the usable budget, cache-aware when the model has a
    prompt cache."""
    options: dict[str, Any] = {} if summary_role is None else {"summary_role": summary_role}
    found = budget_for(model, registry=registry)
    options["cache_aware"] = found.profile.prompt_cache is not None
    return ContextProjector(counter_for(model, registry=registry), budget=usable, **options)


def _check_for_model(
    model: object,
    *,
    compaction: bool,
    budget: int | None,
    shaped: tuple[object, object],
    projector: ContextProjector | None,
    policy: CompactPolicy | None,
    compressor: CompressorLike | None,
    summary_role: SummaryRole | None,
) -> None:
    """``Governor.for_model``'s options that contradict each other: a ``ConfigError`` naming
    the fix (``shaped`` is ``(trigger, target)``)."""
    if not isinstance(model, str) or not model:
        raise ConfigError(f"model must be a model name, got {model!r}")
    if not compaction and (policy is not None or compressor is not None):
        raise ConfigError(
            "compaction=False turns compaction off: do not pass policy= or compressor= "
            "with it (drop compaction=False to use them)"
        )
    if projector is not None and summary_role is not None:
        raise ConfigError(
            "summary_role= configures the default projector; with projector= given, build "
            "it with ContextProjector(..., summary_role=...) instead"
        )
    if projector is not None and budget is not None:
        raise ConfigError(
            "budget= sizes the default projector; with projector= given, build it with "
            "ContextProjector.for_model(model, budget=...) instead"
        )
    if policy is not None and any(option is not None for option in shaped):
        raise ConfigError(
            "policy= already says when to compact and down to what: do not pass trigger= "
            "or target= with it (or drop policy=)"
        )
    if not compaction and any(option is not None for option in shaped):
        raise ConfigError(
            "compaction=False turns compaction off: trigger= and target= would not be used"
        )


def _for_model_parts(
    model: str,
    *,
    compaction: bool,
    budget: int | None,
    shaped: tuple[TriggerLike | int | float | None, int | float | None],
    registry: ProfileRegistry | None,
    projector: ContextProjector | None,
    policy: CompactPolicy | None,
    compressor: CompressorLike | None,
    summary_role: SummaryRole | None,
) -> tuple[ContextProjector, CompactPolicy | None]:
    """``Governor.for_model``'s options checked, and its projector and policy: the ones given,
    else the model's defaults (``shaped`` is ``(trigger, target)``)."""
    _check_for_model(
        model,
        compaction=compaction,
        budget=budget,
        shaped=shaped,
        projector=projector,
        policy=policy,
        compressor=compressor,
        summary_role=summary_role,
    )
    trigger, target = shaped
    usable, _, _ = model_thresholds(model, budget, registry)
    if projector is None:
        projector = _default_projector(model, usable, registry, summary_role)
    if compaction and policy is None:
        policy = default_policy(
            model,
            budget=budget,
            trigger=trigger,
            target=target,
            registry=registry,
            cache_aware=projector.cache_aware,
        )
    return projector, policy


def default_policy(
    model: str,
    *,
    budget: int | None = None,
    trigger: TriggerLike | int | float | None = None,
    target: int | float | None = None,
    registry: ProfileRegistry | None = None,
    cache_aware: bool = False,
) -> CompactPolicy:
    """The policy every entry point builds from the shared options: ``budget`` (tokens; the
    profile's usable input by default) with the trigger and target at their shares of it, fired
    by the local count or the provider's reported usage; ``trigger``/``target`` override them
    (a trigger without a target gets one below it). ``cache_aware`` widens the defaults' gap
    (compactions are cache misses: make them rarer)."""
    usable, trigger_tokens, target_tokens = model_thresholds(model, budget, registry)
    if trigger is not None:
        return CompactPolicy.for_model(
            model, budget=usable, trigger=trigger, target=target, registry=registry
        )
    if budget is None and target is None and cache_aware:
        trigger_tokens, target_tokens = cache_hysteresis(budget_for(model, registry=registry))
    return CompactPolicy.for_model(
        model,
        budget=usable,
        trigger=tokens_over(trigger_tokens) | usage_over(trigger_tokens),
        target=target_tokens if target is None else target,
        registry=registry,
    )
