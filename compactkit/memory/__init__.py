"""Memories: the facts of one session (see ``AgentMemory``)."""

from compactkit.memory.base import AgentMemory, BaseMemory, SnapshotTrigger
from compactkit.memory.in_memory import InMemoryMemory

__all__ = ["AgentMemory", "BaseMemory", "InMemoryMemory", "SnapshotTrigger"]
