"""The digest and masking skip reading a tool output line by line when it holds none of the
words every error line has: the error lines found are exactly those of the line-by-line scan."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import _facts as facts

# One error line per kind the scan recognises, and text that only looks close to one.
ERROR_LINES = [
    "FAILED tests/test_api.py::test_get - assert 1 == 2",
    "ERROR tests/test_config.py",
    "error[E0308]: mismatched types",
    "src/app.py:12: error: Incompatible return value type",
    "src/app.py:12:5: fatal error: stdio.h missing",
    "src/app.ts(3,7): error TS2322: Type 'string' is not assignable",
    "src/app.py:1:1: F401 'os' imported but unused",
    "12:5  error  'x' is defined but never used",
    "KeyError: 'user_id'",
    "SystemExit: 2",
    "KeyboardInterrupt:",
    "Exception in thread main java.lang.NullPointerException",
    "Binder Error: column not found",
    "HTTP/1.1 503 Service Unavailable",
    "Error: Cannot find module 'left-pad'",
    "fatal: not a git repository",
    "FATAL: role does not exist",
    "npm ERR! code ENOENT",
    "make: *** [all] Error 1",
    "panic: runtime error: index out of range",
    "bash: pyest: command not found",
    "cat: x: No such file or directory",
    "open: Permission denied",
    "sh: 1: pyest: not found",
    "Segmentation fault (core dumped)",
    "E   AssertionError: 3 != 5",
    "Traceback (most recent call last):",
    '  File "app.py", line 1, in <module>',
    "ValueError: bad value",
]
NEAR_MISSES = [
    "line 3: value_3 = compute(3, retries=3)",
    "# src/m12.py",
    "errors: 0",
    "no problems found",
    "exit code 0",
    "panic mode off",
    "HTTP 200 OK",
    "src/app.py:1:1 ok",
    "name  value  notes",
    "2024-05-01T10:00:00.1234567Z collecting ...",
    "test (3.10)\tRun tests\t",
    "",
    "    indented",
]
PREFIXES = ["", "test (3.10)  Run tests  ", "2024-05-01T10:00:00.1234567Z ", "E   ", "  "]

line = st.one_of(
    st.sampled_from(ERROR_LINES),
    st.sampled_from(NEAR_MISSES),
    st.builds(lambda p, x: p + x, st.sampled_from(PREFIXES), st.sampled_from(ERROR_LINES)),
    st.text(st.sampled_from("aeErTFx:*!. \t0123\x85\u2028"), max_size=30),
)


@settings(deadline=None, max_examples=400)
@given(st.lists(line, max_size=12), st.sampled_from(["\n", "\r\n", "\n\n"]))
def test_skipping_outputs_without_error_words_finds_the_same_errors(
    lines: list[str], newline: str
) -> None:
    text = newline.join(lines)
    assert facts.error_lines(text) == facts._scan_errors(text)


def test_every_kind_of_error_line_is_found_on_its_own() -> None:
    for text in ERROR_LINES:
        if text.startswith(("Traceback", "  File")):
            continue
        assert facts.error_lines(text), text
        assert facts.error_lines(text) == facts._scan_errors(text)


def test_file_contents_without_error_words_have_no_errors() -> None:
    output = "# src/m1.py\n" + "".join(f"line {n}: value_{n} = compute({n})\n" for n in range(10))
    assert facts.error_lines(output) == [] == facts._scan_errors(output)
    assert facts.last_error(output) is None


EXIT_PHRASES = [
    "exit code 2",
    "Exit Status: 1",
    "exited with code 0",
    "returncode=3",
    "RETURN CODE -1",
    "exit_code: 4",
    "EXITED WITH 7",
    "return 5",
    "exit",
]


@settings(deadline=None, max_examples=300)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(EXIT_PHRASES),
            st.sampled_from(NEAR_MISSES),
            st.text(st.sampled_from("exitcodeEXITreturn _:=-12 \n\u0130\u0131\u017f"), max_size=20),
        ),
        max_size=8,
    )
)
def test_skipping_outputs_without_exit_words_finds_the_same_exit_code(parts: list[str]) -> None:
    text = " ".join(parts)
    exits = list(facts._EXIT.finditer(text))
    expected = exits[-1] if exits else None
    found = facts._last_exit(text)
    assert (found and (found.span(), found.group(1))) == (
        expected and (expected.span(), expected.group(1))
    )


def _outcome_reference(text: str) -> tuple[str, bool | None]:
    """``outcome_of`` as first written: every line read, every pattern tried."""
    import re

    parts: list[str] = []
    ok: bool | None = None
    exits = list(facts._EXIT.finditer(text))
    if exits:
        ok = int(exits[-1].group(1)) == 0
        parts.append(f"exit {int(exits[-1].group(1))}")
    summary = next(
        (m.group(1) for m in map(facts._PYTEST_SUMMARY.match, text.splitlines()) if m), None
    )
    if summary:
        parts.append(facts.code(summary, 80))
        if ok is None:
            ok = not re.search(r"\b(?:failed|error|errors)\b", summary)
    errors = facts._scan_errors(text)
    error = facts.clip(errors[-1], 160) if errors else None
    if error and (ok is not True or not summary):
        parts.append(facts.code(error, 160))
        ok = False if ok is None else ok
    if not parts:
        rest = text.lstrip()
        lines = [line.strip() for line in rest.splitlines() if line.strip()]
        if len(rest) <= 200 and rest.count("\n") < 8:  # a short output, quoted whole
            parts.append(f"output: {facts.code('; '.join(lines), 200)}" if lines else "no output")
        else:
            parts.append(f"output: {facts.code(lines[0], 100)}" if lines else "no output")
    return "; ".join(parts), ok


OUTCOME_LINES = [
    *EXIT_PHRASES,
    "===== 3 passed, 1 failed in 0.52s =====",
    "== 2 passed in 1.0s",
    "= x in 2s",
    *ERROR_LINES[:6],
    *NEAR_MISSES,
]


@settings(deadline=None, max_examples=400)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(OUTCOME_LINES),
            st.text(st.sampled_from("= in\t\n\r\x0b\x1c\u2028 ab3.s"), max_size=12),
        ),
        max_size=8,
    ),
    st.sampled_from(["\n", "\r\n", "\u2028", "\n\n  "]),
)
def test_the_outcome_of_an_output_is_the_same_read_faster(lines: list[str], sep: str) -> None:
    text = sep.join(lines)
    assert facts.outcome_of(text) == _outcome_reference(text)
    assert facts.outcome_of(text, facts.error_lines(text)) == _outcome_reference(text)


# Lines that steer the traceback reading (a header, frames, a chained exception, an exception
# line without an error word) and line breaks ``splitlines`` knows besides a line feed.
TRACEBACK_LINES = [
    "Traceback (most recent call last):",
    "  Traceback (most recent call last): indented",
    '  File "app.py", line 1, in <module>',
    "    raise ValueError('x')",
    "During handling of the above exception, another exception occurred:",
    "",
    "   ",
    "mypkg.Conflict: the custom exception ends it",
    "KeyError: 'user_id'",
    "\tTypeError: indented",
    "plain words",
    "x\ry",
    "a\x0cb",
    "c\x85d",
    "e\u2028f",
    "g\r",
]


@settings(deadline=None, max_examples=600)
@given(
    st.lists(st.one_of(st.sampled_from(TRACEBACK_LINES), line), max_size=24),
    st.sampled_from(["\n", "\r\n", "\r", "\n\r\n", "\x1e"]),
    st.booleans(),
)
def test_reading_only_hinted_lines_and_tracebacks_finds_the_same_errors(
    lines: list[str], newline: str, trailing: bool
) -> None:
    text = newline.join(lines) + (newline if trailing else "")
    assert facts.error_lines(text) == facts._scan_errors(text)
    # however few its lines (a text of fewer than ``_FEW_LINES`` is read whole)
    assert facts._read_errors(facts._hinted_lines(text, few=0)) == facts._scan_errors(text)
