"""A summary renders with one ``join`` over its sections' entries and the separators between
them (``sections.bullet_pieces``): the text is the one the plain per-entry rendering writes,
for any entries (line breaks inside them, carriage returns, text that looks like bullets or
headings)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.compressors import SummaryDocument
from compactkit.compressors.sections import bullet_pieces

PROPERTY = settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])

_pieces = st.sampled_from(["\n", "\n  ", "\r", "\r\n", "- ", "## x", "`a`", "é", " ", "…", "\x00"])
_entry = st.lists(_pieces | st.text(max_size=8), min_size=1, max_size=6).map("".join)


def plain_bullets(entries: list[str]) -> str:
    """The bullets as ``render`` wrote them before: one Python step per entry."""
    return "\n".join("- " + entry.replace("\n", "\n  ") for entry in entries)


def plain_render(doc: SummaryDocument) -> str:
    lines = doc.head_lines()
    for heading, entries in doc.blocks():
        lines += ["", f"## {heading}"]
        lines += ["- " + entry.replace("\n", "\n  ") for entry in entries]
    return "\n".join(lines) + "\n"


@PROPERTY
@given(st.lists(_entry, min_size=1, max_size=12))
def test_bullets_are_the_plain_bullets(entries: list[str]) -> None:
    assert "".join(bullet_pieces(entries)) == "\n" + plain_bullets(entries)
    assert "".join(bullet_pieces(tuple(entries))) == "\n" + plain_bullets(entries)


@PROPERTY
@given(
    st.dictionaries(
        st.sampled_from(["goal", "constraints", "files_read", "commands", "errors", "state"]),
        st.lists(_entry, min_size=1, max_size=8).map(tuple),
    ),
    st.dictionaries(st.sampled_from(["Notes", "Plan"]), st.lists(_entry, max_size=4).map(tuple)),
)
def test_a_rendered_summary_is_the_plain_rendering(
    sections: dict[str, tuple[str, ...]], extra: dict[str, tuple[str, ...]]
) -> None:
    doc = SummaryDocument(sections=sections, extra=extra)  # type: ignore[arg-type]
    assert doc.render() == plain_render(doc)


def test_one_line_and_many_line_sections() -> None:
    doc = SummaryDocument(
        sections={"files_read": ("`a.py`", "`b.py`"), "state": ("line one\nline two", "x")}
    )
    text = doc.render()
    assert "## Files read\n- `a.py`\n- `b.py`\n" in text
    assert "- line one\n  line two\n- x\n" in text
    assert text == plain_render(doc)
