"""Argument checks every session store shares (the SQL store uses them too)."""

from __future__ import annotations

from compactkit.errors import ConfigError
from compactkit.sessions.session import AgentSession


def require_session(value: object, store: str) -> AgentSession:
    """``value`` when it is an ``AgentSession``; else a ``ConfigError`` saying what to pass.

    The common slip is saving the memory (or an id) instead of the session that holds it.
    """
    if isinstance(value, AgentSession):
        return value
    kind = type(value).__name__
    fix = "save the session that holds it"
    if hasattr(value, "add_user_input"):  # an AgentMemory
        fix = "save the session that holds it: AgentSession(memory=memory)"
    elif isinstance(value, str):
        fix = "load the session by id with store.load(session_id), or save the AgentSession"
    raise ConfigError(f"{store}.save takes an AgentSession, got {kind}; {fix}")
