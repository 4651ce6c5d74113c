"""compactkit: context governance for long-running LLM agents."""

from compactkit.errors import (
    BudgetError,
    CompactkitError,
    ConcurrencyError,
    ConfigError,
    EncodingUnavailableError,
    FormatError,
    StorageError,
    SummarizationError,
)
from compactkit.groups import Group, group_items
from compactkit.items import (
    ITEMS_ADAPTER,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    RawPart,
    Reasoning,
    TextPart,
    Tool,
)
from compactkit.snapshot import SUMMARY_NAME, CompactResult, CompactStats, MemorySnapshot, Outcome

__version__ = "0.1.0"

__all__ = [
    "ITEMS_ADAPTER",
    "SUMMARY_NAME",
    "BudgetError",
    "CompactResult",
    "CompactStats",
    "CompactkitError",
    "ConcurrencyError",
    "ConfigError",
    "EncodingUnavailableError",
    "FormatError",
    "FunctionCall",
    "FunctionCallOutput",
    "Group",
    "ImagePart",
    "Item",
    "Message",
    "MemorySnapshot",
    "Outcome",
    "RawPart",
    "Reasoning",
    "StorageError",
    "SummarizationError",
    "TextPart",
    "Tool",
    "group_items",
]
