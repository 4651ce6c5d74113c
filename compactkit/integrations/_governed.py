"""What the LangChain middleware and the pydantic-ai capability share: their two governors.

Both frameworks hold the history and call a hook before every model call. ``mode="project"``
governs only what the model sees (the history is never changed: compaction runs on the mirror
of it, whose summary the integration holds); ``mode="compact"`` also folds the history when the
policy fires and writes the result back. Two governors share one projector:
the compacting one runs where the framework lets a hook rewrite the history, the projecting one
(compaction off) on every model call, so a compaction never runs twice for one step and every
prompt is projected under the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from compactkit.budget.profiles import ProfileRegistry, budget_for
from compactkit.budget.tokens import TokenCounter, counter_for
from compactkit.compressors.base import CompressorLike
from compactkit.errors import ConfigError
from compactkit.governance.policy import CompactPolicy, TriggerLike, model_thresholds
from compactkit.governance.projector import ContextProjector, Projection
from compactkit.governance.status import BudgetStatus
from compactkit.items.snapshot import SummaryRole
from compactkit.runtime.events import CompactionRequest, EventHandler, PassthroughEvent, emit
from compactkit.runtime.governor import Governor, default_policy

__all__ = ["OPTIONS", "Governors", "Mode"]

Mode: TypeAlias = Literal["project", "compact"]
"""``project``: only what the model sees is governed; ``compact``: the history is compacted too."""

OPTIONS = (
    "mode",
    "budget",
    "trigger",
    "target",
    "compressor",
    "policy",
    "projector",
    "summary_role",
    "registry",
    "on_event",
    "before_compaction",
    "budget_visible",
)
"""The options the LangChain middleware and the pydantic-ai capability take beyond ``model``."""


def model_name(model: object) -> str:
    """The model name sent to the provider: ``model`` itself, or the name a framework's model
    object carries (LangChain's ``ChatOpenAI.model_name``, ``ChatAnthropic.model``, pydantic-ai's
    ``Model.model_name``), so the object an agent is built with can be passed as it is."""
    if isinstance(model, str) and model:
        return model
    if not isinstance(model, str):
        for attribute in ("model_name", "model", "model_id"):
            name = getattr(model, attribute, None)
            if isinstance(name, str) and name:
                return name
    shown = f"{type(model).__name__} object" if not isinstance(model, str) else repr(model)
    raise ConfigError(
        f"model must be the model name sent to the provider (such as 'gpt-4o-mini') or a chat "
        f"model object that carries one, got {shown}"
    )


@dataclass(frozen=True)
class Governors:
    """The projecting governor (every model call) and the compacting one (``mode="compact"``)."""

    projecting: Governor
    compacting: Governor | None
    summary_role: SummaryRole
    on_event: EventHandler | None
    format: str

    @classmethod
    def build(
        cls,
        model: object,
        *,
        format: str,
        mode: Mode,
        budget: int | None,
        registry: ProfileRegistry | None,
        trigger: TriggerLike | int | float | None = None,
        target: int | float | None = None,
        projector: ContextProjector | None,
        policy: CompactPolicy | None,
        compressor: CompressorLike | None,
        summary_role: SummaryRole,
        on_event: EventHandler | None,
        before_compaction: Callable[[CompactionRequest], bool] | None,
        counter: TokenCounter | None = None,
        budget_visible: bool = False,
    ) -> Governors:
        """Check the options and build the governors (see the integrations' docstrings);
        ``counter`` replaces the model's counter in the default projector; ``budget_visible``
        puts the budget status line in every prompt (the projecting governor's)."""
        if mode not in ("project", "compact"):
            raise ConfigError(f"mode must be 'project' or 'compact', got {mode!r}")
        if projector is not None and budget is not None:
            raise ConfigError(
                "budget= sizes the default projector; with projector= given, build it with "
                "ContextProjector.for_model(model, budget=...) instead"
            )
        model = model_name(model)
        # A budget reaches the policy too: the one given, or the one a given projector holds.
        policy_budget = budget if projector is None else projector.budget
        if projector is None:
            found = budget_for(model, registry=registry)
            usable, _, _ = model_thresholds(model, budget, registry)
            projector = ContextProjector(
                counter if counter is not None else counter_for(model, registry=registry),
                budget=usable,
                summary_role=summary_role,
                cache_aware=found.profile.prompt_cache is not None,  # keep the prefix cacheable
            )
        # The budget reaches the policy too: compaction fires before the projection has to
        # drop or mask history.
        policy = policy or default_policy(
            model,
            budget=policy_budget,
            trigger=trigger,
            target=target,
            registry=registry,
            cache_aware=projector.cache_aware,
        )
        compacting = None
        status = BudgetStatus(policy) if budget_visible else None
        if mode == "compact":
            compacting = Governor(
                projector,
                policy=policy,
                compressor=compressor,
                on_event=on_event,
                before_compaction=before_compaction,
                status=status,  # pydantic-ai sends the compacting step's own projection
            )
            projecting = Governor(projector, on_event=on_event, status=status)
        else:
            # The framework's history is never changed; the mirror of it is compacted (its
            # summary held here), so the user's task and rules stay in every prompt once the
            # history outgrows the budget, instead of being dropped with the oldest turns.
            projecting = Governor(
                projector,
                policy=policy,
                compressor=compressor,
                on_event=on_event,
                before_compaction=before_compaction,
                status=status,
            )
        return cls(projecting, compacting, summary_role, on_event, format)

    @property
    def compacts(self) -> Governor:
        """The governor that compacts (and so honours ``request_compaction``)."""
        return self.compacting or self.projecting

    def observe_usage(self, prompt_tokens: object, projection: Projection) -> None:
        """Calibrate both governors with the provider's reported prompt tokens, when given."""
        if isinstance(prompt_tokens, bool) or not isinstance(prompt_tokens, int):
            return
        if prompt_tokens < 0:
            return
        self.projecting.observe_usage(prompt_tokens, projection)
        if self.compacting is not None:
            self.compacting.observe_usage(prompt_tokens, projection)

    def passthrough(self, index: int, reason: str) -> None:
        """Report a message passed through untouched (a warning event)."""
        emit(PassthroughEvent(index=index, reason=reason, format=self.format), self.on_event)
