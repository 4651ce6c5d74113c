"""The file store's lease info (``.leases/<id>.info``): who holds a session's lease and since
when, the last fencing token, and the revision of the last save with the identities of its files.

The file holds two fixed-size slots, each one record: a CRC-32 of its JSON, the JSON (with a
sequence number), spaces, a newline. A write overwrites the older slot in place, so it never
truncates or renames the file (on ext4 either makes the writer start flushing the file: ~100 µs
of CPU a write, twice per run) and a write cut short by a crash spoils only its own slot — a
reader then takes the other one, the record before. Readers take the valid slot with the larger
sequence number.

A file written by an earlier compactkit (one JSON object, replaced by a rename) is read too; the
first write to it, to a missing file, or of a record too long for a slot (a very long holder)
replaces the whole file by a rename, as before. Writers hold the session's lock; a reader
without it (naming a busy lease's holder) may see a slot mid-write and then reads the record
before. Like before, nothing here is fsynced: a save is checked against the session's own files,
and what the info says about them is trusted only while they still match.
"""

from __future__ import annotations

import json
import os
import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compactkit.errors import StorageError

__all__ = [
    "SLOT",
    "LeaseInfo",
    "open_lease_info",
    "read_lease_info",
    "write_kept_lease_info",
    "write_lease_info",
]

SLOT = 512
"""Bytes of one slot (a record is at most ``SLOT - 10`` bytes of JSON)."""

_ENCODER = json.JSONEncoder(separators=(",", ":"))  # json.dumps(separators=...) builds one a call


@dataclass(slots=True)
class LeaseInfo:
    """What a lease info file says, and how the next write goes."""

    fields: dict[str, Any] = field(default_factory=dict)
    """token, holder, since, revision, files (each absent when never written)."""
    sequence: int = 0
    """The record's sequence number (0: none, or an earlier version's file)."""
    slotted: bool = False
    """Whether the file holds slots (the next write goes in place)."""


def read_lease_info(path: Path) -> LeaseInfo:
    """What ``path`` says (empty when it is missing or unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return LeaseInfo()
    try:
        data = _read_all(fd)
    except OSError:
        return LeaseInfo()
    finally:
        os.close(fd)
    return _parse(data)


def open_lease_info(path: str) -> tuple[int, LeaseInfo]:
    """``path`` opened for a run (created empty when missing) and what it says: the run
    reads and writes its info on this one descriptor (``write_kept_lease_info``) and closes it
    at its release, one open and close a run instead of three.

    Raises:
        StorageError: the file cannot be opened.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StorageError(f"cannot open {path}: {exc}") from exc
    try:
        data = _read_all(fd)
    except OSError:
        data = b""  # unreadable: an empty info, as read_lease_info says
    return fd, _parse(data)


def _parse(data: bytes) -> LeaseInfo:
    best: LeaseInfo | None = None
    for start in (0, SLOT):
        found = _slot(data[start : start + SLOT])
        if found is not None and (best is None or found.sequence > best.sequence):
            best = found
    return best if best is not None else _whole(data)


def write_lease_info(path: Path, fields: dict[str, Any], *, after: LeaseInfo) -> LeaseInfo:
    """Write ``fields`` as the record after ``after`` (what was read from ``path`` under the
    session's lock, or written last); the info as now written.

    Raises:
        StorageError: the file cannot be written.
    """
    sequence = after.sequence + 1
    record = _record(fields, sequence)
    if record is None:  # too long for a slot: the whole file, as earlier versions wrote
        _replace(path, json.dumps(fields).encode())
        return LeaseInfo(dict(fields), 0, slotted=False)
    try:
        if not (after.slotted and _write_slot(path, record, (sequence % 2) * SLOT)):
            empty = b" " * (SLOT - 1) + b"\n"
            _replace(path, record + empty if sequence % 2 == 0 else empty + record)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc}") from exc
    return LeaseInfo(dict(fields), sequence, slotted=True)


def write_kept_lease_info(
    fd: int, path: str, fields: dict[str, Any], *, after: LeaseInfo
) -> tuple[LeaseInfo, int]:
    """``write_lease_info`` on the descriptor ``open_lease_info`` gave the run: the record
    goes in place into its slot, on ``fd``. When the file on ``fd`` is no longer the one at
    ``path`` (removed or renamed over by hand: no link left to it), when it holds no slots yet
    (new, or an earlier version's) or the record is too long for one, it is written by path
    instead, and ``fd`` reopened on the file now there. Returns the info as written and the
    descriptor to keep.

    Raises:
        StorageError: the file cannot be written.
    """
    sequence = after.sequence + 1
    record = _record(fields, sequence)
    try:
        if record is not None and after.slotted and os.fstat(fd).st_nlink > 0:
            _write_all_at(fd, record, (sequence % 2) * SLOT)
            return LeaseInfo(dict(fields), sequence, slotted=True), fd
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc}") from exc
    info = write_lease_info(Path(path), fields, after=after)
    try:
        reopened = os.open(path, os.O_RDWR)
    except OSError as exc:
        raise StorageError(f"cannot open {path}: {exc}") from exc
    os.close(fd)
    return info, reopened


def _record(fields: dict[str, Any], sequence: int) -> bytes | None:
    """One slot's bytes for ``fields`` (``None``: too long for a slot)."""
    text = _ENCODER.encode({**fields, "sequence": sequence}).encode()
    if len(text) > SLOT - 10:
        return None
    record = f"{zlib.crc32(text):08x} ".encode() + text
    return record.ljust(SLOT - 1) + b"\n"


def _write_all_at(fd: int, data: bytes, offset: int) -> None:
    if hasattr(os, "pwrite"):
        written = os.pwrite(fd, data, offset)
    else:  # pragma: no cover - Windows has no pwrite
        os.lseek(fd, offset, os.SEEK_SET)
        written = os.write(fd, data)
    if written != len(data):  # a full disk: the slot is torn, the other one still holds
        raise OSError(f"wrote {written} of {len(data)} bytes")


def _write_slot(path: Path, record: bytes, offset: int) -> bool:
    """Write ``record`` at ``offset`` of ``path`` in place; ``False`` when the file is gone
    (removed by hand: the caller writes a whole new one)."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except FileNotFoundError:
        return False
    try:
        os.lseek(fd, offset, os.SEEK_SET)
        _write_all(fd, record)
    finally:
        os.close(fd)
    return True


def _slot(raw: bytes) -> LeaseInfo | None:
    """The record in one slot; ``None`` when the slot is empty, torn or not a slot."""
    if len(raw) != SLOT or raw[8:9] != b" ":
        return None
    text = raw[9:].rstrip()
    try:
        if int(raw[:8], 16) != zlib.crc32(text):
            return None
        found = json.loads(text)
    except ValueError:
        return None
    if not isinstance(found, dict) or not isinstance(found.get("sequence"), int):
        return None
    sequence = found.pop("sequence")
    return LeaseInfo(found, sequence, slotted=True)


def _whole(data: bytes) -> LeaseInfo:
    """An earlier version's file: one JSON object."""
    try:
        found = json.loads(data)
    except ValueError:
        return LeaseInfo()
    return LeaseInfo(found, 0, slotted=False) if isinstance(found, dict) else LeaseInfo()


def _read_all(fd: int) -> bytes:
    chunk = os.read(fd, 65536)
    if len(chunk) < 65536:  # a short read of a regular file is its end: one call, not two
        return chunk
    chunks = [chunk]
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    if written != len(data):  # a full disk: the slot is torn, the other one still holds
        raise OSError(f"wrote {written} of {len(data)} bytes")


def _replace(path: Path, data: bytes) -> None:
    """Replace ``path`` by a file holding ``data`` (a temporary file renamed over it)."""
    temp = path.with_name(f".tmp-{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise StorageError(f"cannot write {path}: {exc}") from exc
