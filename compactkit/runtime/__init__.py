"""The runtime layer: the shared governance step (``Governor``), its events, and the reference
agent loop (``Agent`` → ``RunnableSession.run``) with tools, retries and overflow recovery."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compactkit._lazy import lazy_exports

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and IDEs
    from compactkit.runtime.agent import Agent
    from compactkit.runtime.background import BackgroundCompaction, BackgroundStats
    from compactkit.runtime.budget_tools import budget_tools
    from compactkit.runtime.events import (
        BackgroundCompactionEvent,
        CompactionEvent,
        CompactionRequest,
        CompactionSkipped,
        CompactionVetoed,
        Event,
        ModelCallEvent,
        ModelRetryEvent,
        OverflowEvent,
        PassthroughEvent,
        PendingCallEvent,
        ProjectionEvent,
        ToolCallEvent,
    )
    from compactkit.runtime.governor import GovernedStep, Governor
    from compactkit.runtime.recall_tools import recall_tools
    from compactkit.runtime.result import RunResult, StepRecord, Usage
    from compactkit.runtime.scheduling import (
        CompactionScheduler,
        ForegroundCompaction,
        Instructions,
        StepPlan,
        StepSeam,
    )
    from compactkit.runtime.session import RunnableSession
    from compactkit.runtime.tools import FunctionTool, ToolOutcome, tool

# Loaded with their module on first use (PEP 562): importing the package costs nothing, and a
# caller that needs one part does not load the others.
_LAZY: dict[str, str] = {
    "recall_tools": "compactkit.runtime.recall_tools",
    "budget_tools": "compactkit.runtime.budget_tools",
    "Agent": "compactkit.runtime.agent",
    "BackgroundCompaction": "compactkit.runtime.background",
    "BackgroundCompactionEvent": "compactkit.runtime.events",
    "BackgroundStats": "compactkit.runtime.background",
    "CompactionEvent": "compactkit.runtime.events",
    "CompactionScheduler": "compactkit.runtime.scheduling",
    "ForegroundCompaction": "compactkit.runtime.scheduling",
    "Instructions": "compactkit.runtime.scheduling",
    "StepPlan": "compactkit.runtime.scheduling",
    "StepSeam": "compactkit.runtime.scheduling",
    "CompactionRequest": "compactkit.runtime.events",
    "CompactionSkipped": "compactkit.runtime.events",
    "CompactionVetoed": "compactkit.runtime.events",
    "Event": "compactkit.runtime.events",
    "FunctionTool": "compactkit.runtime.tools",
    "GovernedStep": "compactkit.runtime.governor",
    "Governor": "compactkit.runtime.governor",
    "ModelCallEvent": "compactkit.runtime.events",
    "ModelRetryEvent": "compactkit.runtime.events",
    "OverflowEvent": "compactkit.runtime.events",
    "PassthroughEvent": "compactkit.runtime.events",
    "PendingCallEvent": "compactkit.runtime.events",
    "ProjectionEvent": "compactkit.runtime.events",
    "RunResult": "compactkit.runtime.result",
    "RunnableSession": "compactkit.runtime.session",
    "StepRecord": "compactkit.runtime.result",
    "ToolCallEvent": "compactkit.runtime.events",
    "ToolOutcome": "compactkit.runtime.tools",
    "Usage": "compactkit.runtime.result",
    "tool": "compactkit.runtime.tools",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)


__all__ = [
    "Agent",
    "BackgroundCompaction",
    "BackgroundCompactionEvent",
    "BackgroundStats",
    "CompactionEvent",
    "CompactionRequest",
    "CompactionScheduler",
    "CompactionSkipped",
    "CompactionVetoed",
    "Event",
    "ForegroundCompaction",
    "FunctionTool",
    "GovernedStep",
    "Governor",
    "Instructions",
    "ModelCallEvent",
    "ModelRetryEvent",
    "OverflowEvent",
    "PassthroughEvent",
    "PendingCallEvent",
    "ProjectionEvent",
    "RunResult",
    "RunnableSession",
    "StepPlan",
    "StepRecord",
    "StepSeam",
    "ToolCallEvent",
    "ToolOutcome",
    "Usage",
    "budget_tools",
    "recall_tools",
    "tool",
]
