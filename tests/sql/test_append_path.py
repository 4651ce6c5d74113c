"""The append hot path of SQLMemory on an SQLite file: the connection the process's appends
share (threads, pool, engine disposal, forks, failures), items copied with their seq without
``model_copy`` and timestamps formatted without ``datetime`` (both read back as they were)."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine

from compactkit.errors import ConfigError
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, TextPart
from compactkit.sql.memory import SQLMemory


def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/m.db"


def test_threads_sharing_one_memory_all_land_in_one_order(tmp_path: Path) -> None:
    memory = SQLMemory(url(tmp_path), "s")
    other = SQLMemory(url(tmp_path), "s")  # a second object on the same engine and session
    errors: list[BaseException] = []

    def write(worker: int, target: SQLMemory) -> None:
        try:
            for n in range(25):
                target.add_user_input(f"w{worker}-{n}")
                target.add_output_items([FunctionCall(call_id=f"w{worker}-{n}", name="ls")])
                target.add_tool_output(f"w{worker}-{n}", "ok")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=write, args=(w, memory if w % 2 else other)) for w in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    history = SQLMemory(url(tmp_path), "s").history()
    assert [item.seq for item in history] == list(range(1, 6 * 25 * 3 + 1))
    for w in range(6):
        mine = [item for item in history if getattr(item, "call_id", "").startswith(f"w{w}-")]
        assert [i.type for i in mine] == ["function_call", "function_call_output"] * 25
    assert memory.snapshot().items == tuple(history)


def test_appends_keep_no_connection_from_a_small_pool(tmp_path: Path) -> None:
    # One pooled connection and no overflow: if appends held it, the reads would time out.
    engine = create_engine(url(tmp_path), pool_size=1, max_overflow=0, pool_timeout=2)
    memory = SQLMemory(engine, "s")
    reader = SQLMemory(engine, "s")
    for n in range(5):
        memory.add_user_input(f"u{n}")
        assert len(reader.snapshot().items) == n + 1
        assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]


def test_appends_go_on_after_the_engine_is_disposed(tmp_path: Path) -> None:
    memory = SQLMemory(url(tmp_path), "s")
    memory.add_user_input("before")
    memory.engine.dispose()
    memory.add_user_input("after")
    assert [item.text for item in SQLMemory(url(tmp_path), "s").history()] == ["before", "after"]


def test_a_refused_append_stores_nothing_and_the_next_one_lands(tmp_path: Path) -> None:
    memory = SQLMemory(url(tmp_path), "s")
    memory.add_user_input("first")
    version = memory.version
    with pytest.raises(ConfigError, match="unknown call id"):
        memory.add_tool_output("nope", "out")
    with pytest.raises(ConfigError, match="already used"):
        memory.add_output_items([FunctionCall(call_id="a", name="x")] * 2)
    assert memory.version == version
    memory.add_user_input("second")
    reopened = SQLMemory(url(tmp_path), "s")
    assert [item.text for item in reopened.history()] == ["first", "second"]
    assert [item.seq for item in reopened.history()] == [1, 2]


def _child_appends(memory: SQLMemory) -> None:
    for n in range(10):
        memory.add_user_input(f"child{n}")


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="the platform cannot fork"
)
def test_a_forked_child_appends_through_a_connection_of_its_own(tmp_path: Path) -> None:
    memory = SQLMemory(url(tmp_path), "s")
    memory.add_user_input("parent0")  # the parent now holds its append connection
    child = multiprocessing.get_context("fork").Process(target=_child_appends, args=(memory,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    memory.add_user_input("parent1")  # the parent's connection still works
    texts = [item.text for item in SQLMemory(url(tmp_path), "s").history()]
    assert texts == ["parent0", *(f"child{n}" for n in range(10)), "parent1"]
    with sqlite3.connect(f"{tmp_path}/m.db") as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# -- the payload JSON ------------------------------------------------------------------------

TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)  # valid Unicode only
MAYBE = st.none() | TEXT
ITEMS: st.SearchStrategy[Item] = st.one_of(
    st.builds(
        Message,
        role=st.sampled_from(["system", "developer", "user", "assistant"]),
        content=TEXT | st.tuples(st.builds(TextPart, text=TEXT)),
        id=MAYBE,
        name=MAYBE,
        extra=st.none() | st.just({"k": [1, "é"]}),
        pinned=st.booleans(),
    ),
    st.builds(FunctionCall, call_id=TEXT, name=TEXT, arguments=TEXT, id=MAYBE),
    st.builds(
        FunctionCallOutput,
        call_id=TEXT,
        output=TEXT | st.tuples(st.builds(TextPart, text=TEXT)),
        id=MAYBE,
        name=MAYBE,
        is_error=st.none() | st.booleans(),
    ),
)


@settings(deadline=None, max_examples=60)
@given(st.lists(ITEMS, min_size=1, max_size=3))
def test_what_an_append_stores_reads_back_equal(tmp_path_factory: Any, items: list[Item]) -> None:
    url = f"sqlite:///{tmp_path_factory.getbasetemp()}/property.db"
    memory = SQLMemory(url, uuid.uuid4().hex, accept_unknown_call_ids=True)
    calls = {i.call_id for i in items if isinstance(i, FunctionCall)}
    if len(calls) < sum(isinstance(i, FunctionCall) for i in items):
        return  # a batch repeating a call id is refused (tested elsewhere)
    outputs = [i.call_id for i in items if isinstance(i, FunctionCallOutput)]
    if len(set(outputs)) < len(outputs):
        return  # so is a second output for one call
    memory.add_output_items(items)
    expected = tuple(i.model_copy(update={"seq": n}) for n, i in enumerate(items, 1))
    assert memory.snapshot().items == expected  # the cache the append extended
    assert SQLMemory(url, memory.session_id).snapshot().items == expected  # the rows


def test_append_timestamps_are_sqlalchemys_text(tmp_path: Path) -> None:
    before = datetime.now(timezone.utc).replace(tzinfo=None)
    memory = SQLMemory(url(tmp_path), "s")
    memory.add_user_input("x")
    info = memory.info()
    assert info is not None
    after = datetime.now(timezone.utc).replace(tzinfo=None)
    for stamp in (info.created_at, info.updated_at):
        assert before <= stamp.replace(tzinfo=None) <= after


def test_stored_text_reads_back_exactly(tmp_path: Path) -> None:
    odd = 'quote " backslash \\ nul \x00 newline \n tab \t é 中文 \u2028 \U0001f600 \x7f'
    items = [
        Message(role="assistant", content=odd, id=odd, name=odd),
        FunctionCall(call_id=odd, name=odd, arguments=odd),
        FunctionCallOutput(call_id=odd, output=odd, name=odd, is_error=True),
    ]
    memory = SQLMemory(url(tmp_path), uuid.uuid4().hex)
    memory.add_output_items(items)
    stored = SQLMemory(url(tmp_path), memory.session_id).history()
    expected = [i.model_copy(update={"seq": n}) for n, i in enumerate(items, 1)]
    # The call id column stores NUL as U+FFFD; the payload keeps the id exactly.
    assert stored == expected
