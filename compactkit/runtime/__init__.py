"""The runtime layer: the shared governance step (``Governor``), its events, and the reference
agent loop (``Agent`` → ``RunnableSession.run``) with tools, retries and overflow recovery."""

from compactkit.runtime.agent import Agent
from compactkit.runtime.background import BackgroundCompaction, BackgroundStats
from compactkit.runtime.events import (
    BackgroundCompactionEvent,
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
from compactkit.runtime.result import RunResult, StepRecord, Usage
from compactkit.runtime.session import RunnableSession
from compactkit.runtime.tools import FunctionTool, ToolOutcome, tool

__all__ = [
    "Agent",
    "BackgroundCompaction",
    "BackgroundCompactionEvent",
    "BackgroundStats",
    "CompactionEvent",
    "CompactionRequest",
    "CompactionVetoed",
    "Event",
    "FunctionTool",
    "GovernedStep",
    "Governor",
    "ModelCallEvent",
    "ModelRetryEvent",
    "OverflowEvent",
    "PendingCallEvent",
    "ProjectionEvent",
    "RunResult",
    "RunnableSession",
    "StepRecord",
    "ToolCallEvent",
    "ToolOutcome",
    "Usage",
    "tool",
]
