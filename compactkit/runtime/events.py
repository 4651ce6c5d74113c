"""What happened, as typed events: projections, compactions, model calls, tool calls.

Every event is a frozen dataclass with a ``kind`` literal, so a handler can ``match`` on the
class or switch on ``event.kind``. The governor and the agent loop hand each event to the
``on_event`` callback (when there is one), put it on their result, and log it under the
``compactkit`` logger: failures at WARNING, compactions at INFO, everything else at DEBUG.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from compactkit.governance.cost import CompactionCost
from compactkit.governance.policy import PolicyState
from compactkit.items.snapshot import CompactResult, MemorySnapshot, Outcome

__all__ = [
    "BackgroundCompactionEvent",
    "CompactionEvent",
    "CompactionRequest",
    "CompactionSkipped",
    "CompactionVetoed",
    "Event",
    "ModelCallEvent",
    "ModelRetryEvent",
    "OverflowEvent",
    "PassthroughEvent",
    "PendingCallEvent",
    "ProjectionEvent",
    "ToolCallEvent",
]

logger = logging.getLogger("compactkit")


@dataclass(frozen=True)
class CompactionRequest:
    """What a ``before_compaction`` hook is asked about: return ``False`` to veto."""

    snapshot: MemorySnapshot = field(repr=False)
    """The memory's state the compressor would read."""
    state: PolicyState
    """The measurement that made the policy fire (tokens already calibrated)."""
    forced: bool
    """Whether the compaction was forced (overflow recovery, a manual request)."""
    model: str | None = None
    """The model the governor is for."""


@dataclass(frozen=True)
class ProjectionEvent:
    """A prompt was projected from the memory."""

    tokens: int
    """Tokens of the whole request, by the local counter."""
    budget: int
    """The budget it had to fit (after calibration)."""
    items: int
    """Items in the prompt."""
    kept: int
    """Memory items sent unchanged."""
    masked: int
    """Tool outputs sent as a placeholder."""
    omitted: int
    """Memory items not sent."""
    notes: tuple[str, ...] = ()
    """The projection report's notes."""
    cached_prefix_tokens: int = 0
    """Tokens of this prompt that repeat the previous prompt of the session byte for byte:
    what a provider's prefix cache can serve."""
    kind: Literal["projection"] = "projection"


@dataclass(frozen=True)
class CompactionEvent:
    """A compaction ran (whatever its outcome: failures are reported too)."""

    outcome: Outcome
    """What the compressor reported."""
    applied: bool
    """Whether the result was swapped into the memory."""
    forced: bool
    """Whether it was forced rather than fired by the policy."""
    compressor: str
    """The compressor that produced the result (``"ladder>mask+digest"``, …)."""
    tokens_before: int | None = None
    """Request tokens before, by the compressor's count."""
    tokens_after: int | None = None
    """Request tokens after."""
    items_before: int = 0
    """Active items before."""
    items_after: int = 0
    """Active items after."""
    error: str | None = None
    """Why it failed, fell back, or was not applied."""
    result: CompactResult | None = field(default=None, repr=False, compare=False)
    """The full result, when the compressor returned one."""
    cost: CompactionCost | None = None
    """What it cost in dollars: the summarizer calls, the change in the next request's cost,
    and their sum ``cost.net`` (docs/control.md); ``None`` when no compressor ran."""
    kind: Literal["compaction"] = "compaction"


@dataclass(frozen=True)
class CompactionVetoed:
    """The ``before_compaction`` hook refused a compaction; the memory is unchanged."""

    request: CompactionRequest
    """What was refused."""
    kind: Literal["compaction_vetoed"] = "compaction_vetoed"


@dataclass(frozen=True)
class CompactionSkipped:
    """Another compactor (another process or worker) holds the session's compaction lease
    (``compactkit.memory.lease``): this one skipped without calling its compressor, and the
    memory is unchanged. The holder's result is applied by the holder."""

    request: CompactionRequest
    """What would have been compacted."""
    holder: str
    """Who holds the compaction lease."""
    kind: Literal["compaction_skipped"] = "compaction_skipped"


@dataclass(frozen=True)
class ModelCallEvent:
    """One model call finished (successfully or not, after its retries)."""

    step: int
    """The session's step number of this call (1-based)."""
    model: str
    """The model called."""
    api: Literal["chat", "responses"]
    """Which API."""
    prompt_tokens: int | None = None
    """Provider-reported prompt tokens."""
    completion_tokens: int | None = None
    """Provider-reported completion tokens."""
    cached_tokens: int | None = None
    """Provider-reported cached prompt tokens."""
    tool_calls: int = 0
    """Tool calls in the reply."""
    attempts: int = 1
    """Requests sent, retries included."""
    duration_s: float = 0.0
    """Wall time of the call, retries included."""
    error: str | None = None
    """Why it failed, when it did."""
    kind: Literal["model_call"] = "model_call"


@dataclass(frozen=True)
class ModelRetryEvent:
    """A model call failed with a transient fault and will be retried."""

    step: int
    """The step of the call."""
    attempt: int
    """The attempt that failed (1-based)."""
    error: str
    """What failed."""
    wait_s: float
    """How long the loop waits before the next attempt."""
    kind: Literal["model_retry"] = "model_retry"


@dataclass(frozen=True)
class OverflowEvent:
    """The provider refused the prompt as too long; the loop forces a compaction and retries."""

    step: int
    """The step of the refused call."""
    error: str
    """The provider's message."""
    projected_tokens: int
    """What the local counter said the prompt was."""
    reported_tokens: int | None = None
    """What the provider said it was, when its message says."""
    kind: Literal["overflow"] = "overflow"


@dataclass(frozen=True)
class ToolCallEvent:
    """A tool call finished; errors are tool outputs the model reads, so they appear here."""

    step: int
    """The step whose reply asked for the call."""
    name: str
    """The tool's name as the model sent it."""
    call_id: str
    """The call id (generated as ``tool_step_<step>_<index>`` when the model sent none)."""
    is_error: bool = False
    """Whether the output is an error (bad arguments, unknown tool, a raise, a timeout)."""
    error: str | None = None
    """The error text the model was given."""
    duration_s: float = 0.0
    """Wall time of the call."""
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class PendingCallEvent:
    """A resumed session held a call without an output (a crash between the call and its
    output); it was re-run or answered with an error output, never left dangling."""

    call_id: str
    """The call's id."""
    name: str
    """The tool's name."""
    action: Literal["rerun", "reported"]
    """Re-run (the tool allows it) or answered with an error output saying it was interrupted."""
    kind: Literal["pending_call"] = "pending_call"


@dataclass(frozen=True)
class PassthroughEvent:
    """An integration met a message it cannot read (a shape the provider allows that compactkit
    does not model) and passed it through untouched: sent as it came, kept in the history,
    never dropped or folded."""

    index: int
    """The message's position in the list it came in."""
    reason: str
    """Why it could not be read."""
    format: str
    """The format of the list (``"chat"``, ``"responses"``, ``"anthropic"``)."""
    kind: Literal["passthrough"] = "passthrough"


@dataclass(frozen=True)
class BackgroundCompactionEvent:
    """A background compaction started, was applied, or ended without changing the memory.

    ``discarded``: the span it folded is no longer what the memory holds (another compaction,
    a restore, a pin); ``unchanged``: there was nothing to fold; ``failed``: the compressor
    failed or raised; ``cancelled``: ``cancel()`` or ``close()`` stopped it; ``skipped``:
    another compactor held the session's compaction lease, so the compressor was never called.
    In those cases the memory is exactly as it was.
    """

    status: Literal[
        "started", "applied", "discarded", "unchanged", "failed", "cancelled", "skipped"
    ]
    """What happened."""
    compressor: str
    """The compressor that ran in the background."""
    started_version: int | None = None
    """The memory's version when the background compaction read it."""
    waited_s: float | None = None
    """How long the step waited for it at the hard threshold (``None``: it did not wait)."""
    tokens_before: int | None = None
    """Request tokens before, by the compressor's count."""
    tokens_after: int | None = None
    """Request tokens after."""
    error: str | None = None
    """Why it was discarded, failed or cancelled."""
    result: CompactResult | None = field(default=None, repr=False, compare=False)
    """The compressor's result, when there was one."""
    kind: Literal["background_compaction"] = "background_compaction"


Event: TypeAlias = (
    ProjectionEvent
    | CompactionEvent
    | CompactionVetoed
    | CompactionSkipped
    | ModelCallEvent
    | ModelRetryEvent
    | OverflowEvent
    | ToolCallEvent
    | PendingCallEvent
    | PassthroughEvent
    | BackgroundCompactionEvent
)
"""Any event the governor or the agent loop reports."""

EventHandler: TypeAlias = Callable[[Event], None]
"""An ``on_event`` callback."""


def emit(event: Event, handler: EventHandler | None = None) -> Event:
    """Log ``event`` under the ``compactkit`` logger and hand it to ``handler``; returns it."""
    level = _level(event)
    if logger.isEnabledFor(level):
        logger.log(level, "%s: %s", event.kind, _describe(event))
    if handler is not None:
        handler(event)
    return event


def _level(event: Event) -> int:
    if isinstance(event, CompactionEvent):
        return logging.WARNING if event.outcome == "failed" else logging.INFO
    if isinstance(event, ModelCallEvent):
        return logging.WARNING if event.error else logging.DEBUG
    if isinstance(event, (OverflowEvent, PassthroughEvent)):
        return logging.WARNING
    if isinstance(event, ToolCallEvent):
        return logging.INFO if event.is_error else logging.DEBUG
    if isinstance(event, ProjectionEvent):
        return logging.DEBUG
    if isinstance(event, BackgroundCompactionEvent):
        return logging.WARNING if event.status == "failed" else logging.INFO
    return logging.INFO  # retries, vetoes, pending calls


def _describe(event: Event) -> str:
    if isinstance(event, CompactionEvent):
        text = (
            f"{event.compressor} {event.outcome} applied={event.applied} forced={event.forced} "
            f"tokens {event.tokens_before}->{event.tokens_after} "
            f"items {event.items_before}->{event.items_after}"
        )
        return f"{text}: {event.error}" if event.error else text
    if isinstance(event, CompactionVetoed):
        return f"vetoed at {event.request.state.tokens:,} tokens (forced={event.request.forced})"
    if isinstance(event, CompactionSkipped):
        return f"skipped at {event.request.state.tokens:,} tokens: {event.holder!r} is compacting"
    if isinstance(event, ProjectionEvent):
        return (
            f"{event.tokens:,}/{event.budget:,} tokens, kept {event.kept} masked {event.masked} "
            f"omitted {event.omitted}"
        )
    fields = {
        name: value for name, value in vars(event).items() if name != "kind" and value is not None
    }
    return " ".join(f"{name}={value!r}" for name, value in fields.items())
