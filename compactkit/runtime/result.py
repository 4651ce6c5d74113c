"""What a run returns: the final text, the steps, the usage, the compactions and the events."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from compactkit.budget.profile import Prices
from compactkit.governance.cost import CompactionCost
from compactkit.items import FunctionCall
from compactkit.items.snapshot import CompactResult
from compactkit.runtime.events import CompactionEvent, Event
from compactkit.runtime.tools import ToolOutcome

__all__ = ["RunResult", "StepRecord", "Usage"]


@dataclass(frozen=True)
class Usage:
    """Provider-reported token usage."""

    prompt_tokens: int = 0
    """Prompt (input) tokens."""
    completion_tokens: int = 0
    """Completion (output) tokens."""
    cached_tokens: int = 0
    """Prompt tokens served from the provider's prompt cache."""
    requests: int = 0
    """Model requests that returned (retried attempts not counted)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
            self.requests + other.requests,
        )


@dataclass(frozen=True)
class StepRecord:
    """One step: a governed prompt, one model call, the tool calls it asked for."""

    step: int
    """The session's step number (1-based, counted over the whole session)."""
    prompt_tokens: int
    """The prompt's size by the local counter."""
    usage: Usage
    """What the provider reported for the call."""
    text: str
    """The assistant's text in this step (often empty beside tool calls)."""
    calls: tuple[FunctionCall, ...] = ()
    """The tool calls the model asked for, in its order."""
    outputs: tuple[ToolOutcome, ...] = ()
    """Their outputs, in the same order."""
    compactions: tuple[CompactResult, ...] = ()
    """Compactions that ran before the call (forced ones for an overflow included)."""


@dataclass(frozen=True)
class RunResult:
    """What one ``session.run(input)`` did."""

    session_id: str
    """The session that ran."""
    output: str
    """The final answer's text."""
    steps: tuple[StepRecord, ...]
    """Every step of the run, in order."""
    usage: Usage
    """Provider-reported usage, summed over the run's calls."""
    compactions: tuple[CompactResult, ...]
    """Every compaction the run's governance steps ran (failed ones too)."""
    events: tuple[Event, ...]
    """Every event of the run, in order."""

    @property
    def tool_calls(self) -> tuple[FunctionCall, ...]:
        """Every tool call of the run, in order."""
        return tuple(call for step in self.steps for call in step.calls)

    @property
    def compaction_cost(self) -> CompactionCost:
        """What the run's compactions cost together (``CompactionEvent.cost`` summed); a part
        is ``None`` when any compaction's is."""
        costs = [e.cost for e in self.events if isinstance(e, CompactionEvent) and e.cost]
        return CompactionCost(
            summarizer=_total(c.summarizer for c in costs),
            next_request_change=_total(c.next_request_change for c in costs),
            until_next_compaction=_total(c.until_next_compaction for c in costs),
        )

    def cost(self, prices: Prices) -> float | None:
        """The run's cost in dollars at the agent model's ``prices``: every model call as the
        provider reported it (cached prompt tokens at the cached price) plus the summarizer
        calls; ``None`` when a summarizer's prices are not known.

        Raises:
            ConfigError: cached tokens were reported but ``prices`` has no cached price.
        """
        calls = sum(
            prices.cost(
                input=step.usage.prompt_tokens - step.usage.cached_tokens,
                cached_input=step.usage.cached_tokens,
                output=step.usage.completion_tokens,
            )
            for step in self.steps
        )
        summarizer = self.compaction_cost.summarizer
        return None if summarizer is None else calls + summarizer


def _total(values: Iterable[float | None]) -> float | None:
    total = 0.0
    for value in values:
        if value is None:
            return None
        total += value
    return total
