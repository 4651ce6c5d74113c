"""Session stores: save sessions and resume them across restarts (see ``SessionStore``)."""

from compactkit.errors import SessionNotFoundError
from compactkit.stores.base import SessionStore
from compactkit.stores.file import FileSessionStore
from compactkit.stores.in_memory import InMemorySessionStore

__all__ = ["FileSessionStore", "InMemorySessionStore", "SessionNotFoundError", "SessionStore"]
