"""Exact facts in conversation items: the deterministic extractors behind the digest.

Each function reads text and returns verbatim fragments; none of them paraphrases (files and
commands in tool calls are read by ``_files``; identifiers by ``_facts_ids``, values by
``_facts_values``, sentences, phrases and observations by ``_facts_prose``).
They favour recall on the fact classes LLM summaries lose most often (Factory's artifact trail,
"Lost in Compaction"): file paths and what was done to them, commands and their outcome, error
strings, identifiers, user constraints and values that changed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from compactkit.compressors._anchored import case_folded, occurrences

_WS = re.compile(r"\s+")


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    if len(text) > 2 * limit + 80:  # a long text: what its start shows, the rest unread
        head = text[: 2 * limit + 80]
        if not head.isprintable() or "  " in head:
            head = _WS.sub(" ", head)
        head = head.lstrip()
        # Collapsed, the start is the start of the whole text collapsed; past ``limit`` + 1
        # characters (a trailing space may go) it is cut where the whole text is.
        if len(head) > limit + 1:
            return head[: limit - 1].rstrip() + "…"
    # Printable text holds no whitespace but spaces: without a double one, nothing to collapse.
    if not text.isprintable() or "  " in text:
        text = _WS.sub(" ", text)
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def code(text: str, limit: int = 120) -> str:
    """``text`` clipped and quoted as Markdown inline code."""
    return "`" + clip(text, limit).replace("`", "'") + "`"


# -- errors and outcomes ---------------------------------------------------------------------

_ERROR_LINE = re.compile(
    r"""^(?:
        (?:FAILED|ERROR)\ \S.*                              # pytest short summary
      | error(?:\[E\d+\])?:\ .+                             # rustc, generic
      | \S+:\d+(?::\d+)?:\ (?:error|fatal\ error):\ .+      # mypy, gcc, clang, go vet
      | \S+\(\d+,\d+\):\ error\ TS\d+:\ .+                 # tsc
      | \S+:\d+:\d+:\ [A-Z]{1,3}\d{2,4}\b.*                 # flake8, ruff, pylint codes
      | \d+:\d+\s+error\s+.+                               # eslint
      | (?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt):\ ?.*  # an exception line
      | Exception\ in\ thread\ .+                           # Java
      | [A-Z][a-z]+(?:\ [A-Z][a-z]+)?\ Error:\ .+            # DuckDB, Postgres-style "Binder Error:"
      | HTTP(?:/[\d.]+)?\ [45]\d\d\b.+                       # HTTP status errors
      | (?:Error|ERROR|fatal|FATAL|npm\ ERR!|error\ TS\d+):?\ .+  # Error: …, fatal: …
      | make(?:\[\d+\])?:\ \*\*\*\ .+                        # make
      | panic:\ .+                                         # Go
      | \S*sh:\ (?:line\ )?\d+:\ .+:\ not\ found
      | Segmentation\ fault.*
    )$""",
    re.VERBOSE,
)
# A line that holds one of these is an error line too ("sh: x: command not found"). They are
# looked for with ``in``, not as a ``.*(?:…).*`` alternative of ``_ERROR_LINE``, which the regex
# engine tried by backtracking from the line's end through every character of every line it read.
_FAILURE_WORDS = ("command not found", "No such file or directory", "Permission denied")


def _is_error_line(line: str) -> bool:
    """Whether ``line`` (one line: no line feed) is an error line: ``_ERROR_LINE`` matches it,
    or it holds one of ``_FAILURE_WORDS`` (tests/compressors/test_pattern_rewrites.py: the
    lines the one pattern with both matched)."""
    return (
        _ERROR_LINE.match(line) is not None
        or "command not found" in line
        or "No such file or directory" in line
        or "Permission denied" in line
    )


_PYTEST_E = re.compile(r"^E\s{2,}(?=\S)")  # pytest's "E   AssertionError: …" detail lines
_TRACEBACK = "Traceback (most recent call last):"
# What CI logs put before each line: a timestamp (GitHub Actions' raw logs), or the job and step
# names (`gh run view --log`: tab-separated, or two spaces where the tabs were expanded).
_CI_PREFIX = re.compile(
    r"^(?:\d{4}-\d\d-\d\dT[\d:.]+Z\s+|[^\t]+\t[^\t]+\t|\S[^\t]*?\ {2}\S[^\t]*?\ {2}(?=\S))"
)
# What service and application logs put before a line: a compose service (``svc-billing  | ``),
# a bracketed tag or timestamp (``[worker]``, ``[12:00:01]``), a bare timestamp, a syslog
# ``name[pid]: ``; stripped one after another until an error line shows (at most four).
_LOG_PREFIX = re.compile(
    r"^(?:[\w.@/-]{1,60}\s*\|\s*|\[[^\]\n]{1,60}\]:?\s*"
    r"|\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\s*|\d\d:\d\d:\d\d(?:[.,]\d+)?\s*"
    r"|[\w.-]+\[\d+\]:\s*)"
)
_ANNOTATION = re.compile(r"^##\[error\]\s*|^::error(?: [^:]*)?::")  # GitHub Actions' error marks
_EXIT = re.compile(
    r"(?:exit code|exit status|exited with(?: code| status)?|returncode|return code|exit_code)"
    r"[\s:=]+(-?\d+)",
    re.IGNORECASE,
)
# Every ``_EXIT`` match starts with one of these (lowered): ASCII text holding none has none.
_EXIT_PHRASES = (
    "exit code",
    "exit status",
    "exited with",
    "returncode",
    "return code",
    "exit_code",
)
_EXIT_STARTS = ("exit", "return")  # what each of ``_EXIT_PHRASES`` starts with
_PYTEST_SUMMARY = re.compile(r"^=+ (.*\b(?:passed|failed|error|errors|skipped)\b.*?) in [\d.]+s")


def errors_in(text: str, limit: int = 10) -> list[str]:
    """Error strings in ``text``, verbatim (one line each), in order, at most ``limit``.

    A Python traceback contributes its final exception line; pytest its FAILED/ERROR lines;
    compilers and type checkers their ``error:`` lines; shells their ``Error:``/``fatal:``
    lines and "command not found"-style failures.
    """
    return limited(error_lines(text), limit)


def limited(found: list[str], limit: int = 10) -> list[str]:
    """``errors_in``'s cut of ``error_lines``: the first ``limit - 1`` and the last."""
    return found[:limit] if len(found) <= limit else found[: limit - 1] + found[-1:]


# At least one of these is in every error line (``_is_error_line``: one per alternative, the
# prefixes the scan strips never add one) and in a traceback's header: a text holding none of
# them has no error line and is not read line by line. Most tool output (file contents,
# listings) holds none, and a substring test costs far less than two matches per line.
_ERROR_HINTS = (
    "rror",  # error, Error, …Error
    "ERROR",
    "FAILED",
    "ERR!",
    "Exception",
    "Exit",
    "Interrupt",
    "fatal",
    "FATAL",
    "HTTP",
    "***",
    "panic: ",
    "not found",
    "No such file or directory",
    "Permission denied",
    "Segmentation fault",
    _TRACEBACK,
)
_ERROR_HINT = re.compile("|".join(map(re.escape, _ERROR_HINTS)))  # one pass for all of them
_LINT_HINT = re.compile(r":\d+:\d+: [A-Z]")  # flake8, ruff, pylint: path:line:col: CODE


def error_lines(text: str) -> list[str]:
    """Every error string in ``text`` (``errors_in`` without its limit), so that a caller
    needing the errors, the last error and the outcome of one output reads it once."""
    return list(_error_lines(text))


@functools.lru_cache(maxsize=4096)
def _error_lines(text: str) -> tuple[str, ...]:
    """``error_lines``, remembered: a compaction's masking step reads the same outputs for
    their last error as its digest then does for their errors."""
    first = _LINE_HINT.search(text)
    if first is None:
        return ()
    return tuple(_read_errors(_hinted_lines(text, first.start())))


def _scan_errors(text: str) -> list[str]:
    """``error_lines``, every line read."""
    return _read_errors(text.splitlines())


# A line holding none of the hints is no error line (see ``_ERROR_HINTS``); nor does it change
# what the lines after it are, unless it is in a traceback (whose last line is its error). A
# text without one holds no error line: it is not read at all.
_LINE_HINT = re.compile(f"{_ERROR_HINT.pattern}|{_LINT_HINT.pattern}")
# What ``str.splitlines`` breaks lines at besides a line feed and a CRLF (a carriage return
# alone), each looked for on its own (a search for one character is a C ``memchr``)
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e"
_OTHER_BREAKS_NON_ASCII = "\x85\u2028\u2029"


def _other_breaks(text: str) -> bool:
    """Whether ``str.splitlines`` breaks ``text`` at anything but a line feed or a CRLF."""
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return True
    if any(char in text for char in _OTHER_BREAKS):
        return True
    return not text.isascii() and any(char in text for char in _OTHER_BREAKS_NON_ASCII)


_FEW_LINES = 4  # (measured: fewer lines are read faster whole than searched, more are not)


def _hinted_lines(text: str, first: int = 0, few: int = _FEW_LINES) -> list[str]:
    """The lines of ``text`` that ``_read_errors`` may take an error from: those that hold a
    hint, and every line of a traceback (from its header to the line that ends it); ``first``:
    where its first hint is, if known. A text of fewer than ``few`` lines: all of them.

    Where a tool prints many lines (a file's contents, a listing) and a few errors, only those
    few lines are read, each found by one scan of the text for the hints (C speed), instead of
    stripping and matching every line (tests/compressors/test_error_hints.py: the same errors
    as reading every line). A line ends at a line feed (a carriage return before it is
    whitespace the reading strips); a text with another line break ``splitlines`` knows is
    split as it splits it.
    """
    if text.count("\n") < few or _other_breaks(text):
        return text.splitlines()  # (a few lines are read faster than searched)
    lines: list[str] = []
    # From each hint on to the end of its line, then the next hint from the next line on (a
    # line full of error words is searched once)
    while (hint := _LINE_HINT.search(text, first)) is not None:
        at = hint.start()
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        lines.append(text[start:end])
        first = end + 1
        if lines[-1].strip().startswith(_TRACEBACK):
            first = _traceback_lines(text, first, lines)
    return lines


def _traceback_lines(text: str, start: int, lines: list[str]) -> int:
    """Add the lines of the traceback whose header ends before ``start`` to ``lines``, up to
    and with the line that ends it (as ``_read_errors`` reads them); where the next line
    starts."""
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        lines.append(line)
        start = end + 1
        stripped = line.strip()
        if stripped.startswith(_TRACEBACK):
            continue  # another traceback: read on
        if not line[:1].isspace() and stripped and not stripped.startswith("During handling"):
            break
    return start


def _read_errors(lines: Iterable[str]) -> list[str]:
    """``error_lines`` of a text's ``lines``."""
    found: list[str] = []
    in_traceback = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(_TRACEBACK):
            in_traceback = True
            continue
        if in_traceback:
            if not line[:1].isspace() and stripped and not stripped.startswith("During handling"):
                in_traceback = False
                if stripped not in found:
                    found.append(clip(stripped, 240))
            continue
        stripped = _PYTEST_E.sub("", stripped)
        if len(stripped) > 400:  # long lines are never error lines
            continue
        if not _is_error_line(stripped):
            logged = _logged_error(stripped)
            if logged is None:
                continue
            stripped = logged
        if clip(stripped, 240) not in found:
            found.append(clip(stripped, 240))
    return found


def _logged_error(line: str) -> str | None:
    """The error line inside a log line, or ``None``: after a CI log's "job  step" or
    timestamp, after a GitHub Actions ``##[error]`` mark (its message is the error), after
    service, tag and timestamp prefixes (``svc-billing  | TypeError: …``)."""
    # A CI prefix starts with a digit or holds two tabs or two double spaces: without them the
    # line is the one its caller just failed to match, unless a pytest "E   " mark goes.
    ci = line[:1].isdigit() or "\t" in line or "  " in line
    stripped = _PYTEST_E.sub("", _CI_PREFIX.sub("", line, count=1) if ci else line)
    if (ci or stripped != line) and _is_error_line(stripped):
        return stripped
    marked = _ANNOTATION.sub("", stripped, count=1)
    if marked != stripped and marked.strip():
        return marked.strip()
    stripped = line
    for _ in range(4):
        shorter = _LOG_PREFIX.sub("", stripped, count=1)
        if shorter == stripped or not shorter:
            return None
        stripped = shorter
        if _is_error_line(stripped):
            return stripped
    return None


def last_error(text: str, found: list[str] | None = None) -> str | None:
    """The last error string of ``text`` (see ``errors_in``), clipped to 160 characters
    (``found``: its ``error_lines``, when the caller has them)."""
    errors = error_lines(text) if found is None else found
    return clip(errors[-1], 160) if errors else None


def _last_exit(text: str) -> re.Match[str] | None:
    """The last exit-code phrase of ``text`` (``_EXIT``), or ``None``.

    Every phrase ``_EXIT`` matches starts with one of ``_EXIT_PHRASES`` in some case. Where
    ignoring case folds only ASCII letters (``case_folded``: ASCII text, and most other text)
    the pattern is tried only where one can stand in the lowered text: the case-insensitive
    pattern is slow to scan (tens of µs per output).
    """
    lowered = case_folded(text)  # (``None``: a letter beyond ASCII may match an ASCII one)
    if lowered is None:
        exits = list(_EXIT.finditer(text))
        return exits[-1] if exits else None
    # Tried only where a phrase can stand (at an "exit" or a "return": two searches, not one per
    # phrase; where none stands the pattern fails at once), from the last on: no phrase starts
    # inside a match (nor inside another phrase), so matches never overlap and the last one
    # found there is the last ``finditer`` finds (tests/compressors/test_anchored_patterns.py).
    # An agent's every output may hold one ("<returncode>0</returncode>"), where the pattern,
    # run everywhere, read the whole output.
    for at in sorted(occurrences(lowered, _EXIT_STARTS), reverse=True):
        if match := _EXIT.match(text, at):
            return match
    return None


_SHORT_OUTPUT = 200  # characters: an output this short is quoted whole as a command's outcome


def outcome_of(text: str, found: list[str] | None = None) -> tuple[str, bool | None]:
    """A one-line outcome of a command's output, and whether it succeeded (``None``: unknown).

    From the exit code, a pytest summary line and the last error line, whichever are present
    (``found``: the output's ``error_lines``, when the caller has them).
    """
    parts: list[str] = []
    ok: bool | None = None
    exit_match = _last_exit(text)  # the last one: a tool's own trailer
    if exit_match:
        code_value = int(exit_match.group(1))
        ok = code_value == 0
        parts.append(f"exit {code_value}")
    summary = _pytest_summary(text)
    if summary:
        parts.append(code(summary, 80))
        if ok is None:
            ok = not re.search(r"\b(?:failed|error|errors)\b", summary)
    error = last_error(text, found)
    if error and (ok is not True or not summary):
        parts.append(code(error, 160))
        ok = False if ok is None else ok
    if not parts:
        rest = text.lstrip()  # from the first non-blank line on (line breaks are whitespace)
        if len(rest) <= _SHORT_OUTPUT and rest.count("\n") < 8:
            # a short output is the result itself (a measurement, a status): all of it
            lines = [ln.strip() for ln in rest.splitlines() if ln.strip()]
            parts.append(
                f"output: {code('; '.join(lines), _SHORT_OUTPUT)}" if lines else "no output"
            )
        else:
            # its first line, split off the text's first line only: the rest is not read
            first = rest.partition("\n")[0].splitlines()[0].strip() if rest else ""
            parts.append(f"output: {code(first, 100)}" if first else "no output")
    return "; ".join(parts), ok


# ``_PYTEST_SUMMARY`` at the start of any line of a text (tried where a line starts with "=").
_PYTEST_SUMMARY_LINE = re.compile(_PYTEST_SUMMARY.pattern, re.M)


def _pytest_summary(text: str) -> str | None:
    """What the first pytest summary line of ``text`` (``_PYTEST_SUMMARY``) says, or ``None``.

    Tried only at the lines that start with "=" (found by a search for a line break before
    one), not line by line: a line break the pattern cannot cross ends each line unless the
    text has others that ``splitlines`` breaks at (tests/compressors/test_error_hints.py: the
    same outcome as reading every line).
    """
    if "=" not in text or " in " not in text:  # in every summary line: skip the rest unread
        return None
    if _other_breaks(text):
        return next((m.group(1) for m in map(_PYTEST_SUMMARY.match, text.splitlines()) if m), None)
    at = 0 if text.startswith("=") else -1
    while True:
        if at >= 0 and (match := _PYTEST_SUMMARY_LINE.match(text, at)):
            return match.group(1)
        at = text.find("\n=", at + 1)
        if at < 0:
            return None
        at += 1


# -- measurements ----------------------------------------------------------------------------

# A number with a unit (a timing, a size, a rate, a share, an amount), a currency sign before a
# number, or a test count: what a run measured, as its output states it.
_MEASURE = re.compile(
    r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s?"
    r"(?:ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hours?|%|[KMGT]i?B|bytes?|B"
    r"|req/s|rps|ops/s|qps|tokens?|EUR|USD|GBP|CHF|JPY|€|\$|£)(?![\w/])"
    r"|[$€£]\s?\d[\d,]*(?:\.\d+)?"
    r"|\b\d+ (?:passed|failed|errors?|skipped|xfailed|tests?|examples?|failures?)\b",
)
# Whether a line holds a ``_MEASURE`` match (``measurements_in`` asks nothing else): each
# alternative with its first character (a digit or a currency sign) ahead of its look-behinds,
# as ``_facts_ids._SHA``, so that the regex engine skips ahead to the next digit or sign instead
# of trying every position (tests/compressors/test_digest_reading_fast_paths.py: found in the same
# lines).
_MEASURED = re.compile(
    r"[\d$€£](?:(?<![\w.]\d)(?<=\d)[\d,]*(?:\.\d+)?\s?"
    r"(?:ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?|h|hours?|%|[KMGT]i?B|bytes?|B"
    r"|req/s|rps|ops/s|qps|tokens?|EUR|USD|GBP|CHF|JPY|€|\$|£)(?![\w/])"
    r"|(?<=[$€£])\s?\d[\d,]*(?:\.\d+)?"
    r"|(?<!\w\d)(?<=\d)\d* (?:passed|failed|errors?|skipped|xfailed|tests?|examples?|failures?)\b)",
)
# ``_MEASURED`` for ASCII text, where no "€", "£" or "µ" stands: its first character a digit or
# "$", a class of ASCII characters only, which the regex engine tests faster than one holding
# characters beyond Latin-1 (tests/compressors/test_pattern_rewrites.py: the same lines).
_MEASURED_ASCII = re.compile(
    r"[0-9$](?:(?<![\w.]\d)(?<=\d)[\d,]*(?:\.\d+)?\s?"
    r"(?:ms|us|ns|s|secs?|seconds?|mins?|minutes?|h|hours?|%|[KMGT]i?B|bytes?|B"
    r"|req/s|rps|ops/s|qps|tokens?|EUR|USD|GBP|CHF|JPY|\$)(?![\w/])"
    r"|(?<=[$])\s?\d[\d,]*(?:\.\d+)?"
    r"|(?<!\w\d)(?<=\d)\d* (?:passed|failed|errors?|skipped|xfailed|tests?|examples?|failures?)\b)",
)
_MEASURE_LINE_CHARS = 100  # longer lines are prose or data rows, not a reported measurement
_MEASURE_TAIL_LINES = 15  # a run reports its measurements at the end of its output
MAX_MEASUREMENTS = 4  # per run


def measurements_in(text: str, found: Sequence[str] = ()) -> list[str]:
    """The lines of a command's output that report a measurement (``p95 latency 225 ms``,
    ``overall churn 4.53%``, ``12 passed, 3 failed``, ``refund total 57.33 EUR``), verbatim:
    from its last lines, at most ``MAX_MEASUREMENTS``, error lines (``found``) excluded."""
    tail = _tail(text, _MEASURE_TAIL_LINES)
    if not _DIGIT.search(tail):
        return []
    errors = set(found)
    measured = _MEASURED_ASCII.search if tail.isascii() else _MEASURED.search
    out = [
        # its value alone: ``===== 3 passed in 0.2s =====``'s rules go (a rule starts or ends
        # the line: else there is none to take off)
        _BANNER.sub("", line) if line[0] in _RULE_CHARS or line[-1] in _RULE_CHARS else line
        for line in map(str.strip, tail.splitlines())
        if line
        and len(line) <= _MEASURE_LINE_CHARS
        and line not in errors
        and measured(line)
        and not _PATH_LIKE.search(line)
    ]
    return out[-MAX_MEASUREMENTS:]


_BANNER = re.compile(r"^([=*#~_-])\1{2,}\s*|\s*([=*#~_-])\2{2,}$")
_RULE_CHARS = frozenset("=*#~_-")  # what ``_BANNER``'s rules are made of


_DIGIT = re.compile(r"\d")


def _tail(text: str, lines: int) -> str:
    """The last ``lines`` lines of ``text`` (trailing blank lines aside), read from its end
    only: an output's size does not matter."""
    text = text.rstrip()
    end = len(text)
    for _ in range(lines):
        end = text.rfind("\n", 0, end)
        if end < 0:
            return text
    return text[end + 1 :]


_PATHISH = re.compile(r"[\w-]+/[\w./-]+\.\w{1,6}\b|\bFile \"|^\s*at |\w+\.\w+\(")
# Whether a line holds a ``_PATHISH`` match: its path's "/" and its call's "." looked for first,
# the word character before each behind them (a leading ``[\w-]+`` is tried from every word
# character and backtracked through the rest of the word: tens of µs per line).
_PATH_LIKE = re.compile(r"/(?<=[\w-]/)[\w./-]+\.\w{1,6}\b|\bFile \"|^\s*at |\.(?<=\w\.)\w+\(")
