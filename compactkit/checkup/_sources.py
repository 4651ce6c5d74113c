"""What ``doctor`` reads: a stored session in one backend-neutral shape.

A session can come from a live memory (any ``AgentMemory``), a ``SessionStore`` (file, SQL,
in-memory), an ``SQLMemory`` (which also has compaction records), or a location string: a
database URL, a SQLite file's path, or a ``FileSessionStore`` directory.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compactkit.errors import ConfigError, SessionNotFoundError
from compactkit.items import Item
from compactkit.sessions.file import FileSessionStore
from compactkit.sessions.store import SessionStore

if TYPE_CHECKING:
    from compactkit.sql.records import CompactionRecord

__all__ = ["StoredSession", "read_sessions"]


@dataclass(frozen=True)
class StoredSession:
    """One session as ``doctor`` checks it.

    Attributes:
        session_id: The session's id.
        summary: The running summary (empty when nothing was folded).
        active: The items the next prompt is built from, oldest first.
        history: Items the active list no longer holds: archived ones and the originals of
            replaced (masked) ones.
        compactions: The compaction records, oldest first (SQL memories only; empty elsewhere).
        rendered: What the memory's ``items`` property hands a prompt builder (the summary first
            as its own message, then the items); ``None`` when only stored rows were read.
        source: Where it was read from, for messages.
    """

    session_id: str
    summary: str
    active: tuple[Item, ...]
    history: tuple[Item, ...] = ()
    compactions: tuple[CompactionRecord, ...] = ()
    rendered: tuple[Item, ...] | None = None
    source: str = ""
    saved_turns: int | None = field(default=None)


def read_sessions(
    target: object, session_id: str | None = None, *, table_prefix: str = "compactkit_"
) -> list[StoredSession]:
    """The sessions ``target`` holds (only ``session_id`` when given).

    Raises:
        ConfigError: ``target`` is nothing ``doctor`` can read, or the session is not there.
    """
    if isinstance(target, (str, Path)):
        return _read_location(str(target), session_id, table_prefix)
    if _is_store(target):
        return list(_read_store(target, session_id))  # type: ignore[arg-type]
    if _is_memory(target):
        found = _from_memory(target, getattr(target, "session_id", None) or "memory")
        if session_id is not None and found.session_id != session_id:
            raise ConfigError(
                f"the memory holds session {found.session_id!r}, not {session_id!r}; "
                "pass the memory alone, or the store that holds both"
            )
        return [found]
    raise ConfigError(
        f"doctor reads a memory, a SessionStore, a database URL or a FileSessionStore "
        f"directory, got {type(target).__name__}: {target!r:.80}"
    )


def _is_store(value: object) -> bool:
    return all(callable(getattr(value, name, None)) for name in ("load", "list", "save"))


def _is_memory(value: object) -> bool:
    return all(callable(getattr(value, name, None)) for name in ("snapshot", "history"))


def _from_memory(memory: Any, session_id: str, source: str = "memory") -> StoredSession:
    snapshot = memory.snapshot()
    compactions = memory.compactions() if callable(getattr(memory, "compactions", None)) else ()
    rendered: tuple[Item, ...] | None
    try:
        rendered = tuple(memory.items)
    except Exception:  # a custom memory's property may fail; the rows are still checkable
        rendered = None
    return StoredSession(
        session_id=session_id,
        summary=snapshot.summary,
        active=tuple(snapshot.items),
        history=tuple(memory.history()),
        compactions=tuple(sorted(compactions, key=lambda c: c.id)),
        rendered=rendered,
        source=source,
    )


def _read_store(store: SessionStore, session_id: str | None) -> Iterator[StoredSession]:
    ids = [session_id] if session_id is not None else sorted(store.list())
    for sid in ids:
        try:
            state = store.load(sid)
        except SessionNotFoundError as exc:
            raise ConfigError(f"no session {sid!r} in {store!r}") from exc
        yield StoredSession(
            session_id=state.session_id,
            summary=state.memory.summary,
            active=tuple(state.memory.items),
            history=tuple(state.history),
            source=repr(store),
            saved_turns=state.turn,
        )


def _read_location(location: str, session_id: str | None, prefix: str) -> list[StoredSession]:
    path = Path(location)
    if "://" not in location and path.is_dir():
        return list(_read_store(FileSessionStore(path), session_id))
    if "://" not in location and not path.is_file():
        raise ConfigError(
            f"{location!r} is neither a database URL, a SQLite file nor a FileSessionStore "
            "directory; give sqlite:///agent.db, postgresql://user:pw@host/db or a directory"
        )
    url = location if "://" in location else f"sqlite:///{path.resolve()}"
    return _read_sql(url, session_id, prefix)


def _read_sql(url: str, session_id: str | None, prefix: str) -> list[StoredSession]:
    try:
        from compactkit.sql import SQLMemory, list_sql_sessions
    except ImportError as exc:  # pragma: no cover - sqlalchemy is a core dependency
        raise ConfigError(f"reading {url!r} needs SQLAlchemy: {exc}") from exc
    known = [info.session_id for info in list_sql_sessions(url, table_prefix=prefix)]
    if session_id is not None and session_id not in known:
        raise ConfigError(f"no session {session_id!r} in {url!r}; sessions there: {known[:10]}")
    found = []
    for sid in [session_id] if session_id is not None else known:
        found.append(
            _from_memory(
                SQLMemory(url, sid, table_prefix=prefix, create_schema=False), sid, source=url
            )
        )
    return found


def seqs_of(items: Sequence[Item]) -> set[int]:
    """The stored sequence numbers among ``items``."""
    return {item.seq for item in items if item.seq is not None}
