"""What the memory checks drive a backend with: the kit object and recording fakes."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from compactkit.items import Item, Message, item_text
from compactkit.items.snapshot import (
    CompactResult,
    CompactStats,
    MemorySnapshot,
    Outcome,
    unseal_summary,
)
from compactkit.memory import AgentMemory
from compactkit.testing.conformance._kit import ConformanceFailure

MemoryFactory = Callable[..., Any]
"""``factory(session_id, **options) -> AgentMemory``: the memory of ``session_id``, configured
with ``BaseMemory``'s keyword options (``policy``, ``compressor``, ``on_compact``,
``accept_unknown_call_ids``, ``summary_role``)."""


@dataclass(frozen=True)
class MemoryKit:
    """What a memory check gets: the backend's factory and what it claims to support."""

    factory: MemoryFactory
    """Makes the memory of a session id (see ``MemoryFactory``)."""
    thread_safe: bool = True
    """One memory object may be used from several threads at once."""
    persistent: bool = False
    """``factory(id)`` twice opens the same stored session (two handles, as two processes)."""
    options: bool = True
    """The factory takes ``BaseMemory``'s keyword options."""

    def fresh_id(self, label: str = "s") -> str:
        """A session id no other check (or earlier run on the same database) has used."""
        return f"kit-{label}-{uuid.uuid4().hex[:16]}"

    def open(self, session_id: str, **options: Any) -> AgentMemory:
        """``factory(session_id, **options)``, checked to be an ``AgentMemory``."""
        memory = self.factory(session_id, **options)
        if not isinstance(memory, AgentMemory):
            raise ConformanceFailure(
                f"the factory returned {type(memory).__name__} for session {session_id!r}, which "
                "is not an AgentMemory (it lacks some of the protocol's methods)"
            )
        return memory

    def new(self, **options: Any) -> AgentMemory:
        """A fresh memory for a new session id."""
        return self.open(self.fresh_id(), **options)


# -- fakes that record ---------------------------------------------------------------------------


def result(
    snapshot: MemorySnapshot,
    items: Sequence[Item],
    summary: str | None = None,
    outcome: Outcome = "compacted",
) -> CompactResult:
    """A result built the way compressors must: from the input snapshot (version carried)."""
    kept = {i.seq for i in items}
    new = snapshot.model_copy(
        update={"items": tuple(items), "summary": snapshot.summary if summary is None else summary}
    )
    return CompactResult(
        snapshot=new,
        folded=tuple(i for i in snapshot.items if i.seq not in kept),
        outcome=outcome,
        stats=CompactStats(compressor="conformance", items_before=len(snapshot.items)),
    )


class KeepLast:
    """Keeps pinned items and the last ``n`` others; folds the rest into the summary."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls: list[MemorySnapshot] = []

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Fold all but the last ``n`` unpinned items, joined with `` | ``."""
        self.calls.append(snapshot)
        unpinned = [i for i in snapshot.items if not i.pinned]
        if len(unpinned) <= self.n:
            return result(snapshot, snapshot.items, outcome="unchanged")
        drop = {i.seq for i in unpinned[: len(unpinned) - self.n]}
        folded = [item_text(i) for i in snapshot.items if i.seq in drop]
        summary = " | ".join([s for s in (snapshot.summary, *folded) if s])
        return result(snapshot, [i for i in snapshot.items if i.seq not in drop], summary)


class Failing:
    """Reports a failure, as a dead summarizer would."""

    def __init__(self) -> None:
        self.calls = 0

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """A ``failed`` result that drops everything (which a memory must not apply)."""
        self.calls += 1
        failed = result(snapshot, (), summary="", outcome="failed")
        return failed.model_copy(update={"error": "summarizer unreachable"})


class Raising:
    """A compressor with a bug: it raises."""

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Raise ``RuntimeError``."""
        raise RuntimeError("compressor bug")


def user(text: str) -> Message:
    """A user message."""
    return Message(role="user", content=text)


def assistant_call(call_id: str, text: str | None = None) -> dict[str, Any]:
    """An OpenAI chat assistant message calling ``ls`` with ``call_id``."""
    call = {"id": call_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    return {"role": "assistant", "content": text, "tool_calls": [call]}


def seqs(items: Sequence[Item]) -> list[int | None]:
    """The seqs of ``items``."""
    return [i.seq for i in items]


def texts(items: Sequence[Item]) -> list[str]:
    """Item texts; a rendered summary reads as the summary it carries (not its sealed frame)."""
    return [unseal_summary(item_text(i)) or item_text(i) for i in items]
