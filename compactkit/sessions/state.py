"""The saved form of a session: ``SessionState`` and its schema version.

Every ``SessionStore`` writes this: the runtime state, the memory snapshot (summary, active items,
version) and the history the snapshot does not hold (archived items and the originals of replaced
ones), under a ``schema_version``. ``StateSource`` is what resuming needs of a store.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from compactkit.errors import StorageError
from compactkit.items import Item
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory.archive import DroppedArchive

__all__ = ["SESSION_SCHEMA_VERSION", "SessionState", "StateSource"]

SESSION_SCHEMA_VERSION = 3
"""The version of ``SessionState``'s JSON form this compactkit writes and the newest it reads.

2 added ``revision``; 3 marks a state a store may follow with a journal of patches (incremental
saving, ``compactkit.sessions.journal``), so a compactkit reading only up to 2 refuses it
rather than loading the base without its journal."""


class SessionState(BaseModel):
    """The saved form of a session (what stores write)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SESSION_SCHEMA_VERSION
    """The version of this form; readers refuse versions newer than they know."""
    session_id: str = Field(min_length=1)
    """The session's id."""
    revision: int = Field(default=0, ge=0)
    """How many times a store saved this session (set by the store; version 1 files read as
    0): a save from a session object loaded at an older revision is refused."""
    turn: int = Field(default=0, ge=0)
    """Turns (user inputs) the runtime has run."""
    step: int = Field(default=0, ge=0)
    """Steps (model calls) the runtime has run."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """The application's own JSON data about the session."""
    created_at: datetime
    """When the session was created (UTC)."""
    updated_at: datetime
    """When this state was taken (UTC)."""
    memory: MemorySnapshot = MemorySnapshot()
    """The memory's summary, active items and version."""
    history: tuple[Item, ...] = ()
    """History the snapshot does not hold: archived items and originals of replaced ones."""
    dropped_archive: DroppedArchive = DroppedArchive()
    """What the memory's archive bound dropped (``InMemoryMemory(max_archived_items=...)``);
    written only when it dropped something."""

    def to_json(self) -> bytes:
        """This state as UTF-8 JSON."""
        unbounded = {"dropped_archive"} if not self.dropped_archive.count else None
        return self.model_dump_json(exclude=unbounded).encode()

    @classmethod
    def from_json(cls, data: bytes | str, *, source: str = "session state") -> SessionState:
        """Read a state written by ``to_json``.

        Raises:
            StorageError: ``data`` is not a valid state, or comes from a newer compactkit;
                ``source`` (a path, a key) is named in the message.
        """
        raw = cls.raw_json(data, source=source)
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise StorageError(
                f"{source} is corrupt: {exc.error_count()} invalid fields ({exc.errors()[0]})"
            ) from exc

    @classmethod
    def raw_json(cls, data: bytes | str, *, source: str = "session state") -> dict[str, Any]:
        """The JSON object ``data`` holds, its schema version checked (not validated further).

        Raises:
            StorageError: ``data`` is not a JSON object with an integer ``schema_version``, or
                comes from a newer compactkit.
        """
        try:
            raw = json.loads(data)
        except ValueError as exc:
            raise StorageError(f"{source} is corrupt: not JSON ({exc})") from exc
        version = raw.get("schema_version") if isinstance(raw, dict) else None
        if not isinstance(version, int) or isinstance(version, bool):
            raise StorageError(f"{source} is corrupt: no integer 'schema_version'")
        if version > SESSION_SCHEMA_VERSION:
            raise StorageError(
                f"{source} was written by a newer compactkit (schema version {version}; this one "
                f"reads up to {SESSION_SCHEMA_VERSION}); upgrade compactkit to read it"
            )
        assert isinstance(raw, dict)
        return raw


class StateSource(Protocol):
    """Anything that loads a saved ``SessionState`` by id (every ``SessionStore`` does)."""

    def load(self, session_id: str) -> SessionState:
        """The saved state of ``session_id``."""
        ...
