"""The file store's journal on disk: a durable append of one patch line, the identities that
prove nothing else wrote a session's files since a save, and a journal kept open for the saves
of one run.

A save outside a run opens the journal, appends, fsyncs and closes it, and proves the files
unchanged by stat (``proof``). A run holds the session's lease (the OS lock every writer of the
session's files takes), so during it no other store or process can write them: its saves keep
the journal open (``OpenJournal``), check it by ``fstat`` — still linked, the same inode and the
size the last append left — and the base by one ``stat``, and know the identities after an
append without asking again. A save that writes a new base closes the journal first (the base
replaces it); any mismatch, or any error, closes it too, and the next save proves the files by
stat as outside a run.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, cast

from compactkit.errors import StorageError
from compactkit.sessions.journal import SaveMark

__all__ = [
    "OpenJournal",
    "append",
    "fsync_directory",
    "journal_missing",
    "open_or_none",
    "proof",
    "remove",
]

_LINE_END = b"\n"


def proof(path: Path, journal: Path) -> tuple[int, ...]:
    """The identities of a session's base and journal files: any save by another store object
    or process changes them (a new base is a new file; an append grows the journal)."""
    try:
        base = os.stat(path)
    except OSError:
        return (-1,)
    try:
        log = os.stat(journal)
        logged = (log.st_ino, log.st_size)
    except OSError:
        logged = (-1, -1)
    return (base.st_ino, base.st_mtime_ns, base.st_size, *logged)


def journal_missing(mark: SaveMark) -> bool:
    """Whether the save that left ``mark`` left no journal (the next append creates it)."""
    found = mark.proof
    return isinstance(found, tuple) and found[-1] == -1


def append(journal: Path, data: bytes, *, created: bool) -> None:
    """Append one patch line and make it durable (and the journal's name, when new)."""
    try:
        fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            _write_all(fd, data + _LINE_END)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StorageError(f"cannot write {journal}: {exc}") from exc
    if created:
        fsync_directory(journal.parent)


class OpenJournal:
    """A session's journal kept open for the saves of one run (see the module docstring).

    The store holds ``lock`` around each save of the run and around ``end``, so a save never
    writes to a closed (and perhaps reused) file descriptor.

    It also holds what the run's saves leave for the next one — the session object that saved
    last and its mark, the revision and file identities saved — as plain attributes, which the
    store hands to its ``SaveMarks`` and lease info once, when the run ends, instead of at every
    save."""

    __slots__ = ("_fd", "_proof", "ended", "lock", "mark", "saved", "session")

    def __init__(self) -> None:
        self._fd = -1
        self._proof: tuple[int, ...] = ()
        self.lock = threading.Lock()
        self.ended = False
        """Whether the run's lease was given back (its saves are refused)."""
        self.session: object = None
        """The session object whose save was the run's last (``None``: none, or it failed)."""
        self.mark: SaveMark | None = None
        """That save's mark."""
        self.saved: tuple[int, tuple[int, ...]] | None = None
        """The revision and file identities of the run's last save that succeeded."""

    def extends(self, mark: SaveMark, path: Path) -> bool:
        """Whether the files are still what the save that left ``mark`` wrote, told by the open
        journal (``fstat``) and the base (``stat``); ``False`` also when nothing is open."""
        if self._fd < 0 or mark.proof != self._proof:
            return False
        try:
            log = os.fstat(self._fd)
            base = os.stat(path)
        except OSError:
            return False
        found = (base.st_ino, base.st_mtime_ns, base.st_size, log.st_ino, log.st_size)
        return log.st_nlink > 0 and found == self._proof

    def append(self, journal: Path, data: bytes, mark: SaveMark) -> tuple[int, ...]:
        """Append one patch line on top of the save that left ``mark`` (checked by ``extends``
        or by ``proof``), fsynced; the files' identities after it.

        Raises:
            StorageError: the journal cannot be written (it is closed; nothing is acknowledged).
        """
        line = data + _LINE_END
        created = False
        try:
            if self._fd >= 0 and mark.proof != self._proof:
                self.close()  # another session object saved since: start from the files
            if self._fd < 0:
                created = journal_missing(mark)
                self._fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                log = os.fstat(self._fd)
                base = cast("tuple[int, ...]", mark.proof)[:3]
                self._proof = (*base, log.st_ino, log.st_size)
            _write_all(self._fd, line)
            os.fsync(self._fd)
            if created:
                fsync_directory(journal.parent)
        except OSError as exc:
            self.close()
            raise StorageError(f"cannot write {journal}: {exc}") from exc
        except BaseException:
            self.close()
            raise
        self._proof = (*self._proof[:-1], self._proof[-1] + len(line))
        return self._proof

    def close(self) -> None:
        """Close the journal (the next save proves the files by stat and opens it again)."""
        if self._fd >= 0:
            fd, self._fd, self._proof = self._fd, -1, ()
            os.close(fd)

    def end(self) -> None:
        """The run's lease is given back: close the journal and refuse its later saves."""
        self.ended = True
        self.close()


def remove(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot delete {path}: {exc}") from exc


@contextmanager
def open_or_none(path: Path) -> Iterator[BinaryIO | None]:
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        yield None
        return
    with file:
        yield file


def fsync_directory(directory: Path) -> None:
    """Make a rename or unlink in ``directory`` durable (POSIX; Windows cannot open dirs)."""
    if os.name == "nt":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)
    if written != len(data):  # a full disk: a line without its end, which a load ignores
        raise OSError(f"wrote {written} of {len(data)} bytes")
