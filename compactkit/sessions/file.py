"""``FileSessionStore``: one JSON file per session in a directory, and its journal.

Incremental saving: a save by the session object that saved last appends one line to
``<id>.jnl`` — a patch holding only what changed (``compactkit.sessions.journal``) — and fsyncs
it; the first save of a session object, a save after someone else's, and a save once the journal
has grown larger than the base write the whole state as below and remove the journal. Loading
reads the base, then replays the journal's complete lines; a last line without its newline is an
append killed mid-write (that save never returned) and is ignored; patches older than the base
(a crash between writing a new base and removing the old journal) are skipped.

Crash safety: a whole-state save writes a temporary file in the same directory, fsyncs it, renames it over
the session's file with ``os.replace`` (atomic) and fsyncs the directory, so the file always
holds one whole state — the old one or the new one, never a torn mix, even with concurrent
savers in several threads or processes (the last rename wins). A file that is corrupt or was
written by a newer compactkit is never overwritten: ``save`` and ``load`` raise ``StorageError``
and leave it for you to inspect (``delete`` removes it).

Leases: a run holds ``.leases/<id>.lock`` (an OS lock) and names itself in ``<id>.info``, which
also keeps the revision of the last save with the identities of its files. A run's own saves do
not rewrite it (its release does, once); when the files no longer match (a run killed before its
release, an info file of an earlier version), ``acquire`` reads the revision from the files. The
info is written in place, in one of two slots (``compactkit.sessions._lease_info``), on one
descriptor the run opens at its start and closes at its release (the lock, the info and the runs
held: ``compactkit.sessions._file_leases``). While a run holds the lease no other writer can
touch the session's files, so its saves keep the journal open and check it by ``fstat``
(``compactkit.sessions._journal_file``).

Litter: a save killed mid-write (kill -9, power loss) leaves its temporary file behind (the
session's file still holds the previous state). Opening a store removes such stale temporary
files: those whose writer process on this host is gone, and any older than an hour (a writer on
another host sharing the directory). Temporary files of live savers are never touched.

File names: the session id, with every character other than ``a-z``, ``0-9``, ``-`` and ``_``
percent-encoded as UTF-8 (uppercase letters too, so names stay distinct on case-insensitive
file systems), plus ``.json``. The encoding is reversible, so ``list()`` returns the real ids;
ids like ``../x``, ``a/b`` or ``über`` cannot escape the directory or collide. Files are created
readable by their owner only.
"""

from __future__ import annotations

import builtins
import os
import tempfile
from pathlib import Path
from typing import Any, cast

from compactkit.errors import (
    ConcurrencyError,
    ConfigError,
    LeaseLostError,
    SessionNotFoundError,
    StorageError,
)
from compactkit.sessions._checks import require_session
from compactkit.sessions._file_leases import FileLeases
from compactkit.sessions._file_names import (
    HOST,
    SUFFIX,
    decode_session_id,
    encode_session_id,
    remove_stale_temp_files,
)
from compactkit.sessions._journal_file import (
    OpenJournal,
    append,
    fsync_directory,
    journal_missing,
    open_or_none,
    proof,
    remove,
)
from compactkit.sessions._locks import unlock as _unlock
from compactkit.sessions.journal import SaveMarks, read_journal, save_patch, save_whole
from compactkit.sessions.lease import (
    DEFAULT_TTL,
    SessionLease,
    check_lease_times,
    default_holder,
)
from compactkit.sessions.session import AgentSession, SessionState

__all__ = ["FileSessionStore"]

_JOURNAL = ".jnl"  # the patches saved after the base (no longer than SUFFIX: names fit)
_SAVE_WAIT = 30.0  # seconds a save outside a run waits for other saves of the session


class FileSessionStore:
    """Saves each session as one JSON file in ``directory`` (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        """Use ``directory``, creating it when missing.

        Stale temporary files of killed saves are removed (see the module docstring).

        Raises:
            ConfigError: ``directory`` is not a path.
            StorageError: the directory cannot be created.
        """
        if not isinstance(directory, (str, os.PathLike)) or not os.fspath(directory):
            raise ConfigError(
                f"FileSessionStore takes a directory path (str or pathlib.Path), got "
                f"{directory!r:.60}; pass e.g. FileSessionStore('sessions')"
            )
        self.directory = Path(directory)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create session directory {self.directory}: {exc}") from exc
        self.removed_temp_files = remove_stale_temp_files(self.directory)
        """How many stale temporary files opening the store removed."""
        self._scope = f"file:{self.directory.resolve()}"
        self._leases = FileLeases(self.directory)
        self._paths: dict[str, tuple[Path, Path]] = {}  # session id -> base and journal files
        self._marks = SaveMarks()

    def __repr__(self) -> str:
        return f"FileSessionStore({str(self.directory)!r})"

    def path(self, session_id: str) -> Path:
        """The file that holds ``session_id``."""
        return self._files_of(session_id)[0]

    def _files_of(self, session_id: str) -> tuple[Path, Path]:
        """The base and journal files of ``session_id`` (named once per session: every save
        of a run names them)."""
        found = self._paths.get(session_id) if isinstance(session_id, str) else None
        if found is None:  # (a bad id is refused by encode_session_id)
            path = self.directory / (encode_session_id(session_id) + SUFFIX)
            found = path, path.with_name(path.name[: -len(SUFFIX)] + _JOURNAL)
            if len(self._paths) >= 1024:  # a bound: a long-lived store sees many sessions
                self._paths.clear()
            self._paths[session_id] = found
        return found

    def save(self, session: AgentSession) -> None:
        """Save ``session.state()`` atomically, replacing its earlier state.

        Fenced: under ``session.lease`` (a run's) the save needs that lease's file lock, held
        by this store; without a lease it takes the lock for the write, and is refused while a
        run holds it. A session loaded or saved at an older revision than the file's (someone
        saved since) is refused too.

        Raises:
            StorageError: the existing file is corrupt or from a newer compactkit (it is left
                untouched), or the file cannot be written.
            LeaseLostError: ``session.lease`` is not held by this store (released, or from
                another store); nothing was saved.
            SessionBusyError: another run holds the session's lease; nothing was saved.
            ConcurrencyError: the session was saved since this object loaded it.
            ConfigError: ``session`` is not an ``AgentSession`` (a memory, an id).
        """
        session = require_session(session, "FileSessionStore")
        path, journal = self._files_of(session.session_id)
        lease = session.lease
        if lease is not None and lease.scope == self._scope:
            run = self._leases.run(lease.session_id, lease.token)
            if run is not None:
                with run.journal.lock:
                    if not run.journal.ended:
                        self._save_locked(session, path, journal, run.journal)
                        return
            raise LeaseLostError(
                f"the lease of session {lease.session_id!r} (token {lease.token}) is not "
                "held by this store any more; this save was not applied"
            )
        fd = self._leases.lock(session.session_id, timeout=_SAVE_WAIT, runs_only=True)
        try:
            self._save_locked(session, path, journal)
            self._leases.record(session.session_id)
        finally:
            _unlock(fd)

    def _save_locked(
        self, session: AgentSession, path: Path, journal: Path, kept: OpenJournal | None = None
    ) -> None:
        """Save under the session's file lock: check the revision, write, bump it.

        A patch is appended to the journal when this session object made the last save (its
        mark's file identities still match); otherwise the whole state is written. ``kept``:
        the journal a run keeps open for its saves (``compactkit.sessions._journal_file``).
        A whole state written over files this object's last save left (the journal outgrew
        the base) takes the revision from that save: the files are read back only when
        someone else may have written them."""
        if kept is not None and kept.session is session:
            mark = kept.mark  # the run's last save was this object's (kept by the run)
        else:
            mark = self._marks.get(session)
        try:
            ours = mark is not None and (
                (kept is not None and kept.extends(mark, path))
                or mark.proof == proof(path, journal)
            )
            if ours and mark is not None and not mark.outgrown():
                revision = mark.revision
                self._check_revision(session, revision)
                change = save_patch(session, mark, revision + 1)
                new_mark = change.mark
                if kept is None:
                    append(journal, change.data, created=journal_missing(mark))
                    new_mark.proof = proof(path, journal)
                else:
                    new_mark.proof = kept.append(journal, change.data, mark)
            else:
                if kept is not None:
                    kept.close()  # the new base replaces the journal
                if ours and mark is not None:
                    revision = mark.revision  # the files are what this object saved last
                else:
                    revision = self._stored_revision(session.session_id)
                self._check_revision(session, revision)
                data, new_mark = save_whole(session, revision + 1)
                self._write(path, data)
                remove(journal)  # its patches are older than the new base (skipped if left)
                new_mark.proof = proof(path, journal)
        except BaseException:
            self._marks.forget(session)
            if kept is not None:
                kept.close()
                if kept.session is session:
                    kept.session = kept.mark = None
            raise
        session.revision = revision + 1
        if kept is None:
            self._marks.set(session, new_mark)
            self._leases.saved(session.session_id, revision + 1, new_mark.proof)
            return
        if kept.session is not session and kept.session is not None and kept.mark is not None:
            self._marks.set(cast("AgentSession", kept.session), kept.mark)  # another object's
        # The run keeps them; its release hands them to the marks and the lease info.
        kept.session, kept.mark, kept.saved = session, new_mark, (revision + 1, new_mark.proof)

    def _stored_revision(self, session_id: str) -> int:
        """The revision of the files of ``session_id`` (0: none), read from them.

        Raises:
            StorageError: they are corrupt or from a newer compactkit (never overwritten).
        """
        try:
            return self.load(session_id).revision
        except SessionNotFoundError:
            return 0
        except StorageError as exc:
            raise StorageError(
                f"{exc}; not overwriting it — inspect it, move it away or delete it "
                f"(store.delete({session_id!r})) before saving"
            ) from exc

    @staticmethod
    def _check_revision(session: AgentSession, revision: int) -> None:
        if session.fenced_by_revision and session.revision != revision:
            raise ConcurrencyError(
                f"session {session.session_id!r} was saved by another run (revision "
                f"{revision}) since this object loaded it (revision {session.revision}); "
                "nothing was saved — resume it again to continue from the newer state"
            )

    def acquire(
        self,
        session_id: str,
        *,
        holder: str | None = None,
        timeout: float = 0.0,
        ttl: float = DEFAULT_TTL,
    ) -> SessionLease:
        """Take the lease of ``session_id`` for a run: an OS lock on ``<id>.lock``, held
        until ``release`` or until this process dies (``ttl`` is not needed: the operating
        system frees a dead holder's lock).

        Raises:
            SessionBusyError: another holder kept it for the whole ``timeout``.
            ConfigError: the id cannot name a file, or ``timeout`` is not a number of seconds.
        """
        check_lease_times(timeout, ttl)
        holder = holder or default_holder()
        token, since, revision = self._leases.begin(
            session_id, holder, timeout, lambda info: self._saved_revision(session_id, info)
        )
        return SessionLease(session_id, holder, token, since, revision, self._scope)

    def release(self, lease: SessionLease) -> None:
        """Give ``lease`` back (nothing when this store does not hold it)."""
        ended = self._leases.end(lease.session_id, lease.token)
        if ended is not None and ended.session is not None and ended.mark is not None:
            # (no save of the run can follow its end: the next one writes from this mark)
            self._marks.set(cast("AgentSession", ended.session), ended.mark)

    def _files(self, session_id: str) -> tuple[int, ...]:
        """The identities of the session's base and journal files (``_proof``)."""
        return proof(*self._files_of(session_id))

    def _saved_revision(self, session_id: str, info: dict[str, Any]) -> tuple[int, tuple[int, ...]]:
        """The revision of the saved state and the identities of its files: the lease info's
        revision while the files are the ones it was written for, else read from the files (a
        run killed before its release, a lease info written by an older compactkit)."""
        files = self._files(session_id)
        if info.get("files") == list(files):
            return int(info.get("revision", 0)), files
        try:
            return self.load(session_id).revision, files
        except SessionNotFoundError:
            return 0, files
        except StorageError:  # a corrupt file: saves refuse it; the lease does not read it
            return int(info.get("revision", 0)), files

    def load(self, session_id: str) -> SessionState:
        """The saved state of ``session_id``.

        Raises:
            SessionNotFoundError: there is no file for ``session_id``.
            StorageError: the file cannot be read, is corrupt, is from a newer compactkit or
                holds another session.
        """
        path, journal = self._files_of(session_id)
        try:
            # The journal is opened before the base is read: a save writing a new base meanwhile
            # removes the journal, so the one read here is the base's or older (its patches
            # are then skipped as stale), never a newer base's.
            with open_or_none(journal) as patches_file:
                data = path.read_bytes()
                lines = b"" if patches_file is None else patches_file.read()
        except FileNotFoundError:
            raise SessionNotFoundError(session_id) from None
        except OSError as exc:
            raise StorageError(f"cannot read {path}: {exc}") from exc
        # The text after the last newline is an append killed mid-write (never acknowledged).
        patches = lines.split(b"\n")[:-1]
        state = read_journal(data, patches, source=str(path))
        if state.session_id != session_id:
            raise StorageError(
                f"{path} holds session {state.session_id!r}, not {session_id!r} "
                "(was it renamed or copied by hand?)"
            )
        return state

    def delete(self, session_id: str) -> bool:
        """Delete the session's file, even a corrupt one; ``False`` when there was none."""
        path, journal = self._files_of(session_id)
        remove(journal)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StorageError(f"cannot delete {path}: {exc}") from exc
        fsync_directory(self.directory)
        return True

    def list(self) -> builtins.list[str]:
        """The ids of the saved sessions, sorted (files that are not ours are ignored)."""
        ids: builtins.list[str] = []
        try:
            with os.scandir(self.directory) as entries:
                for entry in entries:
                    name = entry.name
                    if name.startswith(".") or not name.endswith(SUFFIX):
                        continue  # temporary files start with "."
                    if not entry.is_file():
                        continue
                    session_id = decode_session_id(name[: -len(SUFFIX)])
                    if session_id is not None:
                        ids.append(session_id)
        except OSError as exc:
            raise StorageError(f"cannot list {self.directory}: {exc}") from exc
        return sorted(ids)

    def _write(self, path: Path, data: bytes) -> None:
        try:
            prefix = f".tmp-{HOST}-{os.getpid()}-"
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=prefix, suffix=".tmp")
        except OSError as exc:
            raise StorageError(f"cannot write in {self.directory}: {exc}") from exc
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, path)
        except BaseException as exc:
            Path(temp).unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise StorageError(f"cannot write {path}: {exc}") from exc
            raise
        fsync_directory(self.directory)
