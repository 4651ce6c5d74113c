"""compactkit: context governance for long-running LLM agents.

The top level holds what the three jobs need — govern an agent you already have
(``compact_messages``, ``MessageCompactor``, ``Governor``), run one (``Agent``, ``tool``, the
memories and session stores), and choose or write a compressor (``FunctionCompressor`` takes a
plain function). Every other public name is exported by its layer's package and documented
there: ``compactkit.items``, ``compactkit.budget``, ``compactkit.formats``,
``compactkit.compressors``, ``compactkit.governance``, ``compactkit.memory``,
``compactkit.sessions``, ``compactkit.sql``, ``compactkit.runtime``, ``compactkit.integrations``,
``compactkit.evals``, ``compactkit.errors``.

Everything loads with its module on first use: ``import compactkit`` loads none of its layers,
and counting or projecting never loads the agent runtime, the summarizer or the SDKs. The SQL
backends need SQLAlchemy only when they are used (``pip install 'compactkit[sql]'``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from compactkit._lazy import lazy_exports
from compactkit._version import __version__ as __version__

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and IDEs
    from compactkit.budget.profiles import (
        BudgetPolicy,
        ModelProfile,
        get_profile,
    )
    from compactkit.budget.tokens import (
        TokenCounter,
        counter_for,
    )
    from compactkit.checkup import (
        doctor,
    )
    from compactkit.compressors.base import (
        MemoryCompressor,
    )
    from compactkit.compressors.digest import (
        DigestCompressor,
    )
    from compactkit.compressors.function import (
        FunctionCompressor,
    )
    from compactkit.compressors.ladder import (
        LadderCompressor,
    )
    from compactkit.compressors.masking import (
        MaskingCompressor,
    )
    from compactkit.compressors.summary import (
        SummaryCompressor,
    )
    from compactkit.compressors.summary.llm import (
        LLM,
        OpenAIChatLLM,
    )
    from compactkit.compressors.window import (
        WindowedCompressor,
    )
    from compactkit.errors import (
        BudgetError,
        CompactkitError,
        ConcurrencyError,
        ConfigError,
        ContextOverflowError,
        ModelError,
        SummarizationError,
    )
    from compactkit.formats.chat import (
        chat_to_items,
        items_to_chat,
    )
    from compactkit.governance.policy import (
        CompactPolicy,
        ratio_over,
        tokens_over,
    )
    from compactkit.governance.projector import (
        ContextProjector,
        Projection,
    )
    from compactkit.integrations.messages import (
        CompactedMessages,
        MessageCompactor,
        compact_messages,
    )
    from compactkit.items import (
        FunctionCall,
        FunctionCallOutput,
        Item,
        Message,
        Tool,
    )
    from compactkit.items.snapshot import (
        CompactResult,
        MemorySnapshot,
    )
    from compactkit.memory.base import (
        AgentMemory,
    )
    from compactkit.memory.in_memory import (
        InMemoryMemory,
    )
    from compactkit.runtime.agent import (
        Agent,
    )
    from compactkit.runtime.background import (
        BackgroundCompaction,
    )
    from compactkit.runtime.governor import (
        Governor,
    )
    from compactkit.runtime.result import (
        RunResult,
    )
    from compactkit.runtime.tools import (
        tool,
    )
    from compactkit.sessions.file import (
        FileSessionStore,
    )
    from compactkit.sessions.in_memory import (
        InMemorySessionStore,
    )
    from compactkit.sessions.session import (
        AgentSession,
    )
    from compactkit.sessions.store import (
        SessionStore,
    )
    from compactkit.sql.memory import (
        SQLMemory,
    )
    from compactkit.sql.store import (
        SQLSessionStore,
    )


# Library logging stays silent unless the application configures it.
logging.getLogger("compactkit").addHandler(logging.NullHandler())

# Every name loads with its module on first use (PEP 562), so `import compactkit` costs almost
# nothing and `count`/`project` never load the runtime, compressors or SDKs.
_LAZY = {
    "LLM": "compactkit.compressors.summary.llm",
    "Agent": "compactkit.runtime.agent",
    "AgentMemory": "compactkit.memory.base",
    "AgentSession": "compactkit.sessions.session",
    "BackgroundCompaction": "compactkit.runtime.background",
    "BudgetError": "compactkit.errors",
    "BudgetPolicy": "compactkit.budget.profiles",
    "CompactPolicy": "compactkit.governance.policy",
    "CompactResult": "compactkit.items.snapshot",
    "CompactedMessages": "compactkit.integrations.messages",
    "CompactkitError": "compactkit.errors",
    "ConcurrencyError": "compactkit.errors",
    "ConfigError": "compactkit.errors",
    "ContextOverflowError": "compactkit.errors",
    "ContextProjector": "compactkit.governance.projector",
    "DigestCompressor": "compactkit.compressors.digest",
    "FileSessionStore": "compactkit.sessions.file",
    "FunctionCall": "compactkit.items",
    "FunctionCallOutput": "compactkit.items",
    "FunctionCompressor": "compactkit.compressors.function",
    "Governor": "compactkit.runtime.governor",
    "InMemoryMemory": "compactkit.memory.in_memory",
    "InMemorySessionStore": "compactkit.sessions.in_memory",
    "Item": "compactkit.items",
    "LadderCompressor": "compactkit.compressors.ladder",
    "MaskingCompressor": "compactkit.compressors.masking",
    "MemoryCompressor": "compactkit.compressors.base",
    "MemorySnapshot": "compactkit.items.snapshot",
    "Message": "compactkit.items",
    "MessageCompactor": "compactkit.integrations.messages",
    "ModelError": "compactkit.errors",
    "ModelProfile": "compactkit.budget.profiles",
    "OpenAIChatLLM": "compactkit.compressors.summary.llm",
    "Projection": "compactkit.governance.projector",
    "RunResult": "compactkit.runtime.result",
    "SQLMemory": "compactkit.sql.memory",
    "SQLSessionStore": "compactkit.sql.store",
    "SessionStore": "compactkit.sessions.store",
    "SummarizationError": "compactkit.errors",
    "SummaryCompressor": "compactkit.compressors.summary",
    "TokenCounter": "compactkit.budget.tokens",
    "Tool": "compactkit.items",
    "WindowedCompressor": "compactkit.compressors.window",
    "chat_to_items": "compactkit.formats.chat",
    "compact_messages": "compactkit.integrations.messages",
    "counter_for": "compactkit.budget.tokens",
    "doctor": "compactkit.checkup",
    "get_profile": "compactkit.budget.profiles",
    "items_to_chat": "compactkit.formats.chat",
    "ratio_over": "compactkit.governance.policy",
    "tokens_over": "compactkit.governance.policy",
    "tool": "compactkit.runtime.tools",
}

# Names that left the top level (issue #31): they still work for one release, with a
# DeprecationWarning naming the import to use instead.
_MOVED = {
    "ANTHROPIC_COMPACT_BETA": "compactkit.compressors",
    "DEFAULT_RESERVED_OUTPUT": "compactkit.budget",
    "DEFAULT_SUMMARY_ROLE": "compactkit.items",
    "FORMATS": "compactkit.formats",
    "ITEMS_ADAPTER": "compactkit.items",
    "MASK_PREFIX": "compactkit.compressors",
    "PROFILES_ENV": "compactkit.budget",
    "PROMPT_VERSION": "compactkit.compressors",
    "SECTIONS": "compactkit.compressors",
    "SESSION_SCHEMA_VERSION": "compactkit.sessions",
    "SUMMARY_FRAME": "compactkit.items",
    "SUMMARY_KEY_ENV": "compactkit.items",
    "SUMMARY_NAME": "compactkit.items",
    "SUMMARY_TITLE": "compactkit.compressors",
    "AnthropicPrompt": "compactkit.formats",
    "BackgroundCompactionEvent": "compactkit.runtime",
    "BackgroundStats": "compactkit.runtime",
    "BaseMemory": "compactkit.memory",
    "Budget": "compactkit.budget",
    "CachedAnthropicPrompt": "compactkit.formats",
    "ChatMessage": "compactkit.compressors",
    "ChatProblem": "compactkit.formats",
    "CircuitBreaker": "compactkit.compressors",
    "CircuitOpenError": "compactkit.errors",
    "CompactStats": "compactkit.items",
    "CompactionEvent": "compactkit.runtime",
    "CompactionRecord": "compactkit.sql",
    "CompactionRequest": "compactkit.runtime",
    "CompactionVetoed": "compactkit.runtime",
    "ContentPart": "compactkit.items",
    "Counting": "compactkit.budget",
    "Dropped": "compactkit.formats",
    "EncodingUnavailableError": "compactkit.errors",
    "EstimateCounter": "compactkit.budget",
    "Event": "compactkit.runtime",
    "FactClass": "compactkit.compressors",
    "FactCount": "compactkit.compressors",
    "FactReport": "compactkit.compressors",
    "Format": "compactkit.formats",
    "FormatError": "compactkit.errors",
    "FunctionTool": "compactkit.runtime",
    "GovernedStep": "compactkit.runtime",
    "Group": "compactkit.items",
    "ImagePart": "compactkit.items",
    "ItemsChain": "compactkit.items",
    "ItemsView": "compactkit.items",
    "LeaseLostError": "compactkit.errors",
    "MaxStepsError": "compactkit.errors",
    "MessageRules": "compactkit.budget",
    "ModelCallEvent": "compactkit.runtime",
    "ModelRetryEvent": "compactkit.runtime",
    "Outcome": "compactkit.items",
    "OverflowEvent": "compactkit.runtime",
    "PassthroughEvent": "compactkit.runtime",
    "PendingCallEvent": "compactkit.runtime",
    "PolicyState": "compactkit.governance",
    "Prices": "compactkit.budget",
    "ProblemKind": "compactkit.formats",
    "ProfileRegistry": "compactkit.budget",
    "ProjectionEvent": "compactkit.runtime",
    "ProjectionReport": "compactkit.governance",
    "PromptCaching": "compactkit.budget",
    "PromptProblem": "compactkit.formats",
    "ProviderCompaction": "compactkit.items",
    "ProviderCompactor": "compactkit.compressors",
    "RawPart": "compactkit.items",
    "Reasoning": "compactkit.items",
    "RecallHit": "compactkit.memory",
    "RecallUnsupportedError": "compactkit.errors",
    "Recallable": "compactkit.memory",
    "RetryPolicy": "compactkit.compressors",
    "Role": "compactkit.items",
    "RunnableSession": "compactkit.runtime",
    "SQLSessionInfo": "compactkit.sql",
    "SectionKey": "compactkit.compressors",
    "SectionSpec": "compactkit.compressors",
    "SessionBusyError": "compactkit.errors",
    "SessionNotFoundError": "compactkit.errors",
    "SessionState": "compactkit.sessions",
    "SnapshotTrigger": "compactkit.memory",
    "StateSource": "compactkit.sessions",
    "StepRecord": "compactkit.runtime",
    "StorageError": "compactkit.errors",
    "SummaryDocument": "compactkit.compressors",
    "SummaryRole": "compactkit.items",
    "TextPart": "compactkit.items",
    "TiktokenCounter": "compactkit.budget",
    "TokenCount": "compactkit.budget",
    "ToolCallEvent": "compactkit.runtime",
    "ToolOutcome": "compactkit.runtime",
    "ToolSchemaRules": "compactkit.budget",
    "Transcript": "compactkit.formats",
    "Trigger": "compactkit.governance",
    "Usage": "compactkit.runtime",
    "add_cache_breakpoints": "compactkit.formats",
    "all_of": "compactkit.governance",
    "anthropic_to_items": "compactkit.formats",
    "any_of": "compactkit.governance",
    "budget_for": "compactkit.budget",
    "default_registry": "compactkit.budget",
    "digest_items": "compactkit.compressors",
    "dump_items": "compactkit.items",
    "dump_transcript": "compactkit.formats",
    "every_turns": "compactkit.governance",
    "export_portable": "compactkit.compressors",
    "format_ref": "compactkit.memory",
    "get_encoding": "compactkit.budget",
    "group_items": "compactkit.items",
    "image_tokens": "compactkit.budget",
    "is_masked": "compactkit.compressors",
    "is_summary_message": "compactkit.items",
    "item_text": "compactkit.items",
    "items_over": "compactkit.governance",
    "items_to_anthropic": "compactkit.formats",
    "items_to_responses": "compactkit.formats",
    "leading_instructions": "compactkit.items",
    "list_sql_sessions": "compactkit.sql",
    "load_items": "compactkit.items",
    "load_transcript": "compactkit.formats",
    "mask_output": "compactkit.compressors",
    "new_session": "compactkit.sessions",
    "parse_ref": "compactkit.memory",
    "parse_transcript": "compactkit.formats",
    "recall_tools": "compactkit.runtime.recall_tools",
    "require_recall": "compactkit.memory",
    "responses_to_items": "compactkit.formats",
    "resume_session": "compactkit.sessions",
    "set_summary_key": "compactkit.items",
    "summary_message": "compactkit.items",
    "summary_prompt": "compactkit.compressors",
    "tools_from_anthropic": "compactkit.formats",
    "tools_from_chat": "compactkit.formats",
    "tools_from_responses": "compactkit.formats",
    "tools_to_anthropic": "compactkit.formats",
    "tools_to_chat": "compactkit.formats",
    "tools_to_responses": "compactkit.formats",
    "unseal_summary": "compactkit.items",
    "usage_over": "compactkit.governance",
    "validate_anthropic": "compactkit.formats",
    "validate_chat": "compactkit.formats",
    "validate_items": "compactkit.formats",
    "validate_responses": "compactkit.formats",
}

__getattr__, __dir__ = lazy_exports(globals(), _LAZY, _MOVED)

__all__ = [
    "LLM",
    "Agent",
    "AgentMemory",
    "AgentSession",
    "BackgroundCompaction",
    "BudgetError",
    "BudgetPolicy",
    "CompactPolicy",
    "CompactResult",
    "CompactedMessages",
    "CompactkitError",
    "ConcurrencyError",
    "ConfigError",
    "ContextOverflowError",
    "ContextProjector",
    "DigestCompressor",
    "FileSessionStore",
    "FunctionCall",
    "FunctionCallOutput",
    "FunctionCompressor",
    "Governor",
    "InMemoryMemory",
    "InMemorySessionStore",
    "Item",
    "LadderCompressor",
    "MaskingCompressor",
    "MemoryCompressor",
    "MemorySnapshot",
    "Message",
    "MessageCompactor",
    "ModelError",
    "ModelProfile",
    "OpenAIChatLLM",
    "Projection",
    "RunResult",
    "SQLMemory",
    "SQLSessionStore",
    "SessionStore",
    "SummarizationError",
    "SummaryCompressor",
    "TokenCounter",
    "Tool",
    "WindowedCompressor",
    "chat_to_items",
    "compact_messages",
    "counter_for",
    "doctor",
    "get_profile",
    "items_to_chat",
    "ratio_over",
    "tokens_over",
    "tool",
]
