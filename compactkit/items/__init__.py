"""The data model: items, groups and snapshots.

Owns the provider-neutral item types (``model``), the group helper every cut goes through
(``groups``) and the memory snapshot with the compaction result (``snapshot``). Imports nothing
from compactkit but ``errors``; every other layer builds on it.
"""

from compactkit.items.groups import Group, group_items
from compactkit.items.model import (
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
from compactkit.items.snapshot import (
    SUMMARY_NAME,
    CompactResult,
    CompactStats,
    MemorySnapshot,
    Outcome,
    SummaryRole,
    is_summary_message,
    summary_message,
)

__all__ = [
    "ITEMS_ADAPTER",
    "SUMMARY_NAME",
    "CompactResult",
    "CompactStats",
    "ContentPart",
    "FunctionCall",
    "FunctionCallOutput",
    "Group",
    "ImagePart",
    "Item",
    "MemorySnapshot",
    "Message",
    "Outcome",
    "RawPart",
    "Reasoning",
    "Role",
    "SummaryRole",
    "TextPart",
    "Tool",
    "dump_items",
    "group_items",
    "is_summary_message",
    "item_text",
    "load_items",
    "summary_message",
]
