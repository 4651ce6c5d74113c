"""``InMemorySessionStore``: sessions saved in the process (tests, short-lived workers)."""

from __future__ import annotations

import builtins
import threading

from compactkit.errors import SessionNotFoundError
from compactkit.sessions._checks import require_session
from compactkit.sessions.session import AgentSession, SessionState

__all__ = ["InMemorySessionStore"]


class InMemorySessionStore:
    """Keeps each session's state as JSON in a dict; safe to share between threads.

    States are kept serialised, so a loaded state never shares objects with a live session and
    a session that cannot be written to a file cannot be saved here either.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, bytes] = {}

    def save(self, session: AgentSession) -> None:
        """Save ``session.state()``, replacing any earlier state of that session."""
        data = require_session(session, "InMemorySessionStore").state().to_json()
        with self._lock:
            self._states[session.session_id] = data

    def load(self, session_id: str) -> SessionState:
        """The saved state of ``session_id``.

        Raises:
            SessionNotFoundError: nothing is saved under ``session_id``.
        """
        with self._lock:
            data = self._states.get(session_id)
        if data is None:
            raise SessionNotFoundError(session_id)
        return SessionState.from_json(data, source=f"session {session_id!r}")

    def delete(self, session_id: str) -> bool:
        """Delete the saved state; ``False`` when there was none."""
        with self._lock:
            return self._states.pop(session_id, None) is not None

    def list(self) -> builtins.list[str]:
        """The ids of the saved sessions, sorted."""
        with self._lock:
            return sorted(self._states)
