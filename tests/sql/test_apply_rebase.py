"""A compaction that runs while another process keeps appending lands (issue 17): ``apply``
rebases the result over the appends, on SQLite and PostgreSQL, with two processes."""

from __future__ import annotations

import uuid

import sql_workers
from sql_support import Database, database, postgres  # noqa: F401

from compactkit.items import item_text
from compactkit.sql.memory import SQLMemory


def test_compactions_land_while_another_process_appends_every_20_ms(
    database: Database,  # noqa: F811
) -> None:
    session = uuid.uuid4().hex
    memory = SQLMemory(database.url, session, table_prefix=database.prefix)
    memory.add_user_input("start")
    appender = sql_workers.start(
        sql_workers.paced_append, (database.url, database.prefix, session, 40, 0.02)
    )
    attempted = applied = 0
    while appender[0].is_alive():
        result = sql_workers.keep_last(memory.snapshot(), 3)
        if result.changed:
            attempted += 1
            applied += memory.apply(result)  # a ConcurrencyError here fails the test
    assert sql_workers.join(appender) == [0]
    assert attempted > 0 and applied == attempted
    history = [item_text(item) for item in memory.history()]
    assert history == ["start", *(f"p{n}" for n in range(40))]
    active = [item_text(item) for item in memory.snapshot().items]
    folded = memory.summary.split(" | ")
    assert folded + active == history  # every item folded once, in order, or still active
    assert len(memory.compactions()) == applied
