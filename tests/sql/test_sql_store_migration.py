"""Saved sessions written by an older schema load after the migration, and keep saving.

Schema 5 moved ``SQLSessionStore``'s saved base state out of the session's row (which every save
updates) into ``<prefix>session_bases``. A database at schema 3 (the state alone in
``sessions.state``) or 4 (a base there plus patches in ``session_patches``) is written here as
those versions laid it out, then opened by today's store.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

import pytest
from sql_support import Database, database, drop, postgres  # noqa: F401
from sqlalchemy import create_engine, insert, select

from compactkit.items import Message
from compactkit.sessions.journal import save_patch, save_whole
from compactkit.sessions.session import AgentSession, SessionState
from compactkit.sql import SQLMemory, SQLSessionStore
from compactkit.sql import _schema as _sqlschema


def comparable(state: SessionState) -> dict[str, Any]:
    return state.model_dump(mode="json", exclude={"updated_at", "revision"})


def old_database(db: Database, version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Create the tables of ``db.prefix`` as schema ``version`` made them."""
    t = _sqlschema.tables(db.prefix)
    with monkeypatch.context() as patched:
        patched.setattr(_sqlschema, "MIGRATIONS", _sqlschema.MIGRATIONS[:version])
        engine = create_engine(db.url)
        with engine.begin() as conn:
            _sqlschema.migrate(conn, t)
        engine.dispose()


def write_old_state(db: Database, version: int, session: AgentSession, saves: int) -> None:
    """Save ``session`` as schema ``version`` did: its base in ``sessions.state``, and (version
    4) a patch per later save in ``session_patches``; the session changes between saves."""
    t = _sqlschema.tables(db.prefix)
    data, mark = save_whole(session, 1)
    patches = []
    for n in range(saves if version >= 4 else 0):
        session.memory.add_user_input(f"after the base {n}")
        session.memory.add_output_items([Message(role="assistant", content=f"answer {n}")])
        session.step += 1
        change = save_patch(session, mark, mark.revision + 1)
        patches.append(change.data.decode())
        mark = change.mark
    now = datetime.now(timezone.utc)
    row: dict[str, Any] = {
        "id": session.session_id,
        "state": data.decode(),
        "state_revision": 1 + len(patches),
        "created_at": now,
        "updated_at": now,
    }
    if version >= 4:
        row["state_base"] = 12345
    engine = create_engine(db.url)
    with engine.begin() as conn:
        conn.execute(insert(t.sessions).values(**row))
        for revision, patch in enumerate(patches, start=2):
            conn.execute(
                insert(t.session_patches).values(
                    session_id=session.session_id, revision=revision, patch=patch
                )
            )
    engine.dispose()


@pytest.mark.parametrize("version", [3, 4])
def test_a_session_saved_by_an_older_schema_loads_and_keeps_saving(
    database: Database,  # noqa: F811
    version: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = Database(database.name, database.url, f"o{uuid.uuid4().hex[:8]}_")
    try:
        old_database(db, version, monkeypatch)
        session = AgentSession(session_id="old", metadata={"user": "ada"})
        session.memory.add_user_input("saved by an older compactkit ü")
        session.turn = 1
        write_old_state(db, version, session, saves=3)
        engine = create_engine(db.url)
        store = SQLSessionStore(engine, table_prefix=db.prefix)  # migrates to the newest
        assert comparable(store.load("old")) == comparable(session.state())
        assert store.list() == ["old"]
        t = _sqlschema.tables(db.prefix)
        with engine.connect() as conn:
            versions = conn.execute(select(t.schema_version.c.version)).scalars().all()
            left = conn.execute(select(t.sessions.c.state)).scalars().all()
        assert sorted(versions) == list(range(1, _sqlschema.SCHEMA_VERSION + 1))
        assert left == [None]  # the base moved out of the session's row

        resumed = AgentSession.from_state(store.load("old"))
        for n in range(3):  # a whole save (no mark yet), then patches
            resumed.memory.add_user_input(f"after the migration {n}")
            store.save(resumed)
        fresh = create_engine(db.url)
        assert comparable(SQLSessionStore(fresh, table_prefix=db.prefix).load("old")) == comparable(
            resumed.state()
        )
        fresh.dispose()
        memory = SQLMemory(engine, "old", table_prefix=db.prefix)
        info = memory.info()
        assert info is not None and info.saved_state
        assert store.delete("old") and store.list() == []
        engine.dispose()
    finally:
        drop(db)
