"""Plug compactkit into the agents people already run.

One module per target, each built on the shared governance step (``compactkit.runtime.Governor``):

* ``compactkit.integrations.messages``: plain message lists (Chat Completions, Responses input
  items, Anthropic messages), no framework: ``compact_messages`` and ``MessageCompactor``;
* ``compactkit.integrations.openai_agents``: the OpenAI Agents SDK (``pip install
  'compactkit[openai-agents]'``);
* ``compactkit.integrations.langchain``: LangChain v1 agents (``pip install 'compactkit[langchain]'``);
* ``compactkit.integrations.pydantic_ai``: pydantic-ai (``pip install 'compactkit[pydantic-ai]'``).

Importing this package imports no framework; importing an integration whose framework is not
installed raises one ``ImportError`` naming the ``pip install`` to run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compactkit._lazy import lazy_exports
from compactkit.integrations.messages import (
    CompactedMessages,
    MessageCompactor,
    MessageFormat,
    compact_messages,
)

if TYPE_CHECKING:
    from compactkit.integrations.langchain import (
        ClearToolOutputs,
        CompactkitMiddleware,
        LangChainLLM,
        langchain_recall_tools,
    )
    from compactkit.integrations.openai_agents import (
        CompactkitInputFilter,
        CompactkitSession,
        agents_recall_tools,
    )
    from compactkit.integrations.pydantic_ai import (
        CompactkitCapability,
        CompactkitHistory,
        pydantic_ai_recall_toolset,
    )

# Names whose module needs a framework: imported on first use (each integration adds its own).
_LAZY: dict[str, str] = {
    "CompactkitCapability": "compactkit.integrations.pydantic_ai",
    "CompactkitHistory": "compactkit.integrations.pydantic_ai",
    "ClearToolOutputs": "compactkit.integrations.langchain",
    "CompactkitMiddleware": "compactkit.integrations.langchain",
    "LangChainLLM": "compactkit.integrations.langchain",
    "CompactkitInputFilter": "compactkit.integrations.openai_agents",
    "CompactkitSession": "compactkit.integrations.openai_agents",
    "agents_recall_tools": "compactkit.integrations.openai_agents",
    "langchain_recall_tools": "compactkit.integrations.langchain",
    "pydantic_ai_recall_toolset": "compactkit.integrations.pydantic_ai",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)


__all__ = [
    "ClearToolOutputs",
    "CompactedMessages",
    "CompactkitCapability",
    "CompactkitHistory",
    "CompactkitInputFilter",
    "CompactkitMiddleware",
    "CompactkitSession",
    "LangChainLLM",
    "MessageCompactor",
    "MessageFormat",
    "agents_recall_tools",
    "compact_messages",
    "langchain_recall_tools",
    "pydantic_ai_recall_toolset",
]
