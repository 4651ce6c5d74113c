"""A summary whose commands or decisions parse back merged (a trimmed summary can shorten two
commands to one key, or two decisions to one text) is still remembered: as what parsing its
text returns, the section merged by its own rule, never as written."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _document
from compactkit.compressors.sections import SummaryDocument

TIMES = "\N{MULTIPLICATION SIGN}"
COMMANDS = [
    "`pytest` → exit 1",
    "`pytest` → 0",
    *(f"`pytest` → exit {n}" for n in range(2, 7)),
    f"`pytest` → exit 1 ({TIMES}2)",
    f"`pytest -q` → exit 0 ({TIMES}3) — earlier: exit 1 | exit 2",
    "`ls` → `a b`",
    "`ls`",
    "`cd /testbed && python -m pytest tests/x.py -xvs 2>&1 |…` → exit 1",
    "`cd /testbed && python -m pytest tests/x.py -xvs 2>&1 |…` → exit 0",
    "ran `make`",
]
DECISIONS = ["Use httpx.", "use  HTTPX.", "Keep the CLI.", "keep the cli.", "Drop py3.8"]


def _exactly(doc: SummaryDocument) -> tuple[Any, ...]:
    return (
        list(doc.sections.items()),
        list(doc.extra.items()),
        doc.trimmed,
        list(doc.omitted.items()),
    )


@settings(deadline=None, max_examples=400)
@given(
    commands=st.lists(st.sampled_from(COMMANDS), max_size=6),
    measurements=st.lists(st.sampled_from(COMMANDS), max_size=12),
    decisions=st.lists(st.sampled_from(DECISIONS), max_size=5),
    next_steps=st.lists(st.sampled_from(DECISIONS), max_size=3),
    trimmed=st.integers(0, 2),
)
def test_merged_sections_are_remembered_as_parsed(
    commands: list[str],
    measurements: list[str],
    decisions: list[str],
    next_steps: list[str],
    trimmed: int,
) -> None:
    raw = {
        "goal": ("Port the CLI",),
        "commands": tuple(commands),
        "measurements": tuple(measurements),
        "decisions": tuple(decisions),
        "next_steps": tuple(next_steps),
    }
    doc = SummaryDocument(
        sections={k: v for k, v in raw.items() if v},  # type: ignore[misc]
        trimmed=trimmed,
    )
    read_back = _document.as_parsed(doc)
    assert read_back is not None  # every entry reads back whole: nothing left to parse
    assert _exactly(read_back) == _exactly(SummaryDocument.parse(doc.render()))


@pytest.mark.parametrize(
    "sections",
    [
        {"commands": ("`pytest` → exit 1", "`pytest` → 0")},
        {"decisions": ("Use httpx.", "use  HTTPX.")},
        {"next_steps": ("run it", "Run it")},
    ],
)
def test_a_merged_section_is_remembered_merged(sections: dict[str, tuple[str, ...]]) -> None:
    doc = SummaryDocument(sections=sections)  # type: ignore[arg-type]
    parsed = SummaryDocument.parse(doc.render())
    assert _exactly(parsed) != _exactly(doc)  # the case is what it says
    _document._documents.clear()
    _document.remember(doc, doc.render())
    assert doc.render() in _document._documents
    assert _exactly(_document.parsed(doc.render())) == _exactly(parsed)
