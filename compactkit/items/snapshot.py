"""The types memory and governance share: snapshots and compaction results.

A ``MemorySnapshot`` is what a memory holds at one moment: the running summary (a field, never an
item that compaction could drop) and the active items. Compressors read a snapshot and return a
``CompactResult`` holding a new snapshot; a memory swaps it in atomically with ``apply``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from compactkit.errors import ConfigError
from compactkit.items.model import Item, Message

__all__ = [
    "SUMMARY_NAME",
    "CompactResult",
    "CompactStats",
    "MemorySnapshot",
    "Outcome",
    "SummaryRole",
    "is_summary_message",
    "leading_instructions",
    "summary_message",
]

SUMMARY_NAME = "compactkit_summary"
"""The marker of a rendered summary message (its ``name`` in Chat Completions format).

Reading a conversation back, a message carrying this marker is the existing summary to merge
into — never a system prompt or a user turn.
"""

SummaryRole: TypeAlias = Literal["system", "developer", "user"]
"""The role a rendered summary speaks with. ``system`` matches the reference SDK; ``user`` keeps a
summary distilled from untrusted tool output from gaining system authority."""

Outcome: TypeAlias = Literal["compacted", "unchanged", "fallback", "failed"]
"""What a compaction did.

``compacted``: the snapshot is smaller. ``unchanged``: nothing needed doing (already under the
target, or nothing foldable). ``fallback``: the configured compressor failed and a cheaper one ran
instead. ``failed``: nothing changed and ``error`` says why.
"""


class MemorySnapshot(BaseModel):
    """The state of a memory at one moment: the running summary plus the active items."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    summary: str = ""
    """The running summary of everything folded so far; empty when nothing was folded."""
    items: tuple[Item, ...] = ()
    """The active items, oldest first."""
    version: int | None = None
    """The memory's version when the snapshot was read (``None`` when not read from a memory).

    ``AgentMemory.apply`` refuses a result built on an older version (``ConcurrencyError``).
    """

    @classmethod
    def of(cls, items: Sequence[Item], summary: str = "") -> MemorySnapshot:
        """A snapshot of ``items`` with ``summary`` (convenience for tests and scripts)."""
        return cls(summary=summary, items=tuple(items))

    @classmethod
    def from_items(cls, items: Sequence[Item]) -> MemorySnapshot:
        """Read a conversation back: messages marked as the summary become ``summary``.

        Several marked messages (unusual) are joined in order; everything else stays an item.
        """
        summaries = [i.text for i in items if isinstance(i, Message) and is_summary_message(i)]
        rest = tuple(i for i in items if not is_summary_message(i))
        return cls(summary="\n\n".join(s for s in summaries if s), items=rest)

    def render_items(self, *, summary_role: SummaryRole = "system") -> list[Item]:
        """The items a model would see: the summary as its own marked message right after the
        leading system/developer messages (which are never altered), then the rest."""
        if not self.summary:
            return list(self.items)
        lead = leading_instructions(self.items)
        return [
            *self.items[:lead],
            summary_message(self.summary, summary_role),
            *self.items[lead:],
        ]


def require_snapshot(value: object, caller: str) -> MemorySnapshot:
    """``value`` when it is a ``MemorySnapshot``; otherwise a ``ConfigError`` saying what to pass.

    A memory or a list of items is the usual mistake: ``memory.items`` holds the rendered summary
    message, so reading it as a snapshot would send (or fold) the summary twice.
    """
    if isinstance(value, MemorySnapshot):
        return value
    if callable(getattr(value, "snapshot", None)):
        hint = "pass memory.snapshot()"
    else:
        hint = (
            "build one with MemorySnapshot.of(items, summary=...), or "
            "MemorySnapshot.from_items(items) for a conversation read back from memory.items"
        )
    raise ConfigError(f"{caller} takes a MemorySnapshot, got {type(value).__name__}: {hint}")


def summary_message(summary: str, role: SummaryRole = "system") -> Message:
    """The message that carries ``summary`` into a prompt, marked with ``SUMMARY_NAME``."""
    return Message(role=role, content=summary, name=SUMMARY_NAME)


def is_summary_message(item: Item) -> bool:
    """Whether ``item`` is a rendered summary (carries the ``SUMMARY_NAME`` marker)."""
    return isinstance(item, Message) and item.name == SUMMARY_NAME


def leading_instructions(items: Sequence[Item]) -> int:
    """How many leading items are system/developer messages (the instructions)."""
    count = 0
    for item in items:
        if not (isinstance(item, Message) and item.role in ("system", "developer")):
            break
        if is_summary_message(item):
            break
        count += 1
    return count


class CompactStats(BaseModel):
    """Measurements of one compaction."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    compressor: str
    """The compressor that produced the result (``"window"``, ``"ladder>digest"``, …)."""
    tokens_before: int | None = None
    """Tokens of the snapshot before (as rendered for the model), when counted."""
    tokens_after: int | None = None
    """Tokens of the snapshot after, when counted."""
    items_before: int = 0
    """Active items before."""
    items_after: int = 0
    """Active items after."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Compressor-specific facts (masked outputs, summarizer prompt version, calls, …)."""


class CompactResult(BaseModel):
    """What a compressor returns; compressors report run-time failures here instead of raising."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    snapshot: MemorySnapshot
    """The new snapshot (the input snapshot itself when the outcome is ``unchanged``/``failed``)."""
    folded: tuple[Item, ...] = ()
    """The items removed from the active history (folded into the summary or dropped)."""
    outcome: Outcome
    """What happened (see ``Outcome``)."""
    stats: CompactStats
    """Measurements."""
    error: str | None = None
    """Why the compaction failed or fell back; ``None`` otherwise."""
    cause: BaseException | None = Field(default=None, exclude=True, repr=False)
    """The exception behind ``error``, when there was one (not serialised)."""

    @property
    def changed(self) -> bool:
        """Whether the snapshot differs from the input (``compacted`` or ``fallback``)."""
        return self.outcome in ("compacted", "fallback")
