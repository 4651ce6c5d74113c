"""The digest remembers the summary it rendered, parsed, for the next compaction to read back
(``compactkit.compressors._document``). What it remembers is exactly what parsing the text
returns — the same entries in the same order, the same notes — or nothing: a summary whose
text could parse back differently is parsed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget import TiktokenCounter
from compactkit.compressors import _document
from compactkit.compressors.digest import DigestCompressor
from compactkit.compressors.sections import (
    QUOTED_NOTE,
    REFS_NOTE,
    SECTIONS,
    SummaryDocument,
)
from compactkit.items import FunctionCall, FunctionCallOutput, Message
from compactkit.items.snapshot import MemorySnapshot

PROPERTY = settings(deadline=None, max_examples=600)
COUNTER = TiktokenCounter("o200k_base")

# Entry text that parsing treats specially: line breaks of every kind, indentation, bullets,
# headings, the notes compactkit writes, code spans, references, case and spacing.
_PIECES = [
    "ab",
    " ",
    "\n",
    "\n  ",
    "\r",
    "\u2028",
    "\t",
    "- ",
    "# ",
    "`src/a.py`",
    " — ",
    " [#3-5]",
    "_Note: 2 older entries were trimmed to keep this summary within its token cap._",
    "AB",
]
# Whole lines as the merge rules read them: keyed facts, values, commands and their run counts,
# references, later requests; and lines parsing reads as something else (notes, bullets,
# headings), or that cleaning changes (trailing spaces).
_LINES = [
    "ab",
    "AB",
    "ab [#3-5]",
    "`src/a.py` — read",
    "`src/a.py` — edited x2",
    "`src/b.py`",
    "`x` = 5 (current)",
    "`x` = 3 (superseded)",
    "`x` = 5",
    "`pytest -q` → exit 1",
    "`pytest -q` → exit 0 (\N{MULTIPLICATION SIGN}2)",
    "`pytest -q` → exit 1 (\N{MULTIPLICATION SIGN}1)",
    "Later: ship it",
    QUOTED_NOTE,
    REFS_NOTE,
    "_Note: 2 older entries were trimmed to keep this summary within its token cap._",
    "Note: 3 older entries were trimmed",
    "- dash",
    "# hash",
    "## Goal",
    "  indented",
    "ab  ",
]
entries = st.one_of(
    st.lists(st.sampled_from(_LINES), min_size=1, max_size=3).map("\n".join),
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6).map("".join),
)
KEYS = [spec.key for spec in SECTIONS]
sections = st.dictionaries(st.sampled_from(KEYS), st.lists(entries, max_size=4), max_size=5)
headings = st.sampled_from(["Notes", "Open questions", "Goals", " Padded", "#Hash", "A\nB"])
omitted = st.dictionaries(
    st.sampled_from(["files_read", "commands", "Open questions", "A\nB", "x, y", "Goals"]),
    st.integers(0, 3),
    max_size=3,
)


def _exactly(doc: SummaryDocument) -> tuple[Any, ...]:
    """A document with the order of everything in it (equality ignores dict order)."""
    return (
        list(doc.sections.items()),
        list(doc.extra.items()),
        doc.trimmed,
        list(doc.omitted.items()),
    )


def _documents() -> st.SearchStrategy[SummaryDocument]:
    def build(
        first: dict[str, list[str]],
        second: dict[str, list[str]],
        extra: dict[str, list[str]],
        notes: tuple[int, dict[str, int]],
        raw: bool,
        cap: int | None,
    ) -> SummaryDocument:
        if raw:  # as someone may build one: nothing merged, cleaned or checked
            doc = SummaryDocument(
                sections={k: tuple(v) for k, v in first.items() if v},  # type: ignore[misc]
                extra={k: tuple(v) for k, v in extra.items() if v},
                trimmed=notes[0],
                omitted=notes[1],
            )
        else:
            doc = SummaryDocument.of(**first).merge(SummaryDocument.of(**second))
            doc = doc.merge(SummaryDocument(extra={k: tuple(v) for k, v in extra.items()}))
        return doc.trim_to(cap, COUNTER) if cap is not None else doc

    return st.builds(
        build,
        sections,
        sections,
        st.dictionaries(headings, st.lists(entries, max_size=3), max_size=2),
        st.tuples(st.integers(0, 3), omitted),
        st.booleans(),
        st.one_of(st.none(), st.integers(20, 400)),
    )


@PROPERTY
@given(_documents())
def test_what_is_remembered_is_what_parsing_the_text_returns(doc: SummaryDocument) -> None:
    read_back = _document.as_parsed(doc)
    if read_back is not None:
        assert _exactly(read_back) == _exactly(SummaryDocument.parse(doc.render()))


TIMES = "\N{MULTIPLICATION SIGN}"
READ_BACK_OTHERWISE = {
    "one entry per file": {"sections": {"files_modified": ("`a.py` — edited", "`a.py` — read")}},
    "a file read and modified": {
        "sections": {"files_read": ("`a.py` — read",), "files_modified": ("`a.py` — edited",)}
    },
    "one entry per command": {"sections": {"commands": ("`pytest` → exit 1", "`pytest` → 0")}},
    "a run count of one": {"sections": {"commands": (f"`pytest` → exit 1 ({TIMES}1)",)}},
    "a value without its status": {"sections": {"values": ("`x` = 5",)}},
    "a repeated decision": {"sections": {"decisions": ("Use httpx.", "use  HTTPX.")}},
    "notes after another heading": {"extra": {"Open questions": ("ab",), "Notes": ("cd",)}},
    "omitted entries without a trimming note": {"omitted": {"files_read": 2}},
    "an unknown heading that names a section": {"extra": {"Goals": ("ab",)}},
    "a line break in a heading the trimming note names": {
        "sections": {"goal": ("ab",)},
        "trimmed": 1,
        "omitted": {"A\nB": 1},
    },
}


@pytest.mark.parametrize("fields", READ_BACK_OTHERWISE.values(), ids=list(READ_BACK_OTHERWISE))
def test_a_summary_that_parses_back_otherwise_is_not_remembered(fields: dict[str, Any]) -> None:
    doc = SummaryDocument(**fields)
    parsed = SummaryDocument.parse(doc.render())
    assert _exactly(parsed) != _exactly(doc)  # the case is what it says
    read_back = _document.as_parsed(doc)
    assert read_back is None or _exactly(read_back) == _exactly(parsed)
    _document._documents.clear()
    _document.remember(doc, doc.render())
    assert _exactly(_document.parsed(doc.render())) == _exactly(parsed)


def test_a_summary_the_digest_writes_is_remembered() -> None:
    doc = SummaryDocument.of(
        goal=["Port the CLI to click"],
        constraints=["Don't change the public API."],
        files_modified=["`src/cli.py` — edited x3 [#4-9]"],
        commands=["`pytest -q` → exit 1 (\N{MULTIPLICATION SIGN}2)"],
        values=["`max_retries` = 5 (current)", "`max_retries` = 3 (superseded)"],
    )
    read_back = _document.as_parsed(doc)
    assert read_back is not None
    assert _exactly(read_back) == _exactly(SummaryDocument.parse(doc.render()))


def _session(turns: int) -> MemorySnapshot:
    items: list[Any] = [Message(role="user", content="Fix the flaky test; never skip tests.")]
    for n in range(turns):
        call = f"c{n}"
        command = f"pytest tests/test_{n % 7}.py -q"
        items += [
            FunctionCall(call_id=call, name="bash", arguments=f'{{"command": "{command}"}}'),
            FunctionCallOutput(call_id=call, output=f"{n} passed, 1 failed\n" + "x = 1\n" * 40),
            Message(role="assistant", content=f"Decided to retry test {n} because it flaked."),
        ]
    return MemorySnapshot.from_items(items)


def test_compactions_read_the_same_summary_whether_remembered_or_parsed() -> None:
    # Two compactions in a row, the second reading the summary the first wrote back: with the
    # remembered document and with the text parsed, the results are the same.
    digest = DigestCompressor(keep_last_groups=2)
    results = []
    for remembered in (True, False):
        _document._documents.clear()
        first = digest.compress(_session(30))
        assert first.snapshot.summary
        if not remembered:
            _document._documents.clear()
        else:
            assert first.snapshot.summary in _document._documents
        grown = _session(60).items[len(_session(30).items) - 6 :]
        second = digest.compress(
            first.snapshot.model_copy(update={"items": (*first.snapshot.items, *grown)})
        )
        results.append((second.snapshot.summary, second.stats.details))
    assert results[0] == results[1]
