"""Opening a SQLite file another process is writing: workers started together on a new file."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path

from compactkit.sql import SQLMemory


def test_a_memory_opens_a_new_file_while_another_connection_writes_to_it(tmp_path: Path) -> None:
    """Switching a new file to WAL needs an exclusive lock, and SQLite answers "database is
    locked" at once (no busy wait) while another connection holds a write lock: the open waits
    for it instead of failing (two worker processes hit this in CI)."""
    path = tmp_path / "shared.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE their_table (x)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO their_table VALUES (1)")
    released = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    released.start()
    try:
        memory = SQLMemory(f"sqlite:///{path}", "s1")
        memory.add_user_input("hello")
    finally:
        released.join()
        other.close()
    again = SQLMemory(f"sqlite:///{path}", "s1")
    assert [i.text for i in again.snapshot().items] == ["hello"]
    with closing(sqlite3.connect(path)) as check:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
