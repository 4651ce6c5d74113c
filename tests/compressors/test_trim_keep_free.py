"""A trim that keeps the user's goal and rules says whether keeping them changed anything
(``SummaryDocument.trim_keeping``): when it says not, trimming without keeping them gives the
same summary, so the digest, which trims again without them when the summary kept with them is
over its own ceiling, does not trim twice."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors import DigestCompressor
from compactkit.compressors._trim import forget_rewritten
from compactkit.compressors.digest.compressor import USER_WORDS
from compactkit.compressors.sections import SummaryDocument
from compactkit.items import FunctionCall, FunctionCallOutput, Message
from compactkit.items.snapshot import MemorySnapshot

COUNTER = TiktokenCounter("o200k_base")


def _doc(
    rules: int, files: int, errors: int, commands: int, decisions: int, width: int
) -> SummaryDocument:
    pad = " and keep the public API stable" * width
    sections = {
        "goal": (f"Port the scheduler to the new queue{pad}.",),
        "constraints": tuple(
            f"Always run the tests of module {i} before committing{pad}." for i in range(rules)
        ),
        "files_read": tuple(f"`src/pkg/mod_{i}.py` — read (cat); read (sed)" for i in range(files)),
        "errors": tuple(
            f"`ValueError: bad queue size {i}` — from pytest tests/test_{i}.py"
            for i in range(errors)
        ),
        "commands": tuple(
            f"`pytest tests/test_{i}.py -q` → exit 1, {i} failed" for i in range(commands)
        ),
        "decisions": tuple(
            f"Use a heap for queue {i} instead of a list because it is faster{pad}"
            for i in range(decisions)
        ),
    }
    return SummaryDocument(sections={k: v for k, v in sections.items() if v})  # type: ignore[arg-type]


def _trims(
    doc: SummaryDocument, cap: int
) -> tuple[SummaryDocument, bool, SummaryDocument, SummaryDocument]:
    forget_rewritten()
    kept, alike = doc.trim_keeping(cap, COUNTER, keep=USER_WORDS)
    forget_rewritten()
    again = doc.trim_to(cap, COUNTER, keep=USER_WORDS)
    forget_rewritten()
    without = doc.trim_to(cap, COUNTER)
    return kept, alike, again, without


@settings(deadline=None, max_examples=150)
@given(
    rules=st.integers(0, 12),
    files=st.integers(0, 30),
    errors=st.integers(0, 10),
    commands=st.integers(0, 20),
    decisions=st.integers(0, 10),
    width=st.integers(0, 4),
    share=st.floats(0.02, 1.0),
)
# the rules take most of the room: the quotas differ with and without them kept
@example(rules=12, files=30, errors=10, commands=20, decisions=10, width=4, share=0.3)
# so little room that everything but the rules goes: then the rules would go too
@example(rules=12, files=5, errors=2, commands=3, decisions=2, width=4, share=0.05)
# a light trim: a few files read dropped, the rules never in question
@example(rules=3, files=30, errors=5, commands=10, decisions=5, width=0, share=0.9)
def test_a_trim_said_alike_is_the_trim_without_keeping(
    rules: int, files: int, errors: int, commands: int, decisions: int, width: int, share: float
) -> None:
    doc = _doc(rules, files, errors, commands, decisions, width)
    cap = max(1, int(COUNTER.count_text(doc.render()) * share))
    kept, alike, again, without = _trims(doc, cap)
    assert kept == again  # the document is trim_to's
    if alike:
        assert kept == without


def test_a_light_trim_is_said_alike_and_a_trim_dropping_the_rules_is_not() -> None:
    doc = _doc(rules=3, files=30, errors=5, commands=10, decisions=5, width=0)
    tokens = COUNTER.count_text(doc.render())
    light = _trims(doc, int(tokens * 0.9))
    assert light[1] and light[0] != doc
    heavy = _trims(doc, int(tokens * 0.05))
    assert not heavy[1] and heavy[0] != heavy[3]


def test_steps_run_out_with_the_rules_kept_are_not_alike() -> None:
    """Every entry but the rules dropped and the text then fits (by a measure that finds any
    trimmed text fitting): without the rules kept the trim goes on to drop them."""
    doc = _doc(rules=6, files=4, errors=1, commands=2, decisions=1, width=2)
    tokens = COUNTER.count_text(doc.render())

    def measure(d: SummaryDocument) -> int:
        return tokens if d is doc else 1

    cap = tokens // 20  # below the rules alone
    forget_rewritten()
    kept, alike = doc.trim_keeping(cap, COUNTER, keep=USER_WORDS, measure=measure)
    forget_rewritten()
    without = doc.trim_to(cap, COUNTER, measure=measure)
    assert kept.entries("constraints") and kept != without
    assert not alike


def test_the_digest_over_its_ceiling_with_the_rules_kept_trims_once() -> None:
    """A digest whose summary, trimmed with the user's rules kept, is over its own ceiling
    (masking freed room past it): when keeping them changed nothing, it trims once."""
    items: list[object] = [
        Message(role="user", content="Port the scheduler to the new queue. Always run the tests.")
    ]
    for i in range(120):
        items += [
            FunctionCall(
                call_id=f"c{i}", name="bash", arguments=f'{{"command": "cat src/pkg/mod_{i}.py"}}'
            ),
            FunctionCallOutput(call_id=f"c{i}", output=f"def f_{i}():\n    return {i}\n" * 40),
            Message(
                role="assistant",
                content=f"Use a heap for queue {i} instead of a list because it is faster.",
            ),
        ]
    snapshot = MemorySnapshot.of(items)  # type: ignore[arg-type]
    calls: list[frozenset[str]] = []
    trim_keeping = SummaryDocument.trim_keeping

    def counted(
        self: SummaryDocument, *args: object, **kwargs: object
    ) -> tuple[SummaryDocument, bool]:
        calls.append(kwargs.get("keep", frozenset()))  # type: ignore[arg-type]
        return trim_keeping(self, *args, **kwargs)  # type: ignore[arg-type]

    SummaryDocument.trim_keeping = counted  # type: ignore[method-assign]
    try:
        result = DigestCompressor(target_tokens=3_000, summary_cap_tokens=None).compress(snapshot)
    finally:
        SummaryDocument.trim_keeping = trim_keeping  # type: ignore[method-assign]
    assert result.changed
    assert calls == [USER_WORDS]
