"""``Governor.preview`` (issue 29): what a compaction would do, on a stored session, writing
nothing and calling no summarizer; a deterministic preview predicts the real compaction."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sql_support import Database, database, postgres  # noqa: F401

from compactkit.budget import counter_for
from compactkit.compressors import LadderCompressor
from compactkit.compressors.preview import item_refs, preview_compaction
from compactkit.compressors.summary import SummaryCompressor
from compactkit.errors import ConfigError
from compactkit.items import FunctionCall, Message
from compactkit.items.snapshot import MemorySnapshot
from compactkit.runtime import Governor
from compactkit.sql.memory import SQLMemory
from compactkit.testing import ScriptedLLM

MODEL = "gpt-4o"


def _fill(memory: SQLMemory, turns: int) -> None:
    for turn in range(turns):
        memory.add_user_input(f"step {turn}: read file_{turn}.py and fix the failing test")
        call = FunctionCall(call_id=f"c{turn}", name="read_file", arguments=f'{{"n": {turn}}}')
        memory.add_output_items([call])
        memory.add_tool_output(f"c{turn}", f"def f_{turn}():\n" + "    return 1\n" * 150)
        memory.add_output_items([Message(role="assistant", content=f"fixed file_{turn}.py")])


def _stored(db: Database, session: str) -> dict[str, Any]:
    """What a second reader of the session sees."""
    reader = SQLMemory(db.url, session, table_prefix=db.prefix)
    snapshot = reader.snapshot()
    return {
        "snapshot": snapshot.model_dump(mode="json", exclude={"version"}),
        "version": snapshot.version,
        "history": [item.model_dump(mode="json") for item in reader.history()],
        "compactions": [repr(record) for record in reader.compactions()],
    }


def test_preview_of_an_llm_summary_writes_nothing_and_calls_no_summarizer(
    database: Database,  # noqa: F811
) -> None:
    session = uuid.uuid4().hex
    memory = SQLMemory(database.url, session, table_prefix=database.prefix)
    _fill(memory, 12)
    before = _stored(database, session)
    llm = ScriptedLLM([])  # any call would fail the test: there is no reply to give
    counter = counter_for(MODEL)
    summary = SummaryCompressor(llm, target_tokens=2_000, counter=counter)
    governor = Governor.for_model(MODEL, compressor=summary)

    preview = governor.preview(memory)

    assert llm.calls == []
    assert _stored(database, session) == before
    assert preview.changed and preview.estimated
    assert preview.summarizer_calls >= 1 and preview.summarizer_input_tokens > 0
    assert preview.tokens_after < preview.tokens_before
    seqs = [item.seq for item in memory.snapshot().items]
    assert sorted(preview.kept + preview.masked + preview.folded) == seqs
    assert preview.folded[0] == seqs[0]  # the oldest are folded, the newest kept
    assert preview.kept[-1] == seqs[-1]
    assert preview.cost is None  # no prices known for this summarizer


def test_a_deterministic_preview_predicts_the_compaction_exactly(
    database: Database,  # noqa: F811
) -> None:
    session = uuid.uuid4().hex
    memory = SQLMemory(database.url, session, table_prefix=database.prefix)
    _fill(memory, 12)
    counter = counter_for(MODEL)
    ladder = LadderCompressor(2_000, counter=counter, keep_last_groups=2)
    governor = Governor.for_model(MODEL, compressor=ladder)
    before = _stored(database, session)

    preview = governor.preview(memory)

    assert _stored(database, session) == before
    assert preview.summarizer_calls == 0 and not preview.estimated
    step = governor.step(memory, force=True)
    assert step.compaction is not None and step.compacted
    assert preview.compressor == step.compaction.stats.compressor
    assert preview.tokens_after == step.compaction.stats.tokens_after
    assert preview.tokens_before == step.compaction.stats.tokens_before
    after_seqs = {item.seq for item in memory.snapshot().items}
    assert set(preview.kept) | set(preview.masked) == after_seqs
    assert not set(preview.folded) & after_seqs


def test_preview_json_names_items_in_compact_form() -> None:
    assert item_refs([12, 13, 14, 3, 18, 17]) == "#3, #12-14, #17-18"
    assert item_refs([]) == ""
    items = [Message(role="user", content=f"message {n} " + "word " * 200) for n in range(10)]
    counter = counter_for(MODEL)
    summary = SummaryCompressor(ScriptedLLM([]), keep_last_groups=2, counter=counter)
    preview = preview_compaction(summary, MemorySnapshot.of(items))
    shown = preview.to_json()
    assert shown["dry_run"] is True
    # Positions (never stored): the latest user input stays, and the 2 groups before it.
    assert shown["kept"] == "#7-9" and shown["folded"] == "#0-6"
    assert shown["summarizer_calls"] == preview.summarizer_calls >= 1


def test_a_compressor_that_might_call_a_model_is_refused() -> None:
    class Custom:
        name = "custom"

        def compress(self, snapshot: MemorySnapshot) -> Any:
            raise AssertionError("a preview must not run it")

    governor = Governor.for_model(MODEL, compressor=Custom())
    from compactkit.memory import InMemoryMemory

    memory = InMemoryMemory()
    memory.add_user_input("hello")
    with pytest.raises(ConfigError, match="cannot preview a Custom"):
        governor.preview(memory)
    with pytest.raises(ConfigError, match="compaction is off"):
        Governor.for_model(MODEL, compaction=False).preview(memory)
