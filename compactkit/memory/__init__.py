"""Memories: the facts of one session (see ``AgentMemory``), and recall over what they folded
(``Recallable``)."""

from compactkit.memory.archive import DroppedArchive
from compactkit.memory.base import AgentMemory, BaseMemory, SnapshotTrigger
from compactkit.memory.in_memory import InMemoryMemory
from compactkit.memory.recall import Recallable, RecallHit, format_ref, parse_ref, require_recall

__all__ = [
    "AgentMemory",
    "BaseMemory",
    "DroppedArchive",
    "InMemoryMemory",
    "RecallHit",
    "Recallable",
    "SnapshotTrigger",
    "format_ref",
    "parse_ref",
    "require_recall",
]
