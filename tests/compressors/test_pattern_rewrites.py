"""The digest's patterns rewritten to be read faster (issue 35) find what they found as first
written: an error line's failure words looked for with ``in`` instead of a ``.*(?:…).*``
alternative; a shell command's double-quoted spans read as runs between escapes; a text's shas
and code-id hints read from the runs of hex digits that can hold them; an ASCII line's
measurement found by a pattern of ASCII characters; SWE-agent's status lines tried where they
can start, an observation's wrapper taken off only where its words stand."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _facts as facts
from compactkit.compressors import _facts_ids as facts_ids
from compactkit.compressors import _facts_prose as facts_prose
from compactkit.compressors.digest import _shell_files as shell_files
from compactkit.compressors.digest import _shell_words as shell_words

PROPERTY = settings(deadline=None, max_examples=500)

# ``_ERROR_LINE`` as first written: the failure words an alternative of the pattern
_FAILURE_BRANCH = (
    r"      | .*(?:command\ not\ found|No\ such\ file\ or\ directory|Permission\ denied).*" "\n"
)
_PLAIN_ERROR_LINE = re.compile(
    facts._ERROR_LINE.pattern.replace("    )$", _FAILURE_BRANCH + "    )$"), re.VERBOSE
)

ERROR_LINE_PARTS = [
    "command not found",
    "No such file or directory",
    "Permission denied",
    "bash: foo: ",
    "cat: x.txt: ",
    "error: ",
    "KeyError: 'x'",
    "Segmentation fault",
    "FAILED t.py::t",
    "not found",
    "No such file",
    "Denied",
    "\r",
    " ",
    "é",
]


@PROPERTY
@given(
    st.lists(
        st.one_of(
            st.sampled_from(ERROR_LINE_PARTS),
            st.text(st.sampled_from("abcNPo :\t.-_1\r\u00a0"), max_size=8),
        ),
        max_size=6,
    ).map("".join)
)
def test_an_error_line_with_its_failure_words_read_apart_is_what_the_one_pattern_matched(
    line: str,
) -> None:
    assert _PLAIN_ERROR_LINE.pattern != facts._ERROR_LINE.pattern  # (the branch was put back)
    assert facts._is_error_line(line) == (_PLAIN_ERROR_LINE.match(line) is not None)


# The shell patterns as first written: a double-quoted span one character (or escape) at a time
_PLAIN_QUOTED = {
    "word": re.compile(r"""(?:[^ \t\r\n'"\\]+|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+""", re.S),
    "piece": re.compile(r"""([^'"\\]+)|\\(.)|'([^']*)'|"((?:[^"\\]|\\.)*)\"""", re.S),
    "quoted": re.compile(r"""'[^']*'|"(?:[^"\\]|\\.)*"|\\.""", re.S),
}
_REWRITTEN = {
    "word": shell_words._WORD,
    "piece": shell_words._PIECE,
    "quoted": shell_files._QUOTED,
}
SHELL_TEXT = st.lists(
    st.sampled_from(['"', "'", "\\", "\\\\", '\\"', "a", "b c", "\n", "\t", "é", "$x", "&&"]),
    max_size=16,
).map("".join)


@PROPERTY
@given(SHELL_TEXT, st.sampled_from(sorted(_REWRITTEN)))
def test_shell_patterns_with_double_quoted_runs_match_what_they_matched_char_by_char(
    text: str, name: str
) -> None:
    def spans(pattern: re.Pattern[str]) -> list[tuple[tuple[int, int], tuple[str | None, ...]]]:
        return [(m.span(), m.groups()) for m in pattern.finditer(text)]

    assert _REWRITTEN[name].pattern != _PLAIN_QUOTED[name].pattern
    assert spans(_REWRITTEN[name]) == spans(_PLAIN_QUOTED[name])


# Texts of long runs of hex digits, letters before digits, and the edges a sha may not touch
HEX_RUNS = st.lists(
    st.text(st.sampled_from("0123456789abcdef"), min_size=1, max_size=12)
    | st.sampled_from(["-", "/", ".", " ", "_", "0x", "A", "Z", "X1234567", "\u00e9", "\u0663"]),
    max_size=10,
).map("".join)


@PROPERTY
@given(HEX_RUNS)
def test_shas_and_hints_read_from_the_long_or_lettered_runs_are_the_patterns(text: str) -> None:
    runs = facts_ids._digit_runs(text) or facts_ids._NO_DIGIT
    shas = [s for s in facts_ids._SHA.findall(text) if not s.isdigit() and not s.isalpha()]
    assert runs.shas == list(dict.fromkeys(shas))
    if text.isascii():
        assert runs.dash_digit == (facts_ids._TICKET_HINT.search(text) is not None)
        assert runs.capital_digits == (facts_ids._CODE_ID_HINT.search(text) is not None)


MEASURE_PARTS = [
    "12 ms",
    "3.5s",
    "1,234 tokens",
    "$ 5",
    "$5.00",
    "4 passed",
    "x1 passed",
    "7 USD",
    "5%",
    "10 GiB",
    "9 req/s",
    "2 h",
    "8B",
    "a.1 ms",
    "5$",
]


@PROPERTY
@given(
    st.lists(
        st.one_of(
            st.sampled_from(MEASURE_PARTS),
            st.text(st.sampled_from("19.,/ab$ sBmh\t\x1f\x0b_-"), max_size=6),
        ),
        max_size=5,
    ).map("".join)
)
def test_an_ascii_line_has_a_measurement_where_the_pattern_as_written_finds_one(line: str) -> None:
    assert bool(facts._MEASURED_ASCII.search(line)) == bool(facts._MEASURE.search(line))


STATUS_PARTS = [
    "(Open file: /repo/a.py)\n",
    "\n(Current directory: /x)\n",
    "(Current directory: /repo)\n",
    "(Interactive session: n/a)\n",
    "(Open file: n/a) \t\n",
    "(a: b)\n",
    "(",
    ")",
    "\n",
    "bash-$",
    "bash-$ \n",
    "out: 1",
    "x" * 1990,
]


@PROPERTY
@given(st.lists(st.sampled_from(STATUS_PARTS), max_size=10).map("".join))
def test_status_lines_tried_where_they_can_start_are_what_the_search_finds(text: str) -> None:
    def span(match: re.Match[str] | None) -> tuple[int, int] | None:
        return None if match is None else match.span()

    plain = None
    if text.rstrip().endswith("bash-$"):
        tail = max(0, len(text) - facts_prose._STATUS_TAIL)
        plain = facts_prose._SHELL_STATUS.search(text, tail)
    assert span(facts_prose._shell_status(text)) == span(plain)


WRAPPER_PARTS = [
    "Observation:",
    "OUTPUT: ",
    "  tool result:",
    "Execution Result:",
    "EXECUTION RESULT of [execute_bash]:",
    "execution result of [",
    "exit code: -3",
    "<output>",
    "</STDOUT>",
    "<returncode>0</returncode>",
    "<returncode> 2 </returncode>",
    "</function_results>",
    "<tool_response>",
    "</\u017ftdout>",  # a long s: ignoring case, the pattern reads it as "s"
    "</stderr>",
    "\u212a",
    "output",
    "result",
    "\n",
    " ",
    "é",
]


@PROPERTY
@given(
    st.lists(
        st.sampled_from(WRAPPER_PARTS) | st.text(st.sampled_from("ab:<>/\n "), max_size=4),
        max_size=8,
    ).map("".join)
)
def test_an_observation_body_read_past_a_text_without_wrapper_words_is_the_plain_one(
    text: str,
) -> None:
    plain = re.sub(r"<returncode>\s*(-?\d+)\s*</returncode>", r"[exit code: \1]", text)
    plain = facts_prose._WRAPPER.sub("", plain).strip("\n")
    if facts_prose._shell_status(text) is None:
        assert facts_prose.observation_body(text) == plain
