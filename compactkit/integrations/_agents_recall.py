"""``recall`` and ``expand`` as OpenAI Agents SDK ``FunctionTool``s (re-exported by
``compactkit.integrations.openai_agents``)."""

from __future__ import annotations

from agents import FunctionTool, function_tool

from compactkit.budget import TokenCounter
from compactkit.runtime.recall_tools import DEFAULT_RECALL_TOKENS, recall_functions

__all__ = ["agents_recall_tools"]


def agents_recall_tools(
    memory: object,
    *,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    counter: TokenCounter | None = None,
    limit: int = 5,
) -> list[FunctionTool]:
    """The ``recall(query)`` and ``expand(ref)`` tools over ``memory``, as the SDK's tools.

    Pass the compactkit memory a ``CompactkitSession`` stores the history in (``SQLMemory``,
    ``InMemoryMemory``): what its compactions fold is what the agent can search. Results are
    quoted data capped at ``max_tokens``, exactly as ``compactkit.recall_tools`` returns them.

    Args:
        memory: A memory that offers recall.
        max_tokens: The most tokens one result adds to the prompt.
        counter: Counts those tokens (default: ``counter_for("gpt-4o")``).
        limit: Hits one recall call returns at most.

    Raises:
        RecallUnsupportedError: ``memory`` offers no recall (an SDK session such as
            ``SQLiteSession`` keeps no archive compactkit can search).
        ConfigError: ``max_tokens`` is below 50.
    """
    functions = recall_functions(memory, max_tokens=max_tokens, counter=counter, limit=limit)
    return [function_tool(function, docstring_style="google") for function in functions]
