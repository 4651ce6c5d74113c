"""A bound on a memory's archive: past it, the oldest archived items are dropped.

``InMemoryMemory(max_archived_items=..., max_archived_bytes=...)`` keeps at most that many
archived items (items a compaction folded away, originals of replaced ones) or that many bytes
of them (each item as its JSON, as a session file stores it); after each compaction and restore
the oldest are dropped first. What was dropped is reported (``memory.archive_dropped``: how
many, over the session's life, and the seqs they spanned since the last ``clear()``), saved with
the session, and ``expand`` of a dropped item raises ``ArchiveDroppedError`` saying so.

Cost: nothing without a bound; with one, O(archive) per compaction (the archive is sorted by seq
and its sizes are remembered per item).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from compactkit.errors import ConfigError
from compactkit.items import Item

__all__ = ["DroppedArchive"]


class DroppedArchive(BaseModel):
    """What an archive bound has dropped (saved with the session)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int = Field(default=0, ge=0)
    """Archived items dropped, over the session's life."""
    first: int = Field(default=0, ge=0)
    """The oldest seq dropped since the last ``clear()`` (0: none)."""
    last: int = Field(default=0, ge=0)
    """The newest seq dropped since the last ``clear()`` (0: none)."""

    def dropped(self, seqs: Sequence[int]) -> DroppedArchive:
        """This record with ``seqs`` (oldest first) dropped too."""
        first = min(self.first, seqs[0]) if self.first else seqs[0]
        return DroppedArchive(
            count=self.count + len(seqs), first=first, last=max(self.last, seqs[-1])
        )

    def gone(self, first: int, last: int, held: Mapping[int, Item]) -> list[int]:
        """The seqs of ``first..last`` the bound dropped (in its range, not held)."""
        if not self.last or last < self.first or first > self.last:
            return []
        return [s for s in range(max(first, self.first), min(last, self.last) + 1) if s not in held]


class ArchiveBound:
    """``max_archived_items`` and ``max_archived_bytes``, checked; which items to drop."""

    def __init__(self, max_items: int | None, max_bytes: int | None) -> None:
        self.max_items = _check("max_archived_items", max_items)
        self.max_bytes = _check("max_archived_bytes", max_bytes)
        self._sizes: dict[int, int] = {}  # seq -> bytes of the item's JSON

    @property
    def is_set(self) -> bool:
        return self.max_items is not None or self.max_bytes is not None

    def describe(self) -> str:
        parts = [f"max_archived_items={self.max_items}"] * (self.max_items is not None)
        parts += [f"max_archived_bytes={self.max_bytes}"] * (self.max_bytes is not None)
        return ", ".join(parts)

    def over(self, history: Mapping[int, Item], active: Sequence[Item]) -> list[int]:
        """The archived seqs to drop, oldest first, for the archive to fit the bound."""
        if not self.is_set:
            return []
        by_seq = {item.seq: item for item in active}
        archived = sorted(seq for seq, item in history.items() if by_seq.get(seq) != item)
        drop = [] if self.max_items is None else archived[: max(0, len(archived) - self.max_items)]
        if self.max_bytes is not None:
            rest = archived[len(drop) :]
            total = sum(self._size(seq, history[seq]) for seq in rest)
            for seq in rest:
                if total <= self.max_bytes:
                    break
                total -= self._size(seq, history[seq])
                drop.append(seq)
        for seq in drop:
            self._sizes.pop(seq, None)
        return drop

    def _size(self, seq: int, item: Item) -> int:
        size = self._sizes.get(seq)
        if size is None:
            size = self._sizes[seq] = len(item.model_dump_json().encode())
        return size


def _check(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(
            f"{name} must be a whole number of 0 or more (or None for no bound), got {value!r}"
        )
    return value
