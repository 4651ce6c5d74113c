"""The budget the agent can see (opt-in): one status line at the end of every request.

``BudgetStatus`` appends ``<context-status>context 61% used; compaction at 80%</context-status>``
as the last message of a projection, for agents that plan their own work. Where it goes, and why:

* **At the end**, never in the system prompt: the line changes every request, and a provider's
  prefix cache matches from the start. The previous request's line was its last message, which
  is exactly where the next request's new items begin, so the line costs the cache nothing but
  its own few tokens.
* **Never stored**: it is added to the prompt only (``Projection.items``), never to a memory
  or a framework's history, so no compaction ever summarises it.
* **Inside the budget**: the projection is made under the budget less the line's tokens, and the
  line is counted in ``Projection.tokens``.

"Used" is the share of the budget the conversation fills as the compaction trigger measures it
(instructions, summary, every stored item, tool schemas — before any masking), so the agent can
see a compaction coming; "compaction at" is the trigger's lowest token threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from compactkit.budget import TokenCounter
from compactkit.errors import ConfigError
from compactkit.governance._prompt import Projection
from compactkit.governance.policy import CompactPolicy
from compactkit.items import Item, ItemsChain, ItemsView, Message, Tool
from compactkit.items.snapshot import MemorySnapshot

__all__ = ["BudgetStatus", "is_budget_status"]

STATUS_TAG = "context-status"
"""The element the status line is written in (so a reader of a transcript can tell it apart)."""

_OPEN, _CLOSE = f"<{STATUS_TAG}>", f"</{STATUS_TAG}>"


def is_budget_status(item: object) -> bool:
    """Whether ``item`` is a status line ``BudgetStatus`` added (never a stored item)."""
    return (
        isinstance(item, Message)
        and item.seq is None
        and item.role == "user"
        and isinstance(item.content, str)
        and item.content.startswith(_OPEN)
        and item.content.endswith(_CLOSE)
    )


@dataclass(frozen=True)
class BudgetStatus:
    """Adds the one-line budget status to each projection (``Governor(status=...)``).

    Args:
        policy: The compaction policy whose trigger the line names and whose measure it shows
            (``None``: compaction is off; the line then says only how much is used).
        budget: The budget the shares are of (default: the policy's, else the projection's).
    """

    policy: CompactPolicy | None = None
    budget: int | None = None

    def __post_init__(self) -> None:
        if self.policy is not None and not isinstance(self.policy, CompactPolicy):
            raise ConfigError(f"policy must be a CompactPolicy or None, got {self.policy!r:.80}")
        if self.budget is not None and (
            isinstance(self.budget, bool) or not isinstance(self.budget, int) or self.budget < 1
        ):
            raise ConfigError(f"budget must be a positive int of tokens, got {self.budget!r}")

    def line(self, used: int, budget: int) -> str:
        """The status text for ``used`` tokens of ``budget``."""
        share = _percent(used, budget)
        text = f"context {share}% used"
        trigger = self.policy.trigger_tokens() if self.policy is not None else None
        if trigger is not None:
            text += f"; compaction at {_percent(trigger, budget)}%"
        return f"{_OPEN}{text}{_CLOSE}"

    def reserve(self, counter: TokenCounter, budget: int) -> int:
        """Tokens to keep free for the line: its widest form (three-digit shares)."""
        return counter.count_item(Message(role="user", content=self.line(budget * 9, 1)))

    def used(
        self,
        snapshot: MemorySnapshot,
        counter: TokenCounter,
        *,
        instructions: str | Sequence[Message] | None,
        tools: Sequence[Tool],
        projected: int,
    ) -> int:
        """The tokens the line reports: the policy's measure of ``snapshot`` (what the trigger
        compares), or the ``projected`` request's tokens without a policy."""
        if self.policy is None:
            return projected
        state = self.policy.measure(snapshot, counter, instructions=instructions, tools=tools)
        return max(state.tokens, projected)

    def project(
        self,
        project: Callable[[int], Projection],
        budget: int,
        counter: TokenCounter,
        used: Callable[[Projection, int], int],
    ) -> Projection:
        """A projection under ``budget`` with the line appended and counted.

        ``project(budget)`` makes the projection; ``used(projection, line_tokens)`` is the
        tokens the line reports. The projection is made under ``budget`` less the line's widest
        form, so the request with the line never exceeds ``budget``.
        """
        reserve = self.reserve(counter, budget)
        projection = project(max(1, budget - reserve))
        shown = self.budget or (self.policy.budget if self.policy is not None else None) or budget
        message = Message(role="user", content=self.line(used(projection, reserve), shown))
        tokens = counter.count_item(message)
        return replace(
            projection,
            items=_appended(projection.items, message),
            tokens=projection.tokens + tokens,
            budget=budget,
        )


def _percent(part: int, whole: int) -> int:
    return max(0, min(999, round(100 * part / whole))) if whole > 0 else 0


def _appended(items: Sequence[Item], last: Item) -> ItemsChain:
    """``items`` and then ``last``, without copying ``items``."""
    tail = (last,)
    if isinstance(items, ItemsChain):
        return ItemsChain.joined([*items.runs(), (tail, 0, 1)])
    # A tuple or an ItemsView never changes below its length: it is a run as it is.
    held = items if isinstance(items, (tuple, ItemsView)) else tuple(items)
    return ItemsChain.joined([(held, 0, len(held)), (tail, 0, 1)])
