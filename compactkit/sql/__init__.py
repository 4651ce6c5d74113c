"""Everything SQL: engine, schema and migrations, the SQL memory and the SQL session store.

Needs SQLAlchemy (``pip install 'compactkit[sql]'``, or ``[postgres]`` for PostgreSQL). May
import every layer below it (items … sessions); nothing below imports it.
"""

from compactkit.sql.memory import CompactionRecord, SQLMemory, SQLSessionInfo, list_sql_sessions
from compactkit.sql.store import SQLSessionStore

__all__ = [
    "CompactionRecord",
    "SQLMemory",
    "SQLSessionInfo",
    "SQLSessionStore",
    "list_sql_sessions",
]
