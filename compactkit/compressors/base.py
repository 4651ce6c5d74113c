"""The protocol every compressor implements.

A compressor reads a ``MemorySnapshot`` and returns a ``CompactResult`` holding the new snapshot;
a memory swaps it in atomically with ``AgentMemory.apply``. The contract:

* never mutate the input (snapshots and items are immutable anyway);
* carry the input's ``version`` into the new snapshot (``snapshot.model_copy(update=...)`` does),
  so the memory can refuse a result computed from a state that has changed since;
* keep every item it does not fold with its ``seq`` (replacing one, for example masking a tool
  output, keeps the ``seq``); new items it creates have ``seq=None``; pinned items are kept;
* never raise for a run-time failure: report it with ``outcome="failed"`` and ``error``. Raise
  only for misuse (``ConfigError``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeAlias, runtime_checkable

from compactkit.items.snapshot import CompactResult, MemorySnapshot

__all__ = ["CompressorLike", "MemoryCompressor"]


@runtime_checkable
class MemoryCompressor(Protocol):
    """Turns a snapshot into a ``CompactResult`` (see the module docstring for the contract)."""

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Compact ``snapshot``; report failures in the result's ``outcome``, do not raise."""
        ...


CompressorLike: TypeAlias = MemoryCompressor | Callable[[Any], Any]
"""What every ``compressor=`` takes: a ``MemoryCompressor``, or a plain function
``messages -> messages`` / ``snapshot -> snapshot`` (made a ``FunctionCompressor``)."""
