"""The digest's shortcuts give what the plain paths give: a call's arguments scanned directly
are what ``parsed_arguments`` returns; a layout split (and its folded groups read) by slices
holds the items a walk over its groups finds; a summary renders to the same text; a phrase is
found in the lowered text where ignoring case finds it."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _facts_prose as facts_prose
from compactkit.compressors._plan import Layout
from compactkit.compressors.digest._call_arguments import arguments_of
from compactkit.compressors.sections import SECTIONS, SummaryDocument
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

PROPERTY = settings(deadline=None, max_examples=400)

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@PROPERTY
@given(
    st.one_of(
        st.dictionaries(st.text(max_size=6), _JSON, max_size=4).map(json.dumps),
        _JSON.map(json.dumps),
        st.text(st.sampled_from('{}[]":,1 a\\\n'), max_size=14),
    ),
    st.sampled_from(["", " ", "\n", "\ufeff", "x"]),
    st.sampled_from(["", " ", "\n\t", "x", "}", ",1", "{}"]),
    st.integers(0, 40),
)
def test_arguments_scanned_directly_are_the_parsed_arguments(
    body: str, before: str, after: str, cut: int
) -> None:
    for text in (before + body + after, body[: len(body) - cut] if cut < len(body) else body):
        call = FunctionCall(call_id="c", name="t", arguments=text)
        assert arguments_of(call) == call.parsed_arguments()


def test_arguments_nested_too_deeply_to_read_are_no_arguments() -> None:
    call = FunctionCall(call_id="c", name="t", arguments='{"a":' * 100_000)
    assert arguments_of(call) == call.parsed_arguments() == {}


def _split_reference(layout: Layout, first_kept: int) -> tuple[list[Item], list[Item]]:
    """``Layout.split`` (nothing replaced) as first written: group by group."""
    kept = list(layout.items[: layout.lead])
    folded: list[Item] = []
    for index, group in enumerate(layout.groups):
        if index < first_kept and layout.protected[index] is None:
            folded.extend(group.slice(layout.items))
        else:
            kept.extend(group.slice(layout.items))
    return kept, folded


def _history(specs: list[tuple[int, bool]]) -> list[Item]:
    """Instructions, then messages and call/output pairs (some pinned, the last call maybe
    pending) from ``specs``."""
    items: list[Item] = [Message(role="system", content="rules")]
    for n, (kind, pinned) in enumerate(specs):
        if kind == 0:
            items.append(Message(role="user", content=f"u{n}", pinned=pinned))
        elif kind == 1:
            items.append(Message(role="assistant", content=f"a{n}", pinned=pinned))
        else:
            items.append(FunctionCall(call_id=f"c{n}", name="read", arguments="{}"))
            if kind == 2 or n < len(specs) - 1:  # only the newest call may stay pending
                items.append(FunctionCallOutput(call_id=f"c{n}", output="x", pinned=pinned))
    return items


@PROPERTY
@given(
    st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=14),
    st.integers(-1, 16),
    st.integers(-1, 16),
)
def test_a_layout_split_by_slices_is_the_split_group_by_group(
    specs: list[tuple[int, bool]], first_kept: int, start: int
) -> None:
    layout = Layout.of(_history(specs))
    kept, folded = layout.split(first_kept)
    ref_kept, ref_folded = _split_reference(layout, first_kept)
    assert kept == ref_kept and folded == ref_folded
    assert all(a is b for a, b in zip(kept + folded, ref_kept + ref_folded, strict=True))
    between = [
        item
        for index in range(start, first_kept)
        if 0 <= index < len(layout.groups) and layout.protected[index] is None
        for item in layout.groups[index].slice(layout.items)
    ]
    assert layout.unprotected_items(start, first_kept) == between


def _render_reference(doc: SummaryDocument) -> str:
    """``SummaryDocument.render`` as first written: each entry split into its lines."""
    lines = doc.head_lines()
    for heading, entries in doc.blocks():
        lines += ["", f"## {heading}"]
        for entry in entries:
            first, *rest = entry.split("\n")
            lines.append(f"- {first}")
            lines.extend(f"  {line}" for line in rest)
    return "\n".join(lines) + "\n"


_ENTRY = st.lists(st.sampled_from(["a", "`x.py` — read", "\n", "\r\n", " ", "- b", "## c"]))


@PROPERTY
@given(
    st.dictionaries(
        st.sampled_from([spec.key for spec in SECTIONS]),
        st.lists(_ENTRY.map("".join), max_size=4).map(tuple),
    ),
    st.dictionaries(st.sampled_from(["Notes", "Other"]), st.lists(_ENTRY.map("".join)).map(tuple)),
    st.integers(0, 3),
)
def test_a_summary_rendered_entry_by_entry_is_the_one_rendered_line_by_line(
    sections: dict[Any, tuple[str, ...]], extra: dict[str, tuple[str, ...]], trimmed: int
) -> None:
    doc = SummaryDocument(sections=sections, extra=extra, trimmed=trimmed)
    assert doc.render() == _render_reference(doc)


PHRASE_PARTS = [
    "must",
    "MUST",
    "Don't",
    "don\u2019t",
    "Use",
    "no",
    "not",
    "Instead of",
    "because",
    "I'll use",
    "I'LL USE",
    "Switching to",
    "root cause",
    "next step",
    "Then I'll",
    "TODO",
    "Still need",
    "\u017f",  # long s: ignoring case, it is an "s"
    "u\u017fe",
    "\u212a",  # Kelvin sign: a "k"
    "\u212aeep",
    "\u0130",
    "\u0131",
    "turn 12: read the next modules",
    "done 10",
]


@PROPERTY
@given(
    st.lists(
        st.one_of(st.sampled_from(PHRASE_PARTS), st.text(st.sampled_from("usentoi'_ .9"))),
        max_size=5,
    ).map(" ".join),
    st.sampled_from([facts_prose.CONSTRAINT, facts_prose.DECISION, facts_prose.NEXT_STEP]),
)
def test_phrases_found_in_the_lowered_text_are_found_ignoring_case(
    text: str, pattern: re.Pattern[str]
) -> None:
    assert facts_prose.says(pattern, text) == (pattern.search(text) is not None)
