"""Provenance: every summary entry names the items it was drawn from (``[#412-418]``), on every
backend, through later compactions, and ``expand`` returns exactly those items — read back by
another object (SQL) or another process (the file store, through the CLI)."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sql_support import Database, fast_engine, postgres, sqlite_database  # noqa: F401

from compactkit import InMemoryMemory, Message
from compactkit.compressors import DigestCompressor
from compactkit.compressors._refs import MAX_RANGES, merge_spans, split_refs
from compactkit.compressors.sections import REFS_NOTE, SummaryDocument
from compactkit.compressors.summary import SummaryCompressor
from compactkit.items import FunctionCall, FunctionCallOutput, item_text
from compactkit.memory.recall import parse_ref
from compactkit.sessions import AgentSession, FileSessionStore
from compactkit.sql import SQLMemory
from compactkit.testing import FunctionLLM

Factory = Callable[[], Any]
_REFS = re.compile(r" \[(#[^\]]+)\]$")


@pytest.fixture(params=["in_memory", "sqlite", "postgresql"])
def new_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    if request.param == "in_memory":
        yield InMemoryMemory
        return
    if request.param == "sqlite":
        url, prefix = sqlite_database(tmp_path).url, "compactkit_"
    else:
        db: Database = request.getfixturevalue("postgres")
        url, prefix = db.url, db.prefix
    engine = fast_engine(url)
    yield lambda: SQLMemory(engine, uuid.uuid4().hex, table_prefix=prefix)
    engine.dispose()


def reopened(memory: Any) -> Any:
    if isinstance(memory, SQLMemory):
        return SQLMemory(memory.engine, memory.session_id, table_prefix=memory.table_prefix)
    return memory


def work(memory: Any, start: int, stop: int) -> None:
    """Turns that each leave facts: a user rule, a command and its failure, a file, a value."""
    for i in range(start, stop):
        # (the rule in a paragraph of its own: a rule the goal quotes is said once, in the goal)
        memory.add_user_input(f"Task {i}: make `src/mod{i % 3}.py` pass.\n\nNever touch vendor/.")
        call = FunctionCall(
            call_id=f"c{i}", name="bash", arguments=json.dumps({"command": f"pytest t{i % 2}.py"})
        )
        noise = "".join(f"collected line {n} of the run, nothing to see\n" for n in range(30))
        out = FunctionCallOutput(call_id=f"c{i}", output=f"{noise}E   KeyError: 'k{i}'\n1 failed")
        memory.add_output_items([call, out])
        memory.add_output_items(
            [Message(role="assistant", content=f"Set timeout_ms to {100 + i}. Done with {i}.")]
        )


def entries_with_refs(summary: str) -> list[tuple[str, list[str]]]:
    doc = SummaryDocument.parse(summary)
    out = []
    for key in doc.sections:
        for entry in doc.entries(key):
            found = _REFS.search(entry)
            out.append((entry, found.group(1).split(", ") if found else []))
    return out


def fact_of(entry: str) -> str:
    """The verbatim part of an entry its source items must hold."""
    text = split_refs(entry)[0]
    code = re.match(r"^`([^`]+)`", text)
    if code:
        return code.group(1).rstrip("…")
    text = text.removeprefix("As of the last folded turn, the assistant said: ")
    return text.removeprefix("Later: ")[:20]


def test_every_digest_entry_names_the_items_it_came_from(new_memory: Factory) -> None:
    memory = new_memory()
    work(memory, 0, 12)
    memory.compact(DigestCompressor(keep_last_groups=2))
    summary = reopened(memory).summary
    assert REFS_NOTE in summary and "expand(" in summary
    entries = entries_with_refs(summary)
    assert entries and all(refs for _, refs in entries), summary
    for entry, refs in entries:
        assert len(refs) <= MAX_RANGES
        expanded = [item for ref in refs for item in reopened(memory).expand(ref)]
        assert expanded, entry
        text = "\n".join(
            item_text(i) + (i.arguments if isinstance(i, FunctionCall) else "") for i in expanded
        )
        assert fact_of(entry).casefold() in text.casefold(), (entry, text)
        # exactly the items the reference names, no more
        for ref in refs:
            first, last = parse_ref(ref)
            assert [i.seq for i in reopened(memory).expand(ref)] == list(range(first, last + 1))


def test_references_survive_later_compactions(new_memory: Factory) -> None:
    memory = new_memory()
    work(memory, 0, 8)
    memory.compact(DigestCompressor(keep_last_groups=2))
    first = dict(entries_with_refs(memory.summary))
    goal = next(e for e in first if e.startswith("Task 0"))
    assert goal.endswith("[#1]")
    work(memory, 8, 16)
    memory.compact(DigestCompressor(keep_last_groups=2))
    later = entries_with_refs(reopened(memory).summary)
    assert goal in dict(later)  # the goal still names the first message
    rule = next(refs for entry, refs in later if entry.startswith("Never touch vendor/."))
    seqs = [s for ref in rule for s in range(parse_ref(ref)[0], parse_ref(ref)[1] + 1)]
    assert min(seqs) == 1 and max(seqs) > 8 * 4  # said in the first and the second fold


def test_a_fresh_process_expands_a_reference_from_the_file_store(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "sessions")
    session = AgentSession(InMemoryMemory(), session_id="s1")
    work(session.memory, 0, 10)
    session.memory.compact(DigestCompressor(keep_last_groups=2))
    store.save(session)
    summary = store.load("s1").memory.summary
    entry, refs = next((e, r) for e, r in entries_with_refs(summary) if "KeyError" in e)
    shown = subprocess.run(
        [sys.executable, "-m", "compactkit", "expand", str(tmp_path / "sessions"), "s1", refs[0]],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "KeyError: 'k" in shown and fact_of(entry) in shown


def _summarizer(cite: Callable[[str], str]) -> FunctionLLM:
    """A summarizer that writes one decision about the first item it is shown, citing what
    ``cite`` returns for that item's reference."""

    def answer(messages: list[dict[str, str]]) -> str:
        shown = re.findall(r"^#(\d+) \[", messages[-1]["content"], re.M)
        return (
            f"## Decisions and why\n- Chose retries because of the flaky network{cite(shown[0])}\n"
        )

    return FunctionLLM(answer)


@pytest.mark.parametrize(
    ("cite", "expected"),
    [
        (lambda seq: f" [#{seq}]", lambda shown: f"[#{shown[0]}]"),
        (lambda seq: " [#999999]", lambda shown: f"[#{shown[0]}\u2013{shown[-1]}]"),
        (lambda seq: "", lambda shown: f"[#{shown[0]}\u2013{shown[-1]}]"),
    ],
    ids=["cited", "invented", "none"],
)
def test_llm_summary_entries_keep_cited_refs_within_the_span(
    new_memory: Factory, cite: Callable[[str], str], expected: Callable[[list[int]], str]
) -> None:
    memory = new_memory()
    work(memory, 0, 6)
    llm = _summarizer(cite)
    memory.compact(SummaryCompressor(llm, keep_last_groups=2))
    request = llm.calls[0][-1]["content"]
    shown = [int(s) for s in re.findall(r"^#(\d+) \[", request, re.M)]
    assert shown == sorted(shown) and shown[0] == 1
    assert "references of the items it comes from" in llm.calls[0][0]["content"]
    summary = reopened(memory).summary
    decision = next(e for e, _ in entries_with_refs(summary) if "flaky network" in e)
    assert decision.endswith(expected(shown)), decision
    assert all(refs for _, refs in entries_with_refs(summary)), summary


@settings(deadline=None, max_examples=200)
@given(st.lists(st.tuples(st.integers(1, 500), st.integers(0, 40)), max_size=30))
def test_merged_ranges_are_few_sorted_and_cover_every_seq(spans: list[tuple[int, int]]) -> None:
    ranges = [(a, a + n) for a, n in spans]
    merged = merge_spans(ranges)
    assert len(merged) <= MAX_RANGES
    assert list(merged) == sorted(merged)
    assert all(b + 1 < c for (_, b), (c, _) in itertools.pairwise(merged))
    for a, b in ranges:
        assert any(x <= a and b <= y for x, y in merged)
    assert merge_spans(merged) == merged and merge_spans(reversed(ranges)) == merged


def test_trimming_drops_references_before_any_fact() -> None:
    """Under pressure a fact is worth more than the way back to its items: when the bare facts
    fit only without their references, every fact stays and the references go."""
    from compactkit.budget.tokens import TiktokenCounter
    from compactkit.compressors import SummaryDocument

    counter = TiktokenCounter("o200k_base")
    files = [f"`src/pkg/module_{n}.py` — modified [#{10 * n}\u2013{10 * n + 4}]" for n in range(30)]
    errors = [f"`KeyError: 'field_{n}'` in `src/pkg/module_{n}.py`" for n in range(10)]
    doc = SummaryDocument.of(
        files_modified=files, errors=[f"{e} [#{n}]" for n, e in enumerate(errors, 1)]
    )
    bare = SummaryDocument.of(files_modified=[f.split(" [#")[0] for f in files], errors=errors)
    cap = counter.count_text(bare.render()) + 5
    trimmed = doc.trim_to(cap, counter)
    text = trimmed.render()
    assert counter.count_text(text) <= cap
    for n in range(30):
        assert f"src/pkg/module_{n}.py" in text  # no fact dropped
    assert text.count("[#") < doc.render().count("[#")  # references went instead
