"""The compaction lease: one compactor of a session at a time, across processes and machines.

A summarizer call costs money and seconds. When two compactors (two agent workers, a worker and
a standalone compactor process, two background compactions) read one session and both call the
summarizer, ``apply`` keeps the first result and refuses the second: the second call was paid for
nothing. A memory whose state is shared between processes (``SQLMemory``, ``RedisMemory``) offers
a compaction lease (``CompactionLeasing``): a compactor takes it before it calls the compressor
and gives it back after ``apply``; a compactor that finds it held by another skips (or, with
``compaction_wait`` > 0, waits that long for it first) without calling the compressor.

A lease whose holder died expires ``compaction_ttl`` seconds after it was taken, by the clock of
the database (PostgreSQL, Redis) or of the machine (SQLite), and is taken over by the next
compactor. The lease only saves work: a compactor whose lease expired before it applied is still
refused by ``apply``'s version check when the session moved on, so nothing is ever lost either way.

A memory held by one process (``InMemoryMemory``) needs no lease: its compactions are already
serialised by the process (and an ``Agent`` run holds the session's run lease).
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from typing import Protocol, runtime_checkable

from compactkit.errors import ConfigError

__all__ = [
    "DEFAULT_COMPACTION_TTL",
    "CompactionHold",
    "CompactionLeasing",
    "check_compaction_options",
    "default_holder",
    "hold_compaction",
]

DEFAULT_COMPACTION_TTL = 300.0
"""Seconds a compaction lease lives: longer than a summary takes, short enough that a crashed
compactor's session is compacted again within minutes."""


@runtime_checkable
class CompactionLeasing(Protocol):
    """A memory that leases its compactions (see the module docstring)."""

    compaction_ttl: float
    """Seconds a taken compaction lease lives unless given back."""
    compaction_wait: float
    """Seconds ``take_compaction`` waits for a lease held by another (0: skip at once)."""

    def take_compaction(self, holder: str) -> str:
        """Take the compaction lease for ``holder`` unless another holds a live one, waiting
        up to ``compaction_wait`` seconds; returns who holds it afterwards (``holder`` when it
        was taken)."""
        ...

    def release_compaction(self, holder: str) -> None:
        """Give the compaction lease back, if ``holder`` still holds it."""
        ...


class CompactionHold:
    """The outcome of ``hold_compaction``: whether this compactor may compact, and the release."""

    __slots__ = ("_lock", "_memory", "holder", "other", "taken")

    def __init__(self, memory: object, holder: str | None, other: str | None) -> None:
        self._memory = memory
        self._lock = threading.Lock()
        self.holder = holder
        """This compactor's name (``None`` when the memory does not lease)."""
        self.other = other
        """Who holds the lease when it was not taken."""
        self.taken = other is None
        """Whether this compactor may compact (always, for a memory that does not lease)."""

    def release(self) -> None:
        """Give the lease back (once; nothing when it was not taken or the memory does not
        lease)."""
        with self._lock:
            holder, self.holder = self.holder, None
        if holder is not None and self.taken and isinstance(self._memory, CompactionLeasing):
            self._memory.release_compaction(holder)


def hold_compaction(memory: object, holder: str | None = None) -> CompactionHold:
    """Take ``memory``'s compaction lease when it has one (``CompactionLeasing``).

    Returns a ``CompactionHold``: ``taken`` is ``False`` (and ``other`` names the holder) when
    another compactor holds it; call ``release()`` once the result was applied or dropped.
    """
    if not isinstance(memory, CompactionLeasing):
        return CompactionHold(memory, None, None)
    holder = holder or default_holder()
    current = memory.take_compaction(holder)
    return CompactionHold(memory, holder, None if current == holder else current)


def check_compaction_options(ttl: object, wait: object) -> tuple[float, float]:
    """``(compaction_ttl, compaction_wait)`` as floats, or ``ConfigError`` naming the bad one."""
    for name, value, positive in (("compaction_ttl", ttl, True), ("compaction_wait", wait, False)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not (value > 0 if positive else value >= 0)
            or value == float("inf")
        ):
            raise ConfigError(
                f"{name} must be a finite number of seconds ({'> 0' if positive else '>= 0'}), "
                f"got {value!r}"
            )
    return float(ttl), float(wait)  # type: ignore[arg-type]


_counter = iter(range(1, 1 << 62))
_counter_lock = threading.Lock()


def default_holder() -> str:
    """``host:pid:tag`` — unique per call, readable in an error message or event."""
    with _counter_lock:
        number = next(_counter)
    return f"{socket.gethostname()}:{os.getpid()}:{number}-{uuid.uuid4().hex[:6]}"
