"""What ``FileSessionStore`` names its files by: a session id as a reversible, portable file name
stem, and the temporary files a save writes (named by host and process, so that the litter of a
save that can no longer finish is recognised and removed). Kept apart from the store's saving,
locking and loading."""

from __future__ import annotations

import functools
import os
import re
import socket
import time
from pathlib import Path
from urllib.parse import unquote

from compactkit.errors import ConfigError

__all__ = ["HOST", "SUFFIX", "decode_session_id", "encode_session_id", "remove_stale_temp_files"]

SUFFIX = ".json"  # a session's base file
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
_MAX_NAME = 255  # bytes in a file name on common file systems
_STALE_SECONDS = 3600.0  # a temporary file this old is litter whoever wrote it
_TEMP = re.compile(r"\.tmp-(?P<host>[A-Za-z0-9-]*)-(?P<pid>\d+)-.*\.tmp")
HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40]
_WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))]
)


def encode_session_id(session_id: str) -> str:
    """The file name stem of ``session_id`` (reversible with ``decode_session_id``).

    Raises:
        ConfigError: the id is empty, not encodable as UTF-8, or too long for a file name.
    """
    if not isinstance(session_id, str) or not session_id:
        raise ConfigError(f"a session id must be a non-empty string, got {session_id!r}")
    return _encoded(session_id)


@functools.lru_cache(maxsize=1024)  # every save and lease names its files: encode an id once
def _encoded(session_id: str) -> str:
    try:
        stem = "".join(
            ch if ch in _SAFE else "".join(f"%{b:02X}" for b in ch.encode()) for ch in session_id
        )
    except UnicodeEncodeError as exc:
        raise ConfigError(f"session id {session_id!r} is not valid Unicode text") from exc
    if stem in _WINDOWS_DEVICES:  # reserved names on Windows: escape the first letter
        stem = f"%{ord(stem[0]):02X}{stem[1:]}"
    if len(stem) + len(SUFFIX) > _MAX_NAME:
        raise ConfigError(
            f"session id {session_id[:40]!r}… is too long for a file name "
            f"({len(stem)} bytes encoded; the limit is {_MAX_NAME - len(SUFFIX)})"
        )
    return stem


def decode_session_id(stem: str) -> str | None:
    """The session id a file name stem encodes; ``None`` when it is not one of ours."""
    try:
        session_id = unquote(stem, errors="strict")
        return session_id if encode_session_id(session_id) == stem else None
    except (UnicodeDecodeError, ConfigError):
        return None


def remove_stale_temp_files(directory: Path) -> int:
    """Remove the temporary files of saves that can no longer finish; how many were removed."""
    removed = 0
    now = time.time()
    try:
        with os.scandir(directory) as entries:
            candidates = [e for e in entries if e.name.startswith(".") and e.name.endswith(".tmp")]
        for entry in candidates:
            try:
                age = now - entry.stat(follow_symlinks=False).st_mtime
                if not entry.is_file(follow_symlinks=False) or not _stale(entry.name, age):
                    continue
                os.unlink(entry.path)
                removed += 1
            except FileNotFoundError:  # its saver finished (or another opener removed it)
                continue
    except OSError:  # cleaning is a courtesy: a store that can be read still opens
        return removed
    return removed


def _stale(name: str, age: float) -> bool:
    if age > _STALE_SECONDS:
        return True
    match = _TEMP.fullmatch(name)
    if match is None or match["host"] != HOST:
        return False  # an older compactkit's, or another host's: only age tells
    pid = int(match["pid"])
    if pid == os.getpid() or os.name == "nt":  # Windows: os.kill(pid, 0) is not a probe
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, OSError):
        return False  # alive under another user, or not a pid we can ask about
    return False
