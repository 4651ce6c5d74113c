"""The values a compaction's verbatim tail sets are read without the rest of the digest
(``values_in``), and a value phrase's name is tried only where it can stand (issue 35): both
give exactly what the whole reading gives."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _facts_values as facts_values
from compactkit.compressors._refs import without_provenance
from compactkit.compressors.digest import digest_items
from compactkit.compressors.digest._values import values_in
from compactkit.compressors.sections import SummaryDocument
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

PROPERTY = settings(deadline=None, max_examples=400)

# -- "x should be 5", "the timeout is now 45s", "make pool_size 8" -------------------------------

BE_PARTS = [
    "max_retries should be 6",
    "`pool.size` must be set to 4",
    "Timeout  NEEDS TO be 30s",
    "x needs to be true",
    "a-b has to be 'q'",
    "`retries` will be -1",
    "`` will be 2",
    "the timeout is now 45s",
    "RATE\tIS NOW\n0.5",
    "make pool_size 8",
    "Make the limit_x larger 9",
    "make it `k` 3",
    "remake x_y 2",
    "x.should be 1",
    "ab" * 40 + " should be 1",
    "x." + "n" * 61 + " should be 1",  # the longest name: 61 characters
    "x.`" + "n" * 61 + "` should be 1",
    "x." + "n" * 62 + " is now 2",
    "é_x should be 2",
    "\u017f_x will be 3",
    "will be will be 5",
]
_filler = st.text(st.sampled_from("ab_.-` \n\t0123456789tTnN\"'sw\u00a0é"), max_size=8)


def _spans(matches: list[re.Match[str]]) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
    return [(m.span(), m.groups()) for m in matches]


@PROPERTY
@given(st.lists(st.sampled_from(BE_PARTS) | _filler, max_size=10).map(" ".join))
def test_be_phrases_are_the_patterns(text: str) -> None:
    lowered = text.lower() if text.isascii() else None
    plain = list(facts_values._BE_PHRASE.finditer(text))
    assert _spans(facts_values._be_phrases(text, lowered)) == _spans(plain)


@PROPERTY
@given(st.lists(st.sampled_from(BE_PARTS) | _filler, max_size=10).map("".join))
def test_be_phrases_glued_to_their_neighbours_are_the_patterns(text: str) -> None:
    lowered = text.lower() if text.isascii() else None
    plain = list(facts_values._BE_PHRASE.finditer(text))
    assert _spans(facts_values._be_phrases(text, lowered)) == _spans(plain)


# -- values_in: the tail's values, read alone ----------------------------------------------------

PROSE = [
    "Set `retries` to 5.",
    "change timeout from 10 to 30",
    "MAX_WORKERS = 8",
    "`pool_size: 4`",
    "max_retries should be 6",
    "the timeout is now 45s",
    "make pool_size 8",
    "nothing to see here",
]
ACTIONS = [
    "```bash\ncat > app.toml <<'EOF'\nretries = 7\ntimeout = 9\nEOF\n```",
    "```bash\nsed -i 's/retries = 5/retries = 6/' app.toml\n```",
    "```bash\nls -la\n```",
    "Action: bash\nAction Input: echo 'MAX_WORKERS = 3' > settings.py",
]
OBSERVATIONS = ["<returncode>0</returncode>\n<output>\nok\n</output>", "Observation: done"]


def _call(kind: int, call_id: str) -> FunctionCall:
    args: dict[str, object] = [
        {"command": "cat > config.yaml <<EOF\ntimeout: 30\nEOF"},
        {"path": "app.ini", "content": "retries = 2\nMAX_WORKERS = 4"},
        {"path": "app.toml", "old_str": "retries = 2", "new_str": "retries = 3"},
        {"command": "sed -i 's/timeout: 30/timeout: 40/' config.yaml"},
        {"path": "notes.md", "content": "retries = 1"},
    ][kind]
    name = "bash" if "command" in args else ("edit_file" if "old_str" in args else "write_file")
    return FunctionCall(call_id=call_id, name=name, arguments=json.dumps(args))


@st.composite
def sessions(draw: st.DrawFn) -> list[Item]:
    items: list[Item] = []
    for index in range(draw(st.integers(0, 14))):
        kind = draw(
            st.sampled_from(["user", "assistant", "system", "observation", "call", "blank"])
        )
        if kind == "call":
            items.append(_call(draw(st.integers(0, 4)), f"c{index}"))
            if draw(st.booleans()):  # else its output is not in the span
                items.append(FunctionCallOutput(call_id=f"c{index}", output="retries = 9"))
            continue
        if kind == "observation":
            text = draw(st.sampled_from(OBSERVATIONS))
        elif kind == "blank":
            text = "  "
        else:
            parts = draw(st.lists(st.sampled_from(PROSE + ACTIONS), min_size=1, max_size=3))
            text = "\n".join(parts)
        role = "user" if kind in ("observation", "blank") else kind
        items.append(Message(role=role, content=text))  # type: ignore[arg-type]
    if draw(st.booleans()):  # stored items: references on every entry
        items = [item.model_copy(update={"seq": 10 + n}) for n, item in enumerate(items)]
    return items


KNOWN = SummaryDocument.of(
    values=[
        f"`{name}` = 1 (current)"
        for name in ("retries", "timeout", "MAX_WORKERS", "pool_size", "max_retries")
    ]
)


def _plain_values_in(items: list[Item], known: SummaryDocument) -> SummaryDocument:
    names = {e.split("`")[1] for e in known.entries("values")}
    found = digest_items(items, with_goal=False).entries("values")
    return SummaryDocument.of(values=[e for e in found if e.split("`")[1] in names])


@PROPERTY
@given(sessions(), st.booleans())
def test_values_in_reads_the_values_the_whole_digest_reads(
    items: list[Item], provenance: bool
) -> None:
    if provenance:
        assert values_in(items, KNOWN) == _plain_values_in(items, KNOWN)
    else:
        with without_provenance():
            assert values_in(items, KNOWN) == _plain_values_in(items, KNOWN)


def test_a_tail_that_sets_known_values_supersedes_them() -> None:
    items: list[Item] = [
        Message(role="assistant", content="Set `retries` to 5.\n" + ACTIONS[0]),
        Message(role="user", content=OBSERVATIONS[0]),
        _call(2, "c1"),
        FunctionCallOutput(call_id="c1", output="ok"),
    ]
    found = values_in(items, KNOWN).entries("values")
    assert found == (
        "`retries` = 5 (superseded)",  # the prose, then the heredoc its action writes
        "`retries` = 7 (superseded)",
        "`timeout` = 9 (current)",
        "`retries` = 2 (superseded)",  # the edit call's old text, then its new one
        "`retries` = 3 (current)",
    )
    assert found == _plain_values_in(items, KNOWN).entries("values")
    assert values_in(items, SummaryDocument()).is_empty


@PROPERTY
@given(st.lists(st.sampled_from(PROSE + BE_PARTS) | _filler, max_size=6).map(" ".join))
def test_remembered_prose_values_are_read_anew_each_time_the_same(text: str) -> None:
    from compactkit.compressors.digest import _values

    plain = []
    for name, new, old in facts_values.values_in_prose(text):
        if old is not None:
            plain.append(f"`{name}` = {_values._value(old)} (superseded)")
        plain.append(f"`{name}` = {_values._value(new)} (current)")
    assert _values.prose_values(text) == plain
    first = _values.prose_values(text)
    first.append("changed by a caller")
    assert _values.prose_values(text) == plain  # a caller's list is its own
