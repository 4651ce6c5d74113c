"""Sessions and their checkpoints: whose memory this is, and how it survives restarts.

``session`` holds ``AgentSession`` (one id, one memory, the runtime's state) with
``new_session`` / ``resume_session``; ``state`` the saved form every store writes; ``store`` the
``SessionStore`` protocol, implemented here in memory and in files (``sql`` adds the SQL store);
``lease`` the cross-process session lease the file and SQL stores hand to runs; ``journal``
incremental saving (a base state plus patches of what each save changed), shared by every store.
May import ``items``, ``memory`` and the layers under them.
"""

from compactkit.errors import SessionNotFoundError
from compactkit.sessions._checks import require_session
from compactkit.sessions.file import FileSessionStore
from compactkit.sessions.in_memory import InMemorySessionStore
from compactkit.sessions.journal import (
    JOURNAL_MIN_BYTES,
    SaveMark,
    SaveMarks,
    SavePatch,
    read_journal,
    save_patch,
    save_whole,
)
from compactkit.sessions.session import AgentSession, new_session, resume_session
from compactkit.sessions.state import SESSION_SCHEMA_VERSION, SessionState, StateSource
from compactkit.sessions.store import SessionStore

__all__ = [
    "JOURNAL_MIN_BYTES",
    "SESSION_SCHEMA_VERSION",
    "AgentSession",
    "FileSessionStore",
    "InMemorySessionStore",
    "SaveMark",
    "SaveMarks",
    "SavePatch",
    "SessionNotFoundError",
    "SessionState",
    "SessionStore",
    "StateSource",
    "new_session",
    "read_journal",
    "require_session",
    "resume_session",
    "save_patch",
    "save_whole",
]
