"""``InMemorySessionStore``: sessions saved in the process (tests, short-lived workers)."""

from __future__ import annotations

import builtins
import itertools
import threading

from compactkit.errors import SessionNotFoundError
from compactkit.sessions._checks import require_session
from compactkit.sessions.journal import SaveMarks, read_journal, save_patch, save_whole
from compactkit.sessions.session import AgentSession, SessionState

__all__ = ["InMemorySessionStore"]

_numbers = itertools.count()


class _Saved:
    """One session's saved form: a base state and the patches saved after it (JSON)."""

    __slots__ = ("base", "number", "patches", "revision")

    def __init__(self, base: bytes, revision: int) -> None:
        self.base = base
        self.patches: list[bytes] = []
        self.revision = revision
        self.number = next(_numbers)  # which base this is: a mark names the one it extends


class InMemorySessionStore:
    """Keeps each session's state as JSON in a dict; safe to share between threads.

    States are kept serialised, so a loaded state never shares objects with a live session and
    a session that cannot be written to a file cannot be saved here either. Saving is
    incremental: a save by the session object that saved last adds a patch holding what changed
    (``compactkit.sessions.journal``); other saves, and one in a while to fold the patches,
    write the whole state.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._states: dict[str, _Saved] = {}
        self._marks = SaveMarks()

    def save(self, session: AgentSession) -> None:
        """Save ``session.state()``, replacing any earlier state of that session."""
        session = require_session(session, "InMemorySessionStore")
        mark = self._marks.get(session)
        with self._lock:
            saved = self._states.get(session.session_id)
            if (
                mark is not None
                and saved is not None
                and mark.proof == (saved.number, saved.revision)
                and not mark.outgrown()
            ):
                try:
                    change = save_patch(session, mark, saved.revision + 1)
                except BaseException:
                    self._marks.forget(session)
                    raise
                saved.patches.append(change.data)
                saved.revision += 1
                change.mark.proof = (saved.number, saved.revision)
                self._marks.set(session, change.mark)
                return
            revision = 1 if saved is None else saved.revision + 1
        # A whole state, outside the lock (it is O(history)); the last writer wins as before.
        try:
            data, new_mark = save_whole(session, revision)
        except BaseException:
            self._marks.forget(session)
            raise
        fresh = _Saved(data, revision)
        with self._lock:
            self._states[session.session_id] = fresh
        new_mark.proof = (fresh.number, revision)
        self._marks.set(session, new_mark)

    def load(self, session_id: str) -> SessionState:
        """The saved state of ``session_id``.

        Raises:
            SessionNotFoundError: nothing is saved under ``session_id``.
        """
        with self._lock:
            saved = self._states.get(session_id)
            if saved is None:
                raise SessionNotFoundError(session_id)
            base, patches = saved.base, list(saved.patches)
        return read_journal(base, patches, source=f"session {session_id!r}")

    def delete(self, session_id: str) -> bool:
        """Delete the saved state; ``False`` when there was none."""
        with self._lock:
            return self._states.pop(session_id, None) is not None

    def list(self) -> builtins.list[str]:
        """The ids of the saved sessions, sorted."""
        with self._lock:
            return sorted(self._states)
