"""Session leases: one run of a session at a time, across processes and machines.

A store that can lease (``LeasingStore``: the file store and the SQL store) hands a run a
``SessionLease`` for a session id. While it is held, a second ``acquire`` of the same session
waits up to its ``timeout`` and then raises ``SessionBusyError`` naming the holder and since
when. Every acquisition gets a larger ``token`` (a fencing token): a save made under a lease
that was taken over in the meantime raises ``LeaseLostError`` and is not applied, and a memory
that shares the store's database (``FencedMemory``: ``SQLMemory`` next to ``SQLSessionStore``)
refuses its writes the same way.

How a dead holder's lease ends depends on the store: the file store's lease is an OS file lock,
released by the operating system when its process dies; the SQL store's lease has an expiry
(``ttl``) that every fenced save extends, and an expired lease is taken over by the next run.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from compactkit.errors import ConfigError
from compactkit.memory.lease import default_holder as default_holder  # (its old home)

__all__ = ["DEFAULT_TTL", "FencedMemory", "GivenBack", "LeasingStore", "SessionLease"]

DEFAULT_TTL = 60.0
"""Seconds a SQL lease lives without a save to extend it."""


@dataclass(frozen=True)
class SessionLease:
    """The right to run one session, until released (or, in SQL, expired)."""

    session_id: str
    """The session leased."""
    holder: str
    """Who holds it (shown in ``SessionBusyError``)."""
    token: int
    """The fencing token: larger for every acquisition of this session."""
    since: datetime
    """When it was taken (UTC)."""
    revision: int
    """The store's revision of the saved session when the lease was taken: a session object
    holding another revision is stale (someone saved since it was loaded) and is reloaded."""
    scope: str
    """Where the lease lives (the store's database or directory): a memory fences its writes
    with it only when it lives there too."""
    ttl: float | None = None
    """Seconds it lives past its last fenced save (``None``: until released or its process
    dies, as the file store's OS lock)."""


@runtime_checkable
class LeasingStore(Protocol):
    """A session store that leases sessions to runs (see the module docstring); its
    ``save`` is fenced by ``session.lease`` when the session has one."""

    def acquire(
        self,
        session_id: str,
        *,
        holder: str | None = None,
        timeout: float = 0.0,
        ttl: float = DEFAULT_TTL,
    ) -> SessionLease:
        """Take the lease of ``session_id``, waiting up to ``timeout`` seconds.

        Raises:
            SessionBusyError: another holder kept it for the whole ``timeout``.
        """
        ...

    def release(self, lease: SessionLease) -> None:
        """Give the lease back (nothing when it was already taken over)."""
        ...


@runtime_checkable
class FencedMemory(Protocol):
    """A memory whose writes can be fenced by a lease living in its own database."""

    def fence(self, lease: SessionLease | None) -> bool:
        """Refuse writes once ``lease`` was taken over (``None``: stop fencing); whether the
        lease lives where this memory does (else nothing changes)."""
        ...


def check_lease_times(timeout: object, ttl: object) -> None:
    """Refuse a lease ``timeout`` (seconds, ≥ 0) or ``ttl`` (seconds, > 0) that is not one."""
    for name, value, low in (("timeout", timeout, 0.0), ("ttl", ttl, 1e-9)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= low:
            raise ConfigError(
                f"lease {name} must be a number of seconds ({'≥ 0' if low == 0 else '> 0'}), "
                f"got {value!r}"
            )


def wait_steps(timeout: float) -> list[float]:
    """The pauses between attempts to take a busy lease within ``timeout`` seconds (10 ms,
    doubling up to 250 ms)."""
    pauses: list[float] = []
    pause, waited = 0.01, 0.0
    while waited < timeout:
        step = min(pause, timeout - waited)
        pauses.append(step)
        waited += step
        pause = min(pause * 2, 0.25)
    return pauses


class GivenBack:
    """The leases a store's ``save_and_release`` gave back with a run's last save, so that the
    run's later ``release`` of one sends nothing (it would find the lease gone, or another
    run's). Safe to share between threads."""

    def __init__(self) -> None:
        self._leases: set[tuple[str, int]] = set()
        self._lock = threading.Lock()

    def add(self, lease: SessionLease) -> None:
        """Remember that ``lease`` was given back."""
        with self._lock:
            self._leases.add((lease.session_id, lease.token))

    def take(self, lease: SessionLease) -> bool:
        """Whether ``lease`` was given back (forgotten from here on: a release asks once)."""
        key = (lease.session_id, lease.token)
        with self._lock:
            given_back = key in self._leases
            self._leases.discard(key)
        return given_back
