"""OS file locks for the file store's session lease, and the waits between attempts.

POSIX: ``flock`` on the lock file (released by the kernel when the holding process dies, which
is how a killed holder's lease ends). Windows: ``msvcrt.locking`` on its first byte (also
released when the process exits). Network file systems may not honour either: keep a file
store that several machines share on a local disk, or use the SQL store.
"""

from __future__ import annotations

import os
import sys

__all__ = ["try_lock", "unlock"]

if sys.platform == "win32":  # pragma: no cover - the CI runs on Linux
    import msvcrt

    def _try(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _release(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _release(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def try_lock(fd: int) -> bool:
    """Lock the open file ``fd`` for this process, without waiting; whether it was free."""
    return _try(fd)


def unlock(fd: int) -> None:
    """Unlock and close ``fd``."""
    try:
        _release(fd)
    finally:
        os.close(fd)
