"""What a run returns: the final text, the steps, the usage, the compactions and the events."""

from __future__ import annotations

from dataclasses import dataclass

from compactkit.items import FunctionCall
from compactkit.items.snapshot import CompactResult
from compactkit.runtime.events import Event
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
