"""What the model sees, and when history is folded.

Owns the per-turn projection (``projector``: plan, select, render under the model's budget) and
the compaction triggers (``policy``). Governance is pure: it reads snapshots and never writes a
memory. It may import ``items``, ``budget``, ``formats`` and ``compressors``.
"""

from compactkit.governance._cache import cache_hysteresis
from compactkit.governance.policy import (
    CompactPolicy,
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
from compactkit.governance.projector import ContextProjector, Projection, ProjectionReport
from compactkit.governance.status import BudgetStatus, is_budget_status

__all__ = [
    "BudgetStatus",
    "CompactPolicy",
    "ContextProjector",
    "PolicyState",
    "Projection",
    "ProjectionReport",
    "Trigger",
    "TriggerLike",
    "all_of",
    "any_of",
    "cache_cold",
    "cache_hysteresis",
    "every_turns",
    "is_budget_status",
    "items_over",
    "ratio_over",
    "tokens_over",
    "usage_over",
]
