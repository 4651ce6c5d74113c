"""Trimming remembers each entry's cost and rewritten forms across trims (``_trim_costs``): the
remembered values are the plain ones, and a trim with them returns what a trim computing
everything anew returns, the first time and every time after."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.budget import TiktokenCounter
from compactkit.budget.tokens import EstimateCounter, TokenCounter
from compactkit.compressors import SummaryDocument, _trim, _trim_costs, _trim_state
from compactkit.compressors._forms import EXTRA, LATER, SUPERSEDED, bare, shorten
from compactkit.compressors._refs import strip_refs
from compactkit.compressors._trim_costs import EntryCosts, entry_cost, remembered

COUNTER = TiktokenCounter("o200k_base")
PROPERTY = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
POOLS = [
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
    EXTRA,
    LATER,
    SUPERSEDED,
]

_words = st.sampled_from(
    ["edited", "read", "created", "deleted", "resolved", "fix", "the", "retry", "é", "`x`", "→"]
)
_text = st.lists(_words | st.text(min_size=1, max_size=12), min_size=1, max_size=40).map(" ".join)
_refs = st.sampled_from(["", " [#3]", " [#12\u201315]", " [#2, #9\u201311]"])
_details = st.lists(_text, min_size=0, max_size=8).map(lambda d: " — " + "; ".join(d) if d else "")
_entry = st.one_of(
    st.tuples(st.sampled_from(["`src/a.py`", "`b.txt`", "`ValueError: x`"]), _details, _refs).map(
        "".join
    ),
    st.tuples(_text, st.sampled_from(["", " → exit 1", " → output: `ok`"]), _refs).map(
        lambda t: f"`{t[0]}`{t[1]} (\N{MULTIPLICATION SIGN}3){t[2]}"
    ),
    st.tuples(_text, _refs).map(lambda t: f"`bench` → `{t[0]}` — earlier: `1 ms` | `2 ms`{t[1]}"),
    st.tuples(_text, _refs).map("".join),
    st.tuples(_text, _text).map(lambda t: f"{t[0]}\n{t[1]}"),  # a continuation line
)


@contextmanager
def _plain() -> Iterator[None]:
    """Trimming as it was before: every cost counted and every form computed anew."""

    class Plain:
        def __init__(self, counter: TokenCounter) -> None:
            self.counter = counter

        def __call__(self, entry: str) -> int:
            return entry_cost(self.counter, entry)

        def many(self, entries: list[str]) -> list[int]:
            return [self(e) for e in entries]

        def cut(self, form: str, entry: str, cost: int) -> int:  # (the form encoded)
            return self(form)

    with (
        mock.patch.object(_trim_state, "EntryCosts", Plain),  # (where the state costs entries)
        mock.patch.object(_trim, "remembered", lambda form: form),
        mock.patch.object(_trim, "form_chains", dict),  # every entry's forms computed anew
    ):
        yield


@PROPERTY
@given(st.lists(_entry, max_size=30))
def test_remembered_costs_are_the_plain_costs(entries: list[str]) -> None:
    for counter in (COUNTER, EstimateCounter()):
        costs = EntryCosts(counter)
        assert costs.many(entries) == [entry_cost(counter, e) for e in entries]
        assert [costs(e) for e in entries] == [entry_cost(counter, e) for e in entries]
        assert EntryCosts(counter).many(entries) == costs.many(entries)  # read back


@PROPERTY
@given(st.sampled_from(POOLS), _entry)
def test_remembered_forms_are_the_plain_forms(pool: str, entry: str) -> None:
    for form in (shorten, bare, _trim_costs.no_refs):
        rewrite = remembered(form)
        assert rewrite(pool, entry) == form(pool, entry)
        assert remembered(form)(pool, entry) == form(pool, entry)  # read back
    assert remembered(_trim_costs.no_refs)(pool, entry) == strip_refs(entry)


_sections = st.fixed_dictionaries(
    {},
    optional={
        key: st.lists(_entry, min_size=1, max_size=25)
        for key in (
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
        )
    },
)


@PROPERTY
@given(_sections, st.floats(0.05, 1.1), st.booleans())
def test_a_trim_with_remembered_costs_returns_what_a_plain_trim_returns(
    sections: dict[str, list[str]], share: float, keep_user_words: bool
) -> None:
    doc = SummaryDocument.of(**sections)
    cap = max(1, int(COUNTER.count_text(doc.render()) * share))
    keep = frozenset({"goal", "constraints"}) if keep_user_words else frozenset()
    with _plain():
        plain = doc.trim_to(cap, COUNTER, keep=keep)
    assert doc.trim_to(cap, COUNTER, keep=keep) == plain  # remembered as it goes
    assert doc.trim_to(cap, COUNTER, keep=keep) == plain  # read back
    assert doc.trim_to(cap, EstimateCounter(), keep=keep) is not None


def test_real_entries_cost_and_read_as_the_plain_ones() -> None:
    """Entries as a long shell-heavy agent session writes them."""
    entries = [
        "`cd /testbed && python -m pytest tests/test_separable.py -x 2>&1 | tail -20` → "
        "exit 1; `2 failed, 14 passed`; `AssertionError: assert False` (\N{MULTIPLICATION SIGN}4)",
        "`./astropy/modeling/separable.py` — read (cat); edited (sed -i) \N{MULTIPLICATION SIGN}3;"
        " read (grep)",
        "`cat > test_fix.py << 'EOF' … (+31 lines)` → `its values are copied.` [#64\u201365]",
        "As of the last folded turn, the assistant said: Let me run the tests again.\n"
        "  python -m pytest",
    ]
    costs = EntryCosts(COUNTER)
    for entry in entries:
        assert costs(entry) == COUNTER.count_text(_trim_costs.bullet(entry)) + 1
        for pool in ("commands", "files_modified", "measurements", "state"):
            assert remembered(shorten)(pool, entry) == shorten(pool, entry)
            assert remembered(bare)(pool, entry) == bare(pool, entry)


def test_the_tables_are_bounded() -> None:
    with (
        mock.patch.object(_trim_costs, "LIMIT", 8),
        mock.patch.dict(_trim_costs._COSTS, clear=True),
        mock.patch.dict(_trim_costs._FORMS, clear=True),
    ):
        costs = EntryCosts(COUNTER)
        costs.many([f"entry {i}" for i in range(20)])
        table = _trim_costs._COSTS[COUNTER.encoding_name]
        assert len(table) >= 20
        EntryCosts(COUNTER)  # checked when a trim starts: the older half goes
        kept = _trim_costs._COSTS[COUNTER.encoding_name]
        assert len(kept) == len(table) // 2
        assert "entry 19" in kept and "entry 0" not in kept
        rewrite = remembered(shorten)
        for i in range(20):
            rewrite("commands", f"`c{i}` → exit 0")
        remembered(shorten)
        assert len(_trim_costs._FORMS[shorten]) == 10
    # another counter's costs are not shared
    estimate = EntryCosts(EstimateCounter())
    assert estimate("some entry") == entry_cost(EstimateCounter(), "some entry")
