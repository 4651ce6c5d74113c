"""What ``restore()`` and the stores refuse, on every backend: a restored state appends could
not have built, and session ids no store can hold."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from sql_support import Database, database, postgres  # noqa: F401

from compactkit.errors import ConfigError
from compactkit.items import FunctionCall, FunctionCallOutput, Message
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory import AgentMemory, InMemoryMemory
from compactkit.sessions import AgentSession, FileSessionStore, new_session
from compactkit.sql.memory import SQLMemory
from compactkit.sql.store import SQLSessionStore

LONE_SURROGATE = "user-\ud800"


@pytest.fixture(params=["in-memory", "sql"])
def make_memory(
    request: pytest.FixtureRequest,
    database: Database,  # noqa: F811
) -> Callable[..., AgentMemory]:
    if request.param == "in-memory":
        return lambda **options: InMemoryMemory(**options)
    counter = iter(range(10**6))
    return lambda **options: SQLMemory(
        database.url,
        f"restore-{next(counter)}-{id(request)}",
        table_prefix=database.prefix,
        **options,
    )


def call(call_id: str, seq: int) -> FunctionCall:
    return FunctionCall(call_id=call_id, name="ls", arguments="{}", seq=seq)


def output(call_id: str, seq: int) -> FunctionCallOutput:
    return FunctionCallOutput(call_id=call_id, output="x", seq=seq)


@pytest.mark.parametrize(
    ("items", "named"),
    [
        ([output("c9", 1)], r"seq=1 \(function_call_output, call id 'c9'\).*unknown call id"),
        ([call("c1", 1), call("c1", 2)], r"seq=2 \(function_call, call id 'c1'\).*already used"),
        (
            [call("c1", 1), output("c1", 2), output("c1", 3)],
            r"seq=3 .*already has an output",
        ),
    ],
    ids=["orphan-output", "duplicate-call-id", "second-output"],
)
def test_restore_refuses_what_appends_could_not_build_and_changes_nothing(
    make_memory: Callable[..., AgentMemory], items: list[Message], named: str
) -> None:
    memory = make_memory()
    memory.add_user_input("kept")
    before = memory.snapshot()
    with pytest.raises(ConfigError, match=named):
        memory.restore(MemorySnapshot(items=tuple(items)))
    assert memory.snapshot() == before


def test_an_orphan_output_restores_where_unknown_call_ids_are_accepted(
    make_memory: Callable[..., AgentMemory],
) -> None:
    memory = make_memory(accept_unknown_call_ids=True)
    memory.restore(MemorySnapshot(items=(output("c9", 1),)))
    assert [item.seq for item in memory.items] == [1]


def test_an_id_with_a_lone_surrogate_is_refused_at_construction(
    database: Database,  # noqa: F811
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match="lone surrogate"):
        SQLMemory(database.url, LONE_SURROGATE, table_prefix=database.prefix)
    with pytest.raises(ConfigError, match="lone surrogate"):
        AgentSession(session_id=LONE_SURROGATE)
    with pytest.raises(ConfigError, match="lone surrogate"):
        new_session(
            lambda sid: SQLMemory(database.url, sid, table_prefix=database.prefix),
            session_id=LONE_SURROGATE,
        )
    for store in (
        SQLSessionStore(database.url, table_prefix=database.prefix),
        FileSessionStore(tmp_path),
    ):
        with pytest.raises(ConfigError):
            store.load(LONE_SURROGATE)
