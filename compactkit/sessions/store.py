"""The protocol every session store implements.

A store keeps the saved form of sessions (``SessionState``) by id. Saving replaces the previous
state of the session as a whole (last writer wins; a reader never sees half of one); loading an
unknown id raises ``SessionNotFoundError``, which is both a ``StorageError`` and a ``KeyError``.
The stores compactkit ships save incrementally (what changed since the same session object's
last save, ``compactkit.sessions.journal``); what ``load`` returns is the same either way.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from compactkit.sessions.session import AgentSession, SessionState

__all__ = ["SessionStore"]


@runtime_checkable
class SessionStore(Protocol):
    """Saves and loads sessions by id."""

    def save(self, session: AgentSession) -> None:
        """Save ``session.state()``, replacing any earlier state of that session."""
        ...

    def load(self, session_id: str) -> SessionState:
        """The saved state of ``session_id``.

        Raises:
            SessionNotFoundError: nothing is saved under ``session_id``.
            StorageError: the saved state cannot be read.
        """
        ...

    def delete(self, session_id: str) -> bool:
        """Delete the saved state; ``False`` when there was none."""
        ...

    def list(self) -> builtins.list[str]:
        """The ids of the saved sessions, sorted."""
        ...
