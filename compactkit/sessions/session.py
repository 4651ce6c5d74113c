"""Sessions: one session id, one memory, and the runtime's state.

A session is the isolation boundary: two sessions never share a memory object. ``new_session``
makes a fresh id and asks the memory factory for a memory, refusing one that another session
already holds or one that already holds state; resuming a saved session is explicit
(``resume_session``), and is the only way two session objects see the same facts.

``SessionState`` is the saved form every ``SessionStore`` writes: the runtime state, the memory
snapshot (summary, active items, version) and the history the snapshot does not hold (archived
items and the originals of replaced ones), under a ``schema_version``.
"""

from __future__ import annotations

import math
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

from pydantic import ValidationError

from compactkit.errors import ConcurrencyError, ConfigError
from compactkit.items import Item
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory import AgentMemory, InMemoryMemory
from compactkit.memory.archive import DroppedArchive
from compactkit.sessions.lease import SessionLease
from compactkit.sessions.state import SESSION_SCHEMA_VERSION, SessionState, StateSource

__all__ = [
    "SESSION_SCHEMA_VERSION",
    "AgentSession",
    "SessionState",
    "new_session",
    "resume_session",
]

MemoryFactory = Callable[[str], AgentMemory]
"""Makes the memory of a session, given its id; must return a new memory on every call."""


class AgentSession:
    """One conversation: its id, its memory and the runtime's counters and metadata."""

    def __init__(
        self,
        memory: AgentMemory | None = None,
        *,
        session_id: str | None = None,
        turn: int = 0,
        step: int = 0,
        metadata: dict[str, Any] | None = None,
        created_at: datetime | None = None,
    ) -> None:
        """Make a session around ``memory`` (a new ``InMemoryMemory`` by default).

        Args:
            memory: The session's memory; it must not be another session's.
            session_id: The id; a fresh ``uuid4().hex`` when omitted.
            turn: Turns run so far.
            step: Steps run so far.
            metadata: The application's JSON data about the session.
            created_at: When the session was created; now when omitted.

        Raises:
            ConfigError: the id is empty, or ``memory`` belongs to another session.
        """
        if session_id is None:
            session_id = uuid.uuid4().hex
        _check_session_id(session_id)
        self._memory = InMemoryMemory() if memory is None else _checked_memory(memory)
        _bind(self._memory, session_id)
        self._session_id = session_id
        self.turn = turn
        self.step = step
        if metadata is not None and not isinstance(metadata, dict):
            raise ConfigError(
                f"metadata must be a dict of JSON values, got {type(metadata).__name__}"
            )
        _check_json(metadata or {}, "metadata")
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.created_at = created_at or datetime.now(timezone.utc)
        self.lease: SessionLease | None = None
        """The lease a run holds on this session (set by the runtime); saves are fenced by it."""
        self.revision: int | None = None
        """The store revision this object was loaded at or last saved as (``None``: never
        loaded or saved). A run that finds the store ahead of it reloads first."""
        self.fenced_by_revision = False
        """Whether stores refuse this object's saves once the stored revision moved past
        ``revision`` (set for resumed sessions: a resumed copy must not save over a newer
        state). A session built by hand saves last-writer-wins, as the store contract says."""

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self._session_id

    @property
    def memory(self) -> AgentMemory:
        """The session's memory."""
        return self._memory

    def __repr__(self) -> str:
        return f"AgentSession(session_id={self._session_id!r}, turn={self.turn}, step={self.step})"

    def state(self) -> SessionState:
        """The session's saved form: runtime state plus a consistent read of the memory.

        Raises:
            ConfigError: ``metadata`` holds a value that is not JSON.
            ConcurrencyError: the memory kept changing while it was read (10 attempts).
        """
        memory = self._memory
        snapshot, history = consistent_read(memory, self._session_id)
        extra = tuple(outside_active(snapshot.items, history))
        _check_json(self.metadata, "metadata")
        try:
            return SessionState(
                session_id=self._session_id,
                turn=self.turn,
                step=self.step,
                metadata=self.metadata,
                created_at=self.created_at,
                updated_at=datetime.now(timezone.utc),
                memory=snapshot,
                history=extra,
                dropped_archive=_dropped(memory),
            )
        except ValidationError as exc:
            raise ConfigError(f"session {self._session_id!r} cannot be saved: {exc}") from exc

    @classmethod
    def from_state(cls, state: SessionState, memory: AgentMemory | None = None) -> AgentSession:
        """Rebuild a session from its saved form, restoring ``memory`` (a new
        ``InMemoryMemory`` by default) to the saved snapshot and history.

        A persistent memory that already holds the session at the checkpoint's version or
        later (an ``SQLMemory`` other workers kept writing) is the newer truth and is kept as
        it is: restoring the checkpoint would delete what was committed after it.
        """
        session = cls(
            memory,
            session_id=state.session_id,
            turn=state.turn,
            step=state.step,
            metadata=dict(state.metadata),
            created_at=state.created_at,
        )
        if not _holds_checkpoint(session.memory, state):
            try:
                _restore(session.memory, state)
            except ConcurrencyError:  # another worker wrote the session meanwhile
                if not _holds_checkpoint(session.memory, state):
                    raise
        session.revision = state.revision
        session.fenced_by_revision = True
        return session

    def reload(self, state: SessionState) -> None:
        """Take ``state`` (a newer save of this session by another run) as this session's:
        counters, metadata and — unless the memory already holds it — the memory."""
        if state.session_id != self._session_id:
            raise ConfigError(
                f"cannot reload session {self._session_id!r} from the state of {state.session_id!r}"
            )
        if not _holds_checkpoint(self._memory, state):
            _restore(self._memory, state)
        self.turn, self.step = state.turn, state.step
        self.metadata = dict(state.metadata)
        self.revision = state.revision
        self.fenced_by_revision = True

    @classmethod
    def resume(
        cls, store: StateSource, session_id: str, memory_factory: MemoryFactory | None = None
    ) -> AgentSession:
        """Load ``session_id`` from ``store`` (see ``resume_session``)."""
        return resume_session(store, session_id, memory_factory)


def new_session(
    memory_factory: MemoryFactory | None = None, *, session_id: str | None = None
) -> AgentSession:
    """Start a new session: a fresh id and ``memory_factory(session_id)`` as its memory.

    Raises:
        ConfigError: the factory returned a memory another session holds (a shared singleton
            leaks state between sessions), or one that already holds items, a summary or
            history (a persistent memory ignoring the new id). Use ``resume_session`` to
            continue a saved session.
    """
    session_id = uuid.uuid4().hex if session_id is None else session_id
    _check_session_id(session_id)
    memory = (
        InMemoryMemory()
        if memory_factory is None
        else _checked_memory(memory_factory(session_id), "memory_factory returned")
    )
    owner = _owner(memory)
    if owner is not None and owner != session_id:
        raise ConfigError(
            f"memory_factory returned a memory object it already returned for session "
            f"{owner!r}; sessions sharing a memory leak state into each other — return a new "
            "memory on every call"
        )
    snapshot = memory.snapshot()
    if snapshot.items or snapshot.summary or memory.history():
        raise ConfigError(
            f"memory_factory returned a memory that already holds state ({len(snapshot.items)} "
            f"items) for the new session {session_id!r}; does it ignore the session id it is "
            "given (for example a fixed SQL session id)? To continue a saved session, use "
            "resume_session(store, session_id)"
        )
    return AgentSession(memory, session_id=session_id)


def resume_session(
    store: StateSource, session_id: str, memory_factory: MemoryFactory | None = None
) -> AgentSession:
    """Continue a saved session: load its state from ``store`` and restore it into
    ``memory_factory(session_id)`` (a new ``InMemoryMemory`` by default).

    A persistent memory that already holds the session at or past the saved version keeps
    what it holds (nothing committed after the checkpoint is deleted); others are restored to
    the saved state.

    Raises:
        SessionNotFoundError: the store has no session ``session_id``.
        StorageError: the saved state is corrupt or from a newer compactkit.
    """
    state = store.load(session_id)
    memory = (
        None
        if memory_factory is None
        else _checked_memory(memory_factory(session_id), "memory_factory returned")
    )
    return AgentSession.from_state(state, memory)


def _restore(memory: AgentMemory, state: SessionState) -> None:
    """Restore ``memory`` to ``state`` (an in-process memory also takes what its archive
    bound dropped, so that expanding a dropped item says so)."""
    if isinstance(memory, InMemoryMemory):
        memory.restore(state.memory, history=state.history, dropped=state.dropped_archive)
    else:
        memory.restore(state.memory, history=state.history)


def _dropped(memory: AgentMemory) -> DroppedArchive:
    """What ``memory``'s archive bound dropped (none for memories without one)."""
    return memory.archive_dropped if isinstance(memory, InMemoryMemory) else DroppedArchive()


def outside_active(active: Iterable[Item], history: Iterable[Item]) -> Iterator[Item]:
    """The items of ``history`` that ``active`` does not hold (archived items, the originals of
    replaced ones): those whose seq no active item has, or whose active item differs — as
    ``active_by_seq.get(item.seq) != item``, without asking an item's ``__eq__`` when there is
    no active item of that seq or it is the very same object (most of a long history)."""
    by_seq = {item.seq: item for item in active}
    get = by_seq.get
    for item in history:
        current = get(item.seq)
        if current is None or (current is not item and current != item):
            yield item


def _holds_checkpoint(memory: AgentMemory, state: SessionState) -> bool:
    """Whether ``memory`` already holds ``state``'s memory or a later version of it: a
    persistent memory written at least as far (version and newest seq) as the checkpoint.

    Versions of two in-process memories are not comparable, so the newest seq decides too: a
    stale copy lacks the checkpoint's newest items (the newest item is never folded away).
    """
    snapshot = memory.snapshot()
    version = snapshot.version or 0
    newest = max((item.seq or 0 for item in snapshot.items), default=0)
    saved = (*state.memory.items, *state.history)
    saved_newest = max((item.seq or 0 for item in saved), default=0)
    return version > 0 and version >= (state.memory.version or 0) and newest >= saved_newest


def _check_session_id(session_id: object) -> None:
    """Refuse an id no store can hold: not a non-empty string, or not valid Unicode (a lone
    surrogate cannot be written as UTF-8 — to a file name, JSON or a database)."""
    if not isinstance(session_id, str) or not session_id:
        raise ConfigError(f"a session id must be a non-empty string, got {session_id!r}")
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(
            f"session id {session_id!r:.80} is not valid Unicode text (it holds a lone "
            "surrogate) and no store can hold it; use another id"
        ) from None


def _checked_memory(memory: object, what: str = "the session's memory is") -> AgentMemory:
    if not isinstance(memory, AgentMemory):
        raise ConfigError(
            f"{what} {type(memory).__name__}, not an AgentMemory: a memory factory takes the "
            "session id and returns a new memory, for example "
            "lambda session_id: SQLMemory(url, session_id)"
        )
    return memory


# -- which session holds which memory ----------------------------------------------------------

_lock = threading.RLock()  # re-entrant: a weakref callback may run while it is held
_owners: dict[int, tuple[Callable[[], object], str]] = {}  # id(memory) -> (reference, session id)


def _owner(memory: object) -> str | None:
    with _lock:
        entry = _owners.get(id(memory))
        return entry[1] if entry is not None and entry[0]() is memory else None


def _bind(memory: object, session_id: str) -> None:
    with _lock:
        entry = _owners.get(id(memory))
        if entry is not None and entry[0]() is memory:
            if entry[1] != session_id:
                raise ConfigError(
                    f"this memory already belongs to session {entry[1]!r}; a memory serves one "
                    "session (sharing it leaks state) — give each session its own memory"
                )
            return
        key = id(memory)
        try:
            ref: Callable[[], object] = weakref.ref(memory, lambda _: _forget(key))
        except TypeError:  # not weak-referenceable: keep it alive rather than forget the owner
            ref = _Strong(memory)
        _owners[key] = (ref, session_id)


def _forget(key: int) -> None:
    with _lock:
        entry = _owners.get(key)
        if entry is not None and entry[0]() is None:
            del _owners[key]


class _Strong:
    __slots__ = ("_value",)

    def __init__(self, value: object) -> None:
        self._value = value

    def __call__(self) -> object:
        return self._value


def _check_json(value: Any, where: str, depth: int = 0) -> None:
    """Raise ``ConfigError`` where ``value`` holds what JSON cannot carry back unchanged.

    NaN and infinities would be written as ``null`` and read back as ``None``; non-string keys
    would come back as strings.
    """
    if depth > 200:
        raise ConfigError(f"{where} is nested more than 200 levels deep; flatten it")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(
            f"{where} is {value!r}, which JSON cannot hold (it would load back as None); "
            "store it as a string or None"
        )
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError(
                f"{where} holds text that is not valid Unicode (a lone surrogate); clean it "
                "with text.encode('utf-8', 'replace').decode()"
            ) from None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ConfigError(f"{where} has the key {key!r:.40}; JSON object keys are strings")
            _check_json(key, f"{where} key", depth + 1)
            _check_json(item, f"{where}[{key!r}]", depth + 1)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json(item, f"{where}[{index}]", depth + 1)


def consistent_read(memory: AgentMemory, session_id: str) -> tuple[MemorySnapshot, list[Item]]:
    """The memory's snapshot and history as of one version (read again while a write moved
    it between the two reads).

    Raises:
        ConcurrencyError: the memory kept changing while it was read (10 attempts).
    """
    for _ in range(10):
        snapshot = memory.snapshot()
        history = memory.history()
        if memory.snapshot().version == snapshot.version:
            return snapshot, history
    raise ConcurrencyError(f"session {session_id!r} kept changing while saved")
