"""The runtime layer: the shared governance step (``Governor``) and its events."""

from compactkit.runtime.events import (
    CompactionEvent,
    CompactionRequest,
    CompactionVetoed,
    Event,
    ModelCallEvent,
    ModelRetryEvent,
    OverflowEvent,
    PendingCallEvent,
    ProjectionEvent,
    ToolCallEvent,
)
from compactkit.runtime.governor import GovernedStep, Governor

__all__ = [
    "CompactionEvent",
    "CompactionRequest",
    "CompactionVetoed",
    "Event",
    "GovernedStep",
    "Governor",
    "ModelCallEvent",
    "ModelRetryEvent",
    "OverflowEvent",
    "PendingCallEvent",
    "ProjectionEvent",
    "ToolCallEvent",
]
