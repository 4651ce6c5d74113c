"""Incremental saving: a saved session is a base state plus a journal of patches.

Every store keeps a session as a *base* (a whole ``SessionState``, JSON) followed by a journal of
*patches*, one per save, each holding only what that save changed:

- the counters every save writes (revision, turn, step, metadata, updated_at, memory version);
- after appends only: ``append``, the new active items;
- after any other change (a compaction, a pin, a restore, a clear): ``summary``, ``active`` and
  ``archive`` as *ops* — ``[i, j]`` takes items ``i..j-1`` of the previous active list, an object
  is an item written out (new, or replaced) — and ``unarchive``, the seqs that left the history.

Loading replays the patches over the base (``read_journal``); a patch whose revision is not above
the base's is stale (left by a full save that did not finish truncating the journal) and skipped.
A save writes a patch only on top of exactly what the same session object last wrote to the same
store (its ``SaveMark``, checked against the store's own proof that nothing else was written since);
otherwise, and once the journal outgrows the base, it writes a new base and drops the journal.

Cost: the append case is O(new items) — the snapshot's ``ItemsView`` tells which items are new
in O(1) — and the other changes are O(active items) to compute, O(what changed) to write.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from compactkit.errors import ConfigError, StorageError
from compactkit.items import ITEMS_ADAPTER, Item
from compactkit.items.snapshot import MemorySnapshot
from compactkit.items.view import ItemsView
from compactkit.sessions._patch_json import ENCODER, append_patch, utc_now_iso
from compactkit.sessions.session import (
    AgentSession,
    SessionState,
    _check_json,
    _dropped,
    consistent_read,
    outside_active,
)
from compactkit.sessions.state import SESSION_SCHEMA_VERSION

__all__ = [
    "JOURNAL_MIN_BYTES",
    "SavePatch",
    "SaveMark",
    "SaveMarks",
    "read_journal",
    "save_patch",
    "save_whole",
]

JOURNAL_MIN_BYTES = 64 * 1024
"""A journal is folded into a new base once it is larger than the base and than this."""


@dataclass(slots=True)
class SaveMark:
    """What one session object last wrote to one store: enough to write the next patch."""

    proof: object
    """The store's token that nothing else was written since (a revision and base id, file
    identities, a list length)."""
    revision: int
    """The revision that save wrote."""
    active: Sequence[Item]
    """The active items written (the snapshot's view)."""
    summary: str
    extra: dict[int, Item]
    """The history written that the active items do not hold, by seq."""
    base_bytes: int
    journal_bytes: int

    def outgrown(self) -> bool:
        """Whether the journal is big enough to be folded into a new base."""
        return self.journal_bytes > max(self.base_bytes, JOURNAL_MIN_BYTES)


class SaveMarks:
    """The marks a store keeps, one per live session object (forgotten with the object)."""

    def __init__(self) -> None:
        self._marks: weakref.WeakKeyDictionary[AgentSession, SaveMark] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, session: AgentSession) -> SaveMark | None:
        """The mark of ``session``'s last save here (``None``: none, or it failed since)."""
        with self._lock:
            return self._marks.get(session)

    def set(self, session: AgentSession, mark: SaveMark) -> None:
        """Record ``session``'s save."""
        with self._lock:
            self._marks[session] = mark

    def forget(self, session: AgentSession) -> None:
        """Drop ``session``'s mark: its next save writes a new base."""
        with self._lock:
            self._marks.pop(session, None)


@dataclass(slots=True)
class SavePatch:
    """One save's patch and the mark it leaves (``proof`` and sizes set by the store)."""

    data: bytes
    mark: SaveMark


def save_whole(
    session: AgentSession, revision: int, proof: object = None
) -> tuple[bytes, SaveMark]:
    """``session``'s whole state at ``revision`` as JSON, and the mark it leaves."""
    state = session.state().model_copy(update={"revision": revision})
    data = state.to_json()
    mark = SaveMark(
        proof=proof,
        revision=revision,
        active=state.memory.items,
        summary=state.memory.summary,
        extra={item.seq or 0: item for item in state.history},
        base_bytes=len(data),
        journal_bytes=0,
    )
    return data, mark


def save_patch(session: AgentSession, mark: SaveMark, revision: int) -> SavePatch:
    """What ``session`` changed since ``mark``, as the patch making ``revision``.

    Raises:
        ConfigError: ``metadata`` holds a value that is not JSON.
        ConcurrencyError: the memory kept changing while it was read (10 attempts).
    """
    metadata = session.metadata
    if metadata:
        _check_json(metadata, "metadata")
    memory = session.memory
    snapshot = memory.snapshot()
    items = snapshot.items
    updated_at = utc_now_iso()
    dropped = _dropped(memory)
    # what the memory's archive bound dropped (sessions.state)
    dropped_json = dropped.model_dump() if dropped.count else None
    appended = items.appended_since(mark.active) if isinstance(items, ItemsView) else None
    extra = mark.extra
    if appended is not None and snapshot.summary == mark.summary:
        # The memory only appended to the list this view reads (any other write replaces the
        # list), so the history outside the active items is what it was.
        try:
            data = append_patch(
                revision,
                session.turn,
                session.step,
                metadata,
                updated_at,
                snapshot.version,
                dropped_json,
                appended,
            )
        except (TypeError, ValueError) as exc:  # metadata was checked: this is not expected
            raise ConfigError(f"session {session.session_id!r} cannot be saved: {exc}") from exc
    else:
        snapshot, extra, data = _window_patch(session, mark, revision, updated_at, dropped_json)
        items = snapshot.items
    new_mark = SaveMark(
        proof=None,
        revision=revision,
        active=items,
        summary=snapshot.summary,
        extra=extra,
        base_bytes=mark.base_bytes,
        journal_bytes=mark.journal_bytes + len(data),
    )
    return SavePatch(data, new_mark)


def _window_patch(
    session: AgentSession,
    mark: SaveMark,
    revision: int,
    updated_at: str,
    dropped: dict[str, Any] | None,
) -> tuple[MemorySnapshot, dict[int, Item], bytes]:
    """The patch after a change other than appends: a consistent read of the memory, the
    history outside its active items, and the patch's JSON (``_window_ops``)."""
    snapshot, history = consistent_read(session.memory, session.session_id)
    extra = _extra(snapshot.items, history)
    record: dict[str, Any] = {
        "revision": revision,
        "turn": session.turn,
        "step": session.step,
        "metadata": session.metadata,
        "updated_at": updated_at,
        "version": snapshot.version,
    }
    if dropped is not None:
        record["dropped_archive"] = dropped
    record.update(_window_ops(mark, snapshot.items, snapshot.summary, extra))
    return snapshot, extra, _dumps(record, session.session_id)


def _extra(active: Sequence[Item], history: Iterable[Item]) -> dict[int, Item]:
    """The history the active items do not hold (archived items, originals of replaced ones),
    by seq — what ``AgentSession.state`` writes as ``history``."""
    return {item.seq or 0: item for item in outside_active(active, history)}


def _window_ops(
    mark: SaveMark, items: Sequence[Item], summary: str, extra: dict[int, Item]
) -> dict[str, Any]:
    """The ``summary``/``active``/``archive``/``unarchive`` of a patch: items already written
    are referred to by their place in the previous active list, runs of them as one ``[i, j]``."""
    previous = mark.active
    place = {item.seq: index for index, item in enumerate(previous)}

    def ops(new: Iterable[Item]) -> list[Any]:
        out: list[Any] = []
        fresh: list[Item] = []
        for item in new:
            index = place.get(item.seq)
            if index is not None and (previous[index] is item or previous[index] == item):
                last = out[-1] if out and not fresh else None
                if isinstance(last, list) and last[1] == index:
                    last[1] = index + 1
                else:
                    out.extend(ITEMS_ADAPTER.dump_python(fresh, mode="json"))
                    fresh = []
                    out.append([index, index + 1])
            else:
                fresh.append(item)
        out.extend(ITEMS_ADAPTER.dump_python(fresh, mode="json"))
        return out

    old = mark.extra
    added = [
        item
        for seq, item in sorted(extra.items())
        if not (old.get(seq) is item or (seq in old and old[seq] == item))
    ]
    return {
        "summary": summary,
        "active": ops(items),
        "archive": ops(added),
        "unarchive": [seq for seq in old if seq not in extra],
    }


def _dumps(record: dict[str, Any], session_id: str) -> bytes:
    try:
        return ENCODER.encode(record).encode()
    except (TypeError, ValueError) as exc:  # metadata was checked: this is not expected
        raise ConfigError(f"session {session_id!r} cannot be saved: {exc}") from exc


# -- reading -------------------------------------------------------------------------------------


def read_journal(
    base: bytes | str,
    patches: Sequence[bytes | str] = (),
    *,
    source: str,
    torn_tail: bool = False,
) -> SessionState:
    """The state ``base`` and its journal ``patches`` (in order) describe.

    Args:
        base: A ``SessionState`` JSON (any version this compactkit reads).
        patches: The journal after it; patches at or below the base's revision are stale and
            skipped.
        source: What to name in errors (a path, a key).
        torn_tail: Whether the last patch may be cut short (a file append killed mid-write):
            it is then ignored — its save never returned.

    Raises:
        StorageError: the base or a patch is corrupt, or from a newer compactkit.
    """
    if not patches:
        return SessionState.from_json(base, source=source)
    raw = SessionState.raw_json(base, source=source)
    if raw.get("schema_version") != SESSION_SCHEMA_VERSION:
        raise StorageError(f"{source} is corrupt: a journal follows an old-version base")
    try:
        _replay(raw, patches, source, torn_tail)
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise StorageError(f"{source} is corrupt: a journal patch is malformed ({exc!r})") from exc
    try:
        return SessionState.model_validate(raw)
    except ValidationError as exc:
        raise StorageError(
            f"{source} is corrupt: {exc.error_count()} invalid fields ({exc.errors()[0]})"
        ) from exc


def _replay(raw: dict[str, Any], patches: Sequence[bytes | str], source: str, torn: bool) -> None:
    revision = raw.get("revision", 0)
    memory = raw["memory"]
    active: list[Any] = list(memory["items"])
    history: list[Any] = raw["history"]
    last = len(patches) - 1
    for index, data in enumerate(patches):
        try:
            change = json.loads(data)
        except ValueError as exc:
            if torn and index == last:
                break  # a save killed mid-append: it never returned, so nothing is lost
            raise StorageError(
                f"{source} is corrupt: journal patch {index + 1} is not JSON"
            ) from exc
        number = change["revision"]
        if not isinstance(number, int) or number <= revision:
            continue  # stale: from before the base (a full save stopped before truncating)
        if number != revision + 1:
            raise StorageError(
                f"{source} is corrupt: journal patch {index + 1} has revision {number} after "
                f"revision {revision}"
            )
        if "append" in change:
            active.extend(change["append"])
        else:
            previous = active
            active = _expand(change["active"], previous)
            kept = {entry["seq"]: entry for entry in history}
            for seq in change["unarchive"]:
                kept.pop(seq, None)
            for entry in _expand(change["archive"], previous):
                kept[entry["seq"]] = entry
            history = [kept[seq] for seq in sorted(kept)]
            memory["summary"] = change["summary"]
        revision = number
        memory["version"] = change["version"]
        raw.update(
            revision=number,
            turn=change["turn"],
            step=change["step"],
            metadata=change["metadata"],
            updated_at=change["updated_at"],
        )
        if "dropped_archive" in change:
            raw["dropped_archive"] = change["dropped_archive"]
    memory["items"] = active
    raw["history"] = history


def _expand(ops: list[Any], previous: list[Any]) -> list[Any]:
    out: list[Any] = []
    for op in ops:
        if isinstance(op, list):
            start, stop = op
            if not 0 <= start < stop <= len(previous):
                raise IndexError(f"items {start}..{stop - 1} of {len(previous)}")
            out.extend(previous[start:stop])
        else:
            out.append(op)
    return out
