"""The data model: items, groups and snapshots.

Owns the provider-neutral item types (``model``), the group helper every cut goes through
(``groups``) and the memory snapshot with the compaction result (``snapshot``). Imports nothing
from compactkit but ``errors``; every other layer builds on it.
"""

from compactkit.items.groups import Group, group_items
from compactkit.items.model import (
    ITEM_CLASSES,
    ITEMS_ADAPTER,
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    ProviderCompaction,
    RawPart,
    Reasoning,
    Role,
    TextPart,
    Tool,
    dump_items,
    item_text,
    load_items,
    with_field,
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

__all__ = [
    "DEFAULT_SUMMARY_ROLE",
    "ITEMS_ADAPTER",
    "ITEM_CLASSES",
    "SUMMARY_FRAME",
    "SUMMARY_KEY_ENV",
    "SUMMARY_NAME",
    "CompactResult",
    "CompactStats",
    "ContentPart",
    "FunctionCall",
    "FunctionCallOutput",
    "Group",
    "ImagePart",
    "Item",
    "ItemsChain",
    "ItemsView",
    "MemorySnapshot",
    "Message",
    "Outcome",
    "ProviderCompaction",
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
    "leading_instructions",
    "load_items",
    "set_summary_key",
    "summary_message",
    "unseal_summary",
    "with_field",
]
