"""Case-insensitive patterns that open with a word are tried only where their word stands
(issues, exit codes, "set x to 5"): what each reader returns is exactly what the pattern finds
when run at every position."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _anchored
from compactkit.compressors import _facts as facts
from compactkit.compressors import _facts_ids as facts_ids
from compactkit.compressors import _facts_values as facts_values

PROPERTY = settings(deadline=None, max_examples=800)

_filler = st.text(st.sampled_from("ab #_-:=.`\n\t0123456789\u017f\u212a"), max_size=8)


def _texts(parts: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(parts) | _filler, max_size=10).map(" ".join)


ISSUE_PARTS = [
    "#12",
    "#1234567",
    "a#12",
    "issue 5",
    "Issue #77",
    "ISSUE  8",
    "PR #7",
    "pr 3",
    "pull request 9",
    "Pull Request #10",
    "expr 4",
    "\n#42",
    "(#42)",
    "##12",
    "issue #pr 5",
    "#1",
    "# 12",
    "#12a",
    "x #123",
]


@PROPERTY
@given(_texts(ISSUE_PARTS))
def test_issue_numbers_are_the_patterns(text: str) -> None:
    plain = [hashed or named for hashed, named in facts_ids._ISSUE.findall(text)]
    assert facts_ids.issue_numbers(text) == plain


EXIT_PARTS = [
    "exit code: 1",
    "Exit Status=2",
    "exited with code 3",
    "EXITED WITH STATUS -4",
    "exited with 5",
    "<returncode>0</returncode>",
    "returncode=0",
    "return code 7",
    "exit_code: 8",
    "exit code",
    "exit codes 9",
    "exit status:\n 10",
]


def _plain_last_exit(text: str) -> tuple[tuple[int, int], str] | None:
    exits = list(facts._EXIT.finditer(text))
    return (exits[-1].span(), exits[-1].group(1)) if exits else None


@PROPERTY
@given(_texts(EXIT_PARTS))
def test_the_last_exit_code_is_the_patterns(text: str) -> None:
    found = facts._last_exit(text)
    assert (None if found is None else (found.span(), found.group(1))) == _plain_last_exit(text)


SET_PARTS = [
    "set `retries` to 5",
    "Set timeout to 30s",
    "change timeout from 10 to 30",
    "CHANGE the pool_size to 8",
    "bump MAX_WORKERS to 16",
    "reset x to 1",
    "update the limit at 5",
    "limit it to 3",
    "cap rate to 1.5",
    "setup y to 2",
    "raise `a.b` from 'x' to \"y\"",
    "lower z to none",
    "decrease q to 4.",
]


def _spans(matches: list[re.Match[str]]) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
    return [(m.span(), m.groups()) for m in matches]


@PROPERTY
@given(_texts(SET_PARTS))
def test_set_phrases_are_the_patterns(text: str) -> None:
    lowered = text.lower() if text.isascii() else None
    plain = list(facts_values._SET_PHRASE.finditer(text))
    assert _spans(facts_values._set_phrases(text, lowered)) == _spans(plain)


REAL_OUTPUTS = [
    "<returncode>0</returncode>\n<output>\n</output>",
    "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File "
    '"t.py", line 3\nValueError: x\n</output>',
    "Process exited with code 2\nexit code: 0",
    "Fixes issue #123 and PR 45; see pull request #9 (set the retries to 5, then change "
    "timeout from 10 to 30).",
]


@pytest.mark.parametrize("text", REAL_OUTPUTS)
def test_real_texts_read_as_the_patterns_read_them(text: str) -> None:
    plain_issues = [hashed or named for hashed, named in facts_ids._ISSUE.findall(text)]
    assert facts_ids.issue_numbers(text) == plain_issues
    found = facts._last_exit(text)
    assert (None if found is None else (found.span(), found.group(1))) == _plain_last_exit(text)
    plain_sets = list(facts_values._SET_PHRASE.finditer(text))
    assert _spans(facts_values._set_phrases(text, text.lower())) == _spans(plain_sets)


ID_PARTS = [
    "ABC-123",
    "JIRA-1234567",
    "aABC-12",
    "X-1",
    "ABCDEFGHIJK-5",
    "PROJ2-77",
    "_AB-3",
    "é-AB-4",
    "req_a1b2c3",
    "run-2024x",
    "xreq_123456",
    "deploy-abc",
    "usr_9999",
    "snap_XFahxzMuJksC",
    "test_separability",
    "abcdefghijk_ABCDEFGH1",
    "ab_cdefghij",
    "my_run_ABCDEFGH12",
    "JJD503141950010498",
    "ab_cdefghi1",
    "xy_abcdefghZ",
    "xy_abcdefgh\u0663",
    "ab_Cdefghij",
    # every prefix size before each separator (the look-behinds of ``_PREFIX_ENDS``)
    "msg_12ab",
    "resp-9abc",
    "sess_ab12",
    "build-12345",
    "trace_x1y2z3",
    "deploy_20240101",
    "xdeploy-1234",
    "order_abcd",
    "_inc-1234",
    "reqs_1234",
    "req-req_1234",
    "a-user-77777",
    "job_abcd1",
]


@PROPERTY
@given(_texts(ID_PARTS))
def test_tickets_and_ids_are_the_patterns(text: str) -> None:
    assert _spans(facts_ids._tickets(text)) == _spans(list(facts_ids._TICKET.finditer(text)))
    plain_prefixed = list(facts_ids._PREFIXED.finditer(text))
    assert _spans(facts_ids._prefixed_ids(text)) == _spans(plain_prefixed)
    plain_random = list(facts_ids._RANDOM_ID.finditer(text))
    assert _spans(facts_ids._random_ids(text)) == _spans(plain_random)


@PROPERTY
@given(_texts(ID_PARTS + ISSUE_PARTS), st.booleans())
def test_identifiers_are_found_as_before(text: str, prose: bool) -> None:
    """The whole reader: the identifiers found by the patterns run everywhere."""
    with_plain = _plain_identifiers(text, prose)
    assert facts_ids.identifiers_in(text, prose=prose, limit=50) == with_plain


def _plain_identifiers(text: str, prose: bool) -> list[tuple[str, str]]:
    from unittest import mock

    def plain(pattern: re.Pattern[str]) -> object:
        return lambda text: list(pattern.finditer(text))

    def plain_issues(text: str) -> list[str]:
        return [hashed or named for hashed, named in facts_ids._ISSUE.findall(text)]

    with mock.patch.multiple(
        facts_ids,
        _tickets=plain(facts_ids._TICKET),
        _prefixed_ids=plain(facts_ids._PREFIXED),
        _random_ids=plain(facts_ids._RANDOM_ID),
        issue_numbers=plain_issues,
    ):
        return facts_ids.identifiers_in(text, prose=prose, limit=50)


# Text beyond ASCII: marks agents print (✓), letters, a no-break space, digits beyond ASCII,
# and the characters ignoring case folds to ASCII letters (where the plain pattern is read).
_wide_filler = st.text(
    st.sampled_from("ab #_-:=.\n0123\u2713\u00e9\u00a0\u0663\u0130\u0131\u017f\u212aIiSsKk"),
    max_size=8,
)


def _wide_texts(parts: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(parts) | _wide_filler, max_size=10).map(" ".join)


@PROPERTY
@given(
    _wide_texts([*ISSUE_PARTS, "\u2713 issue 12", "pr\u00a0#3", "#\u0663\u0664", "\u0131ssue 5"])
)
def test_issue_numbers_beyond_ascii_are_the_patterns(text: str) -> None:
    plain = [hashed or named for hashed, named in facts_ids._ISSUE.findall(text)]
    assert facts_ids.issue_numbers(text) == plain


@PROPERTY
@given(_wide_texts([*EXIT_PARTS, "\u2713 exit code 0", "EXIT CODE:\u00a07", "ex\u0131t code 3"]))
def test_the_last_exit_code_beyond_ascii_is_the_patterns(text: str) -> None:
    found = facts._last_exit(text)
    assert (None if found is None else (found.span(), found.group(1))) == _plain_last_exit(text)


def test_only_the_listed_characters_fold_to_ascii_letters() -> None:
    """Every code point beyond ASCII that a case-insensitive pattern matches to an ASCII
    letter, or whose lowered form is ASCII or longer, is one ``case_folded`` refuses."""
    letter = re.compile("[a-z]", re.IGNORECASE)
    odd = {
        chr(c)
        for c in range(128, 0x110000)
        if letter.match(chr(c)) or chr(c).lower().isascii() or len(chr(c).lower()) != 1
    }
    assert odd == set(_anchored._FOLDS_TO_ASCII)
    assert _anchored.case_folded("\u2713 Exit Code") == "\u2713 exit code"
    assert all(_anchored.case_folded(f"x{char}") is None for char in odd)
