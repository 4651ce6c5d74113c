"""compactkit: context governance for long-running LLM agents.

Everything public is importable from here. The SQL backends (``SQLMemory``,
``SQLSessionStore``, …) load on first use, so SQLAlchemy is only needed when they are used
(``pip install 'compactkit[sql]'``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from compactkit.budget.profile import PromptCaching
from compactkit.budget.profiles import (
    DEFAULT_RESERVED_OUTPUT,
    PROFILES_ENV,
    Budget,
    BudgetPolicy,
    Counting,
    MessageRules,
    ModelProfile,
    ProfileRegistry,
    ToolSchemaRules,
    budget_for,
    default_registry,
    get_profile,
)
from compactkit.budget.tokens import (
    EstimateCounter,
    TiktokenCounter,
    TokenCount,
    TokenCounter,
    counter_for,
    get_encoding,
    image_tokens,
)
from compactkit.compressors.base import (
    MemoryCompressor,
)
from compactkit.compressors.digest import (
    DigestCompressor,
    digest_items,
)
from compactkit.compressors.ladder import (
    LadderCompressor,
)
from compactkit.compressors.masking import (
    MASK_PREFIX,
    MaskingCompressor,
    is_masked,
    mask_output,
)
from compactkit.compressors.report import (
    FactClass,
    FactCount,
    FactReport,
)
from compactkit.compressors.sections import (
    SECTIONS,
    SUMMARY_TITLE,
    SectionKey,
    SectionSpec,
    SummaryDocument,
)
from compactkit.compressors.summary import (
    PROMPT_VERSION,
    CircuitBreaker,
    RetryPolicy,
    SummaryCompressor,
    summary_prompt,
)
from compactkit.compressors.summary.llm import (
    LLM,
    ChatMessage,
    OpenAIChatLLM,
)
from compactkit.compressors.window import (
    WindowedCompressor,
)
from compactkit.errors import (
    BudgetError,
    CircuitOpenError,
    CompactkitError,
    ConcurrencyError,
    ConfigError,
    ContextOverflowError,
    EncodingUnavailableError,
    FormatError,
    MaxStepsError,
    ModelError,
    SessionNotFoundError,
    StorageError,
    SummarizationError,
)
from compactkit.formats.anthropic import (
    AnthropicPrompt,
    anthropic_to_items,
    items_to_anthropic,
    tools_from_anthropic,
    tools_to_anthropic,
)
from compactkit.formats.anthropic_cache import (
    CachedAnthropicPrompt,
    add_cache_breakpoints,
)
from compactkit.formats.chat import (
    ChatProblem,
    chat_to_items,
    items_to_chat,
    tools_from_chat,
    tools_to_chat,
    validate_chat,
)
from compactkit.formats.responses import (
    items_to_responses,
    responses_to_items,
    tools_from_responses,
    tools_to_responses,
)
from compactkit.formats.transcript import (
    FORMATS,
    Dropped,
    Format,
    Transcript,
    dump_transcript,
    load_transcript,
    parse_transcript,
)
from compactkit.formats.validate import (
    ProblemKind,
    PromptProblem,
    validate_anthropic,
    validate_items,
    validate_responses,
)
from compactkit.governance.policy import (
    CompactPolicy,
    PolicyState,
    Trigger,
    all_of,
    any_of,
    every_turns,
    items_over,
    ratio_over,
    tokens_over,
    usage_over,
)
from compactkit.governance.projector import (
    ContextProjector,
    Projection,
    ProjectionReport,
)
from compactkit.items import (
    ITEMS_ADAPTER,
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    RawPart,
    Reasoning,
    Role,
    TextPart,
    Tool,
    dump_items,
    item_text,
    load_items,
)
from compactkit.items.groups import (
    Group,
    group_items,
)
from compactkit.items.snapshot import (
    DEFAULT_SUMMARY_ROLE,
    SUMMARY_FRAME,
    SUMMARY_KEY_ENV,
    SUMMARY_NAME,
    CompactResult,
    CompactStats,
    MemorySnapshot,
    Outcome,
    SummaryRole,
    is_summary_message,
    leading_instructions,
    set_summary_key,
    summary_message,
    unseal_summary,
)
from compactkit.items.view import ItemsChain, ItemsView
from compactkit.memory.base import (
    AgentMemory,
    BaseMemory,
    SnapshotTrigger,
)
from compactkit.memory.in_memory import (
    InMemoryMemory,
)
from compactkit.runtime.agent import (
    Agent,
)
from compactkit.runtime.background import (
    BackgroundCompaction,
    BackgroundStats,
)
from compactkit.runtime.events import (
    BackgroundCompactionEvent,
    CompactionEvent,
    CompactionRequest,
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
from compactkit.runtime.governor import (
    GovernedStep,
    Governor,
)
from compactkit.runtime.result import (
    RunResult,
    StepRecord,
    Usage,
)
from compactkit.runtime.session import (
    RunnableSession,
)
from compactkit.runtime.tools import (
    FunctionTool,
    ToolOutcome,
    tool,
)
from compactkit.sessions.file import (
    FileSessionStore,
)
from compactkit.sessions.in_memory import (
    InMemorySessionStore,
)
from compactkit.sessions.session import (
    SESSION_SCHEMA_VERSION,
    AgentSession,
    new_session,
    resume_session,
)
from compactkit.sessions.state import (
    SessionState,
    StateSource,
)
from compactkit.sessions.store import (
    SessionStore,
)

if TYPE_CHECKING:
    from compactkit.checkup import doctor
    from compactkit.sql.memory import (
        CompactionRecord,
        SQLMemory,
        SQLSessionInfo,
        list_sql_sessions,
    )
    from compactkit.sql.store import (
        SQLSessionStore,
    )

__version__ = "0.1.0"

# Library logging stays silent unless the application configures it.
logging.getLogger("compactkit").addHandler(logging.NullHandler())

_LAZY = {
    "CompactionRecord": "compactkit.sql.memory",
    "SQLMemory": "compactkit.sql.memory",
    "SQLSessionInfo": "compactkit.sql.memory",
    "SQLSessionStore": "compactkit.sql.store",
    "doctor": "compactkit.checkup",
    "list_sql_sessions": "compactkit.sql.memory",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'compactkit' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_RESERVED_OUTPUT",
    "DEFAULT_SUMMARY_ROLE",
    "FORMATS",
    "ITEMS_ADAPTER",
    "LLM",
    "MASK_PREFIX",
    "PROFILES_ENV",
    "PROMPT_VERSION",
    "SECTIONS",
    "SESSION_SCHEMA_VERSION",
    "SUMMARY_FRAME",
    "SUMMARY_KEY_ENV",
    "SUMMARY_NAME",
    "SUMMARY_TITLE",
    "Agent",
    "AgentMemory",
    "AgentSession",
    "AnthropicPrompt",
    "BackgroundCompaction",
    "BackgroundCompactionEvent",
    "BackgroundStats",
    "BaseMemory",
    "Budget",
    "BudgetError",
    "BudgetPolicy",
    "CachedAnthropicPrompt",
    "ChatMessage",
    "ChatProblem",
    "CircuitBreaker",
    "CircuitOpenError",
    "CompactPolicy",
    "CompactResult",
    "CompactStats",
    "CompactionEvent",
    "CompactionRecord",
    "CompactionRequest",
    "CompactionVetoed",
    "CompactkitError",
    "ConcurrencyError",
    "ConfigError",
    "ContentPart",
    "ContextOverflowError",
    "ContextProjector",
    "Counting",
    "DigestCompressor",
    "Dropped",
    "EncodingUnavailableError",
    "EstimateCounter",
    "Event",
    "FactClass",
    "FactCount",
    "FactReport",
    "FileSessionStore",
    "Format",
    "FormatError",
    "FunctionCall",
    "FunctionCallOutput",
    "FunctionTool",
    "GovernedStep",
    "Governor",
    "Group",
    "ImagePart",
    "InMemoryMemory",
    "InMemorySessionStore",
    "Item",
    "ItemsChain",
    "ItemsView",
    "LadderCompressor",
    "MaskingCompressor",
    "MaxStepsError",
    "MemoryCompressor",
    "MemorySnapshot",
    "Message",
    "MessageRules",
    "ModelCallEvent",
    "ModelError",
    "ModelProfile",
    "ModelRetryEvent",
    "OpenAIChatLLM",
    "Outcome",
    "OverflowEvent",
    "PassthroughEvent",
    "PendingCallEvent",
    "PolicyState",
    "ProblemKind",
    "ProfileRegistry",
    "Projection",
    "ProjectionEvent",
    "ProjectionReport",
    "PromptCaching",
    "PromptProblem",
    "RawPart",
    "Reasoning",
    "RetryPolicy",
    "Role",
    "RunResult",
    "RunnableSession",
    "SQLMemory",
    "SQLSessionInfo",
    "SQLSessionStore",
    "SectionKey",
    "SectionSpec",
    "SessionNotFoundError",
    "SessionState",
    "SessionStore",
    "SnapshotTrigger",
    "StateSource",
    "StepRecord",
    "StorageError",
    "SummarizationError",
    "SummaryCompressor",
    "SummaryDocument",
    "SummaryRole",
    "TextPart",
    "TiktokenCounter",
    "TokenCount",
    "TokenCounter",
    "Tool",
    "ToolCallEvent",
    "ToolOutcome",
    "ToolSchemaRules",
    "Transcript",
    "Trigger",
    "Usage",
    "WindowedCompressor",
    "add_cache_breakpoints",
    "all_of",
    "anthropic_to_items",
    "any_of",
    "budget_for",
    "chat_to_items",
    "counter_for",
    "default_registry",
    "digest_items",
    "doctor",
    "dump_items",
    "dump_transcript",
    "every_turns",
    "get_encoding",
    "get_profile",
    "group_items",
    "image_tokens",
    "is_masked",
    "is_summary_message",
    "item_text",
    "items_over",
    "items_to_anthropic",
    "items_to_chat",
    "items_to_responses",
    "leading_instructions",
    "list_sql_sessions",
    "load_items",
    "load_transcript",
    "mask_output",
    "new_session",
    "parse_transcript",
    "ratio_over",
    "responses_to_items",
    "resume_session",
    "set_summary_key",
    "summary_message",
    "summary_prompt",
    "tokens_over",
    "tool",
    "tools_from_anthropic",
    "tools_from_chat",
    "tools_from_responses",
    "tools_to_anthropic",
    "tools_to_chat",
    "tools_to_responses",
    "unseal_summary",
    "usage_over",
    "validate_anthropic",
    "validate_chat",
    "validate_items",
    "validate_responses",
]
