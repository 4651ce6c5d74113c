"""Trimming's fast paths return what the plain algorithm returns (``trim_oracle``: the trim as
it was before them, every cost and form computed anew, every change a step of its own): the
three rewriting passes found by one remembered look-up per entry and applied without a pause
until the text fits, pool sizes kept as they change, ranks remembered per entry, kept sections
copied whole; for arbitrary documents, caps, kept pools and counters, cold and warm."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trim_oracle import fit as plain_fit

from compactkit.budget import TiktokenCounter
from compactkit.budget.tokens import EstimateCounter
from compactkit.compressors import SummaryDocument
from compactkit.compressors._forms import EXTRA, LATER, SUPERSEDED
from compactkit.compressors._summary_format import HEADINGS, QUOTED_NOTE, QUOTING
from compactkit.compressors._trim_costs import FORMS, form_changes
from compactkit.compressors.digest._sizer import SummarySizer

COUNTER = TiktokenCounter("o200k_base")
PROPERTY = settings(deadline=None, max_examples=80, suppress_health_check=[HealthCheck.too_slow])
LABEL = (QUOTED_NOTE, QUOTING)
KEYS = [
    "goal",
    "constraints",
    "decisions",
    "files_read",
    "files_modified",
    "commands",
    "measurements",
    "errors",
    "identifiers",
    "values",
    "state",
    "next_steps",
]

_words = st.sampled_from(
    [
        *("edited", "read", "created", "deleted", "resolved", "because", "instead", "the", "é"),
        *("→", "`x`", "3 passed", "1 failed", "12 ms", "(x2)", "Later:", "(superseded)"),
    ]
)
_text = st.lists(_words | st.text(min_size=1, max_size=10), min_size=1, max_size=30).map(" ".join)
_refs = st.sampled_from(["", " [#3]", " [#12\u201315]", " [#2, #9\u201311]"])
_details = st.lists(_text, max_size=8).map(lambda d: " — " + "; ".join(d) if d else "")
_entry = st.one_of(
    st.tuples(st.sampled_from(["`src/a.py`", "`b.txt`", "`ValueError: x`"]), _details, _refs).map(
        "".join
    ),
    st.tuples(_text, st.sampled_from(["", " → exit 1", " → output: `ok`"]), _refs).map(
        lambda t: f"`{t[0]}`{t[1]} (\N{MULTIPLICATION SIGN}3){t[2]}"
    ),
    st.tuples(_text, st.integers(1, 9), _refs).map(
        lambda t: f"`bench` → `{t[0]}` (\N{MULTIPLICATION SIGN}{t[1]}) — earlier: `1 ms`{t[2]}"
    ),
    st.tuples(st.sampled_from(["`a`", "`b_c`"]), st.integers(0, 9), _refs).map(
        lambda t: f"{t[0]} = {t[1]} (superseded){t[2]}"
    ),
    st.tuples(_text, _refs).map(lambda t: f"Later: {t[0]}{t[1]}"),
    st.tuples(_text, _refs).map("".join),
    st.tuples(_text, _text).map(lambda t: f"{t[0]}\n{t[1]}"),  # a continuation line
    st.just(""),
)


@st.composite
def documents(draw: st.DrawFn) -> SummaryDocument:
    """Any document: entries of every shape in any section, repeated or not, unknown sections,
    earlier trims."""
    pool = draw(st.lists(_entry, min_size=1, max_size=12))  # shared: the same entry twice
    entries = st.lists(st.sampled_from(pool) | _entry, max_size=20)
    sections = draw(st.fixed_dictionaries({}, optional=dict.fromkeys(KEYS, entries)))
    extra = draw(st.dictionaries(st.sampled_from(["Notes", "Plan"]), entries, max_size=2))
    omitted = draw(st.dictionaries(st.sampled_from(["files_read", "Plan"]), st.integers(0, 3)))
    return SummaryDocument(
        sections={k: tuple(v) for k, v in sections.items()},
        extra={k: tuple(v) for k, v in extra.items()},
        trimmed=draw(st.integers(0, 3)),
        omitted=omitted,
    )


@PROPERTY
@given(documents(), st.floats(0.02, 1.1), st.booleans(), st.booleans())
def test_a_trim_returns_what_the_plain_trim_returns(
    doc: SummaryDocument, share: float, keep_user_words: bool, sized: bool
) -> None:
    keep = frozenset({"goal", "constraints"}) if keep_user_words else frozenset()
    for counter in (COUNTER, EstimateCounter()):
        cap = max(1, int(counter.count_text(doc.render()) * share))
        measure = SummarySizer(counter) if sized else None
        plain = plain_fit(doc, cap, counter, HEADINGS, LABEL, keep=keep)
        assert doc.trim_to(cap, counter, keep=keep, measure=measure) == plain
        assert doc.trim_to(cap, counter, keep=keep, measure=measure) == plain  # warm
        # the same document and cap again, with the other pools kept (as DigestCompressor._fit
        # trims twice): from where the passes of the trim before ended
        other = frozenset({"goal", "constraints"}) - keep
        plain = plain_fit(doc, cap, counter, HEADINGS, LABEL, keep=other)
        assert doc.trim_to(cap, counter, keep=other, measure=measure) == plain
        assert doc.trim_to(cap + 1, counter, keep=other, measure=measure) == plain_fit(
            doc, cap + 1, counter, HEADINGS, LABEL, keep=other
        )


_TIED = ["files_read", "commands", "measurements", "decisions", "identifiers", "errors"]


@PROPERTY
@given(
    st.lists(st.integers(0, 9), min_size=len(_TIED), max_size=len(_TIED)),
    st.floats(0.02, 1.0),
    st.booleans(),
)
def test_pools_tied_for_the_most_tokens_give_in_the_plain_order(
    counts: list[int], share: float, extra: bool
) -> None:
    """Pools holding the same entries (the same tokens, no form shortens them) tie for the
    most tokens for their weight again and again as they give: the first in order gives."""
    same = [f"`x{i}`" for i in range(9)]
    doc = SummaryDocument(
        sections={k: tuple(same[:n]) for k, n in zip(_TIED, counts, strict=True) if n},
        extra={"Plan": tuple(same[: counts[0]])} if extra and counts[0] else {},
    )
    for counter in (COUNTER, EstimateCounter()):
        cap = max(1, int(counter.count_text(doc.render()) * share))
        assert doc.trim_to(cap, counter) == plain_fit(doc, cap, counter, HEADINGS, LABEL)


@PROPERTY
@given(st.sampled_from([*KEYS, EXTRA, LATER, SUPERSEDED]), _entry)
def test_form_changes_are_the_passes_one_after_another(pool: str, entry: str) -> None:
    changes, current = [], entry
    for step, form in enumerate(FORMS):
        if (rewritten := form(pool, current)) != current:
            changes.append((step, rewritten))
            current = rewritten
    assert form_changes(pool, entry) == tuple(changes)


def test_a_long_summary_trims_as_the_plain_trim_does() -> None:
    """A summary of hundreds of entries, under light and heavy pressure (the barer pass, the
    floors), with its user words kept or not."""
    doc = SummaryDocument(
        sections={
            "goal": ("Fix the retry loop.", "Later: also log it [#4]"),
            "constraints": ("Don't change the API.",),
            "decisions": tuple(f"Use plan {i} because {i} is faster [#{i}]" for i in range(60)),
            "files_read": tuple(
                f"`src/m{i}.py` — read (cat); read (grep) [#{i}]" for i in range(300)
            ),
            "files_modified": tuple(f"`src/e{i}.py` — edited (sed -i) x{i}" for i in range(80)),
            "commands": tuple(
                f"`pytest tests/t{i}.py -x` → exit 1; `{i} failed, 3 passed` (\N{MULTIPLICATION SIGN}{i})"
                for i in range(200)
            ),
            "measurements": tuple(
                f"`bench {i}` → `{i} ms` (\N{MULTIPLICATION SIGN}{i % 5 + 1}) — earlier: `1 ms` | `2 ms`"
                for i in range(40)
            ),
            "errors": tuple(
                f"`E{i}: bad value` — resolved" * (i % 2) or f"`E{i}`" for i in range(90)
            ),
            "values": ("`a` = 1 (superseded)", "`a` = 2 (current)", "`b` = 3 (current)"),
            "state": ("As of the last folded turn, the assistant said: running the tests.",),
            "next_steps": ("Run the tests again.",),
        },
        extra={"Plan": tuple(f"step {i}" for i in range(20))},
    )
    full = COUNTER.count_text(doc.render())
    for share in (0.95, 0.6, 0.3, 0.1, 0.01):
        for keep in (frozenset(), frozenset({"goal", "constraints"})):
            cap = int(full * share)
            plain = plain_fit(doc, cap, COUNTER, HEADINGS, LABEL, keep=keep)
            assert doc.trim_to(cap, COUNTER, keep=keep, measure=SummarySizer(COUNTER)) == plain
            assert doc.trim_to(cap, COUNTER, keep=keep) == plain  # from where the passes ended
