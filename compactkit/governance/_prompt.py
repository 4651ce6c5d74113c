"""What a projection returns: the prompt (``Projection``) and what it kept, masked and omitted
(``ProjectionReport``). Public through ``compactkit.governance.projector``; defined here so that
the projection's steps (``_plan``, ``_select``, ``_render``) build them without importing the
projector."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from compactkit.governance._frozen import one_store_init
from compactkit.items import Item

__all__ = ["Projection", "ProjectionReport", "ValidateMode"]

ValidateMode: TypeAlias = Literal["repair", "raise"] | None
"""What to do with a history that breaks the tool-call rules (an output answering no call, an
old call that never got an output): ``repair`` drops the offending items and says so in the
report, ``raise`` raises ``FormatError``, ``None`` sends the items as they are."""


@one_store_init  # (built by every projection: one store, not one per field)
@dataclass(frozen=True)
class ProjectionReport:
    """What a projection kept, masked and omitted, and why.

    ``kept + masked + omitted`` is the number of items in the snapshot.
    """

    kept: int
    """Snapshot items sent unchanged."""
    masked: int
    """Snapshot tool outputs sent as a placeholder."""
    omitted: int
    """Snapshot items not sent (older than the window, or dropped by a repair)."""
    notes: tuple[str, ...] = ()
    """Human-readable reasons: what was masked, omitted, repaired or kept ahead of the window."""
    masked_call_ids: tuple[str, ...] = ()
    """The call ids of the masked outputs, oldest first."""
    cached_prefix_tokens: int = 0
    """Tokens of this request (tool schemas first, then the items) that are a byte-identical
    prefix of the previous prompt this projector built for the session: what a provider's
    prefix cache can serve (0 for a session's first prompt)."""


@one_store_init
@dataclass(frozen=True)
class Projection:
    """The prompt for this turn."""

    items: Sequence[Item]
    """What to send, in order: instructions, the summary message, pinned items, the window.

    An ``ItemsChain``: runs of the instructions, the memory's items and the masked rendering
    joined without copying (O(runs) to build); in cache-aware mode, once a prompt extends the
    previous one, an ``ItemsView`` of a list that grows in place (O(new items)). Both behave
    like the tuple they stand for; ``tuple(items)`` copies."""
    tokens: int
    """Tokens of the whole request (items, tool schemas, reply priming), by the counter."""
    budget: int
    """The budget the request had to fit."""
    report: ProjectionReport
    """What was kept, masked and omitted."""

    @property
    def cacheable_share(self) -> float:
        """``report.cached_prefix_tokens / tokens``: the share a prefix cache can serve."""
        return self.report.cached_prefix_tokens / self.tokens if self.tokens else 0.0
