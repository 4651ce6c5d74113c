"""The file store's leases: the OS lock each writer of a session takes (``.leases/<id>.lock``),
the lease info beside it (``.leases/<id>.info``: the holder, the last token, the revision of the
last save with its files' identities) and the runs this store holds. Kept apart from the store's
saving and loading (``compactkit.sessions.file``), which asks it for the run a save belongs to.

A run opens its info file at its start and keeps it to its release, and keeps the session's
journal open for its saves (``compactkit.sessions._journal_file.OpenJournal``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from compactkit.errors import SessionBusyError, StorageError
from compactkit.sessions._file_names import encode_session_id
from compactkit.sessions._journal_file import OpenJournal
from compactkit.sessions._lease_info import (
    LeaseInfo,
    open_lease_info,
    read_lease_info,
    write_kept_lease_info,
    write_lease_info,
)
from compactkit.sessions._locks import try_lock, unlock
from compactkit.sessions.lease import wait_steps

__all__ = ["FileLeases", "Run"]

_LEASES = ".leases"  # the lease files' directory (hidden: list() skips it)
_LOCK = ".lock"  # the OS lock a run holds (never deleted: a holder may have it open)
_INFO = ".info"  # who holds it, since when, the last token; the revision, and of which files


@dataclass(slots=True)
class Run:
    """What the store holds for a run of a session: the locked lease file, the lease's token,
    the lease info as written at its start and the info file kept open to write its end, and
    the journal kept open for its saves."""

    lock_fd: int
    token: int
    info: LeaseInfo
    info_fd: int
    journal: OpenJournal


class FileLeases:
    """The lease files of the sessions in one store directory, and the runs held on them."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory / _LEASES
        self._made = False  # whether the lease directory is known to exist
        self._paths: dict[str, tuple[str, str]] = {}  # session id -> lock and info files
        self._runs: dict[str, Run] = {}  # session id -> the run holding its lease here
        self._lock = threading.Lock()
        # session id -> (revision, file proof) of the store's last save of it: a run's saves
        # leave the lease info alone, and its release writes them there once
        self._saved: dict[str, tuple[int, tuple[int, ...]]] = {}

    def run(self, session_id: str, token: int) -> Run | None:
        """The run holding ``session_id``'s lease with ``token`` here (``None``: none)."""
        run = self._runs.get(session_id)
        return run if run is not None and run.token == token else None

    def saved(self, session_id: str, revision: int, files: tuple[int, ...]) -> None:
        """Note the store's save of ``session_id`` (written into the info by ``record``)."""
        with self._lock:
            self._saved[session_id] = (revision, files)

    def begin(
        self,
        session_id: str,
        holder: str,
        timeout: float,
        revision_of: Callable[[dict[str, Any]], tuple[int, tuple[int, ...]]],
    ) -> tuple[int, datetime, int]:
        """Take the lease for a run (waiting up to ``timeout``): its token, start and the
        saved revision (``revision_of`` the info's fields: the revision and the identities of
        the files it is the revision of)."""
        fd = self.lock(session_id, timeout=timeout)
        info_fd = -1
        path = self.files(session_id)[1]
        try:
            # The run reads and writes its info on one descriptor, kept to its release.
            info_fd, info = open_lease_info(path)
            token = int(info.fields.get("token", 0)) + 1
            since = datetime.now(timezone.utc)
            revision, files = revision_of(info.fields)
            info, info_fd = write_kept_lease_info(
                info_fd,
                path,
                {
                    "token": token,
                    "holder": holder,
                    "since": since.isoformat(),
                    "revision": revision,
                    "files": list(files),
                },
                after=info,
            )
        except BaseException:
            if info_fd >= 0:
                os.close(info_fd)
            unlock(fd)
            raise
        with self._lock:
            self._runs[session_id] = Run(fd, token, info, info_fd, OpenJournal())
        return token, since, revision

    def end(self, session_id: str, token: int) -> OpenJournal | None:
        """Give back the run's lease (nothing when this store does not hold it); the run's
        journal, ended (what its last save left: ``OpenJournal.session``, ``mark``)."""
        with self._lock:
            run = self._runs.get(session_id)
            if run is None or run.token != token:
                return None
            del self._runs[session_id]
        info_fd = run.info_fd
        try:
            with run.journal.lock:  # after a save in progress; later ones are refused
                run.journal.end()
                if run.journal.saved is not None:  # the run's saves left the info to its end
                    self.saved(session_id, *run.journal.saved)
            # Only this run wrote the info since it started (writers hold the lock).
            info_fd = self.record(session_id, run.info, holder=None, since=None, kept=info_fd)
        finally:
            try:
                os.close(info_fd)
            finally:
                unlock(run.lock_fd)
        return run.journal

    def record(
        self, session_id: str, info: LeaseInfo | None = None, *, kept: int = -1, **also: Any
    ) -> int:
        """Write the store's last saved revision of ``session_id`` (and the identities of the
        files it is the revision of) into the lease info, where the next ``begin`` reads it,
        with the fields ``also`` (one write).

        Under the session's lock: a save outside a run, and a run's release. A run's own saves
        skip it (the next ``begin`` comes after its release); a run killed before its release
        leaves info whose file identities no longer match, and ``begin`` then reads the
        revision from the files. ``info``: what the lease info says (read when not given);
        ``kept``: the run's open info file (``open_lease_info``), written on. Returns the
        descriptor to close in its place (``-1`` when none was kept)."""
        with self._lock:
            saved = self._saved.pop(session_id, None)
        if saved is not None:
            also.update(revision=saved[0], files=list(saved[1]))
        if also:
            path = self.files(session_id)[1]
            if info is None:
                info = self.info(session_id)
            fields = {**info.fields, **also}
            if kept >= 0:
                _, kept = write_kept_lease_info(kept, path, fields, after=info)
            else:
                # Advisory (names the holder, speeds up the staleness check): the state file's
                # own revision is what a save is checked against, so this skips the fsyncs.
                write_lease_info(Path(path), fields, after=info)
        return kept

    def lock(self, session_id: str, *, timeout: float, runs_only: bool = False) -> int:
        """The session's lock file, locked by this process (waiting up to ``timeout``; with
        ``runs_only``, waiting only for other saves: a run's lease is busy at once)."""
        path = self.files(session_id)[0]
        try:
            if not self._made:
                self._directory.mkdir(mode=0o700, exist_ok=True)
                self._made = True
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # the directory was removed since: make it again
            self._made = False
            return self.lock(session_id, timeout=timeout, runs_only=runs_only)
        except OSError as exc:
            raise StorageError(f"cannot open {path}: {exc}") from exc
        if try_lock(fd):
            return fd
        pauses = iter(wait_steps(timeout))  # (built only when the lock is busy: ~20 µs)
        while True:
            pause = next(pauses, None)
            if runs_only and self.info(session_id).fields.get("holder"):
                pause = None  # a run holds it, not a save: refuse now
            if pause is None:
                os.close(fd)
                info = self.info(session_id).fields
                holder = str(info.get("holder") or "another process")
                since = _parse_time(info.get("since"))
                when = "" if since is None else f" since {since:%Y-%m-%d %H:%M:%S} UTC"
                raise SessionBusyError(
                    f"session {session_id!r} is running elsewhere: {holder!r} has held its "
                    f"lease{when} (waited {timeout:g} s); retry later, or pass a longer "
                    "lease_timeout",
                    session_id=session_id,
                    holder=holder,
                    since=since,
                )
            time.sleep(pause)
            if try_lock(fd):
                return fd

    def files(self, session_id: str) -> tuple[str, str]:
        """The lock and info files of ``session_id``'s lease (named once per session: every
        run names them several times)."""
        found = self._paths.get(session_id) if isinstance(session_id, str) else None
        if found is None:  # (a bad id is refused by encode_session_id)
            stem = os.path.join(self._directory, encode_session_id(session_id))
            found = stem + _LOCK, stem + _INFO
            if len(self._paths) >= 1024:  # a bound: a long-lived store sees many sessions
                self._paths.clear()
            self._paths[session_id] = found
        return found

    def info(self, session_id: str) -> LeaseInfo:
        """What ``<id>.info`` says: the last token, its holder and since when, and the
        revision of a save with the identities of its files (empty when there is none, or it
        is unreadable)."""
        return read_lease_info(Path(self.files(session_id)[1]))


def _parse_time(value: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None
