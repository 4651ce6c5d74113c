"""The ``compact_context`` tool: the agent asks for a compaction at a good moment.

``Agent(..., budget_visible=True)`` adds it to every session (bound to the session's memory),
beside the budget status line at the end of every request; the framework integrations offer the
same function as their own tool types. The governor honours a request at the next step when it
can make progress, and the tool's answer says plainly what will happen
(``Governor.request_compaction``).
"""

from __future__ import annotations

from collections.abc import Callable

from compactkit.memory import AgentMemory
from compactkit.runtime.governor import Governor
from compactkit.runtime.tools import FunctionTool

__all__ = ["budget_tools"]

COMPACT_TOOL_NAME = "compact_context"
"""The name of the tool (an agent's own tools may not use it with ``budget_visible=True``)."""

COMPACT_TOOL_DESCRIPTION = (
    "Ask for this conversation's context to be compacted before your next request: older turns "
    "are folded into a summary and the newest turn stays whole. Call it between subtasks, when "
    "what came before no longer needs to be read in full; the <context-status> line at the end "
    "of each request shows how full the context is. Returns whether a compaction will run."
)


def compact_context_function(
    governor: Governor, memory_of: Callable[[], AgentMemory]
) -> Callable[[], str]:
    """The plain ``compact_context()`` function for the memory ``memory_of()`` returns at the
    call (the framework integrations look up the conversation the call runs in)."""

    def compact_context() -> str:
        return governor.request_compaction(memory_of())

    compact_context.__doc__ = COMPACT_TOOL_DESCRIPTION
    return compact_context


def budget_tools(governor: Governor, memory: AgentMemory) -> list[FunctionTool]:
    """The ``compact_context`` tool over ``memory``, honoured by ``governor``."""
    function = compact_context_function(governor, lambda: memory)
    return [FunctionTool.from_function(function)]
