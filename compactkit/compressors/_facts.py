"""Exact facts in conversation items: the deterministic extractors behind the digest.

Each function reads text and returns verbatim fragments; none of them paraphrases (files and
commands in tool calls are read by ``_files``).
They favour recall on the fact classes LLM summaries lose most often (Factory's artifact trail,
"Lost in Compaction"): file paths and what was done to them, commands and their outcome, error
strings, identifiers, user constraints and values that changed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

_WS = re.compile(r"\s+")


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
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
      | .*(?:command\ not\ found|No\ such\ file\ or\ directory|Permission\ denied).*
      | \S*sh:\ (?:line\ )?\d+:\ .+:\ not\ found
      | Segmentation\ fault.*
    )$""",
    re.VERBOSE,
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


# At least one of these is in every line ``_ERROR_LINE`` matches (one per alternative, the
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
    if not _ERROR_HINT.search(text) and not _LINT_HINT.search(text):
        return ()
    return tuple(_scan_errors(text))


def _scan_errors(text: str) -> list[str]:
    """``error_lines``, line by line."""
    found: list[str] = []
    lines = text.splitlines()
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
        if not _ERROR_LINE.match(stripped):
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
    stripped = _PYTEST_E.sub("", _CI_PREFIX.sub("", line, count=1))
    if _ERROR_LINE.match(stripped):
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
        if _ERROR_LINE.match(stripped):
            return stripped
    return None


def last_error(text: str, found: list[str] | None = None) -> str | None:
    """The last error string of ``text`` (see ``errors_in``), clipped to 160 characters
    (``found``: its ``error_lines``, when the caller has them)."""
    errors = error_lines(text) if found is None else found
    return clip(errors[-1], 160) if errors else None


def _last_exit(text: str) -> re.Match[str] | None:
    """The last exit-code phrase of ``text`` (``_EXIT``), or ``None``.

    Every phrase ``_EXIT`` matches starts with one of ``_EXIT_PHRASES`` in some case. For ASCII
    text (where ignoring case folds only ASCII letters) substring tests of the lowered text rule
    most outputs out at once (a source file holds "return" and "exit", rarely these phrases):
    the case-insensitive pattern is slow to scan (tens of µs per output).
    """
    if text.isascii():
        lowered = text.lower()
        if not any(phrase in lowered for phrase in _EXIT_PHRASES):
            return None
    exits = list(_EXIT.finditer(text))
    return exits[-1] if exits else None


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
    summary = None
    if "=" in text and " in " in text:  # in every pytest summary line: skip the rest unread
        summary = next(
            (m.group(1) for m in map(_PYTEST_SUMMARY.match, text.splitlines()) if m), None
        )
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
    out = [
        _BANNER.sub("", line)  # its value alone: ``===== 3 passed in 0.2s =====``'s rules go
        for line in map(str.strip, tail.splitlines())
        if line
        and len(line) <= _MEASURE_LINE_CHARS
        and line not in errors
        and not _PATHISH.search(line)
        and _MEASURE.search(line)
    ]
    return out[-MAX_MEASUREMENTS:]


_BANNER = re.compile(r"^([=*#~_-])\1{2,}\s*|\s*([=*#~_-])\2{2,}$")


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


# -- identifiers -----------------------------------------------------------------------------

_URL = re.compile(r"https?://[^\s<>\"'`)\]}]+")
# A sha: 7-40 hex digits, not after a word character, "/", ".", "-" or "0x", not before a word
# character or "-". Written with its first digit ahead of the look-behinds (which then look at
# the two characters before it): a pattern that starts with a character class lets the regex
# engine skip ahead to the next hex digit, where leading look-behinds are tried at every
# position (tests/compressors/test_facts_patterns.py: the same matches as the plain form,
# ``(?<![\w/.-])(?<!0x)[0-9a-f]{7,40}(?![\w-])``).
_SHA = re.compile(r"[0-9a-f](?<![\w/.-][0-9a-f])(?<!0x[0-9a-f])[0-9a-f]{6,39}(?![\w-])")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_TICKET = re.compile(r"\b([A-Z][A-Z0-9]{1,9})-(\d{1,6})\b")
_ISSUE = re.compile(r"(?:(?<=\s)|^)#(\d{2,6})\b|\b(?:issue|PR|pull request) #?(\d{1,6})\b", re.I)
_PREFIXED = re.compile(
    r"\b(?:req|run|msg|resp|job|build|deploy|order|user|usr|cus|evt|txn|sess|trace|span|inc)"
    r"[_-](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{4,}\b"
)
# Random-looking ids: snap_XFahxzMuJksC (a prefix and 8+ mixed-case or digit characters), and
# carrier-style codes: JJD503141950010498, 1Z999AA10123456784.
_RANDOM_ID = re.compile(r"\b[a-z]{2,10}_(?=[A-Za-z0-9]*(?:\d|[A-Z]))[A-Za-z0-9]{8,40}\b")
_CODE_ID = re.compile(r"\b(?=[A-Z0-9]*\d)[A-Z0-9]{0,3}[A-Z]{1,5}\d{8,24}\b")
# A version, ``(?<![\w.])v?\d+\.\d+\.\d+(?:[-+][\w.]+)?(?![\w.])`` with its first character
# ahead of the look-behind, as ``_SHA`` (same matches: test_facts_patterns.py).
_VERSION = re.compile(r"(?:v(?<![\w.]v)\d+|\d(?<![\w.]\d)\d*)\.\d+\.\d+(?:[-+][\w.]+)?(?![\w.])")
_GIT_COMMIT = re.compile(r"^\[([\w./-]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
_NOT_TICKETS = {"UTF", "ISO", "SHA", "HTTP", "CP", "TLS", "SSL", "MD", "AES", "GPT", "X"}
# What every match of a pattern holds, found by a search that starts with a literal (a fast
# scan, where the pattern's leading \b makes the regex engine try every position: 40-70 ns per
# character, more than tokenizing the text): a text without it holds no match, and the pattern
# is not run (tests/compressors/test_facts_hints.py: every match of each pattern holds its hint).
_UUID_HINT = re.compile(r"-[0-9a-f]{4}-", re.I)
_TICKET_HINT = re.compile(r"-\d")
_PREFIXED_HINTS = (re.compile(r"_[A-Za-z0-9]*\d"), re.compile(r"-[A-Za-z0-9]*\d"))
_RANDOM_ID_HINT = re.compile(r"_[A-Za-z0-9]{8}")
_CODE_ID_HINT = re.compile(r"[A-Z]\d{8}")
# A sha is 7+ hex digits: searched for as such (a character class the engine skips ahead to),
# where ``_SHA``'s look-behinds make it try every position of the text.
_SHA_HINT = re.compile(r"[0-9a-f]{7}")


def identifiers_in(text: str, *, prose: bool, limit: int = 8) -> list[tuple[str, str]]:
    """``(identifier, kind)`` pairs in ``text``, in order, without duplicates, at most ``limit``.

    Kinds: ``url``, ``commit`` (git's ``[branch sha] message`` lines, with the message),
    ``sha``, ``uuid``, ``ticket``, ``issue``, ``id``, ``version``. Issues and versions are only
    taken from ``prose`` (messages and call arguments), where they are rarely noise.
    """
    # A pattern is only run when ``text`` holds the characters every one of its matches holds
    # (most texts are short and hold few of them: most patterns are skipped unread).
    found: dict[str, str] = {}
    if "] " in text:
        for branch, sha, message in _GIT_COMMIT.findall(text):
            found[sha] = f"commit on {branch}: {code(message, 80)}"
    urls = [url.rstrip(".,;:!?") for url in _URL.findall(text)] if "://" in text else []
    for url in urls:
        found.setdefault(url, "url")
    inside_urls = " ".join(urls)
    dash, underscore = "-" in text, "_" in text
    if dash and _UUID_HINT.search(text):
        for uuid in _UUID.findall(text):
            found.setdefault(uuid, "uuid")
    _add_shas(text, found, inside_urls)
    _add_ids(text, found, dash=dash, underscore=underscore)
    if prose:
        _add_prose_ids(text, found, inside_urls)
    return list(found.items())[:limit]


def _add_shas(text: str, found: dict[str, str], inside_urls: str) -> None:
    """Add the hex shas of ``text`` not inside a URL or a uuid already ``found``."""
    hint = _SHA_HINT.search(text)  # no sha starts before the first 7 hex digits in a row
    shas = _SHA.findall(text, hint.start()) if hint else []
    if not shas:
        return
    # Only shas are added below, so the uuids found stay the same. A sha is [0-9a-f]: it
    # holds a digit and a letter unless it is all digits or all letters.
    uuids = [u for u, kind in found.items() if kind == "uuid"]
    for sha in shas:
        if (
            not sha.isdigit()
            and not sha.isalpha()
            and sha not in inside_urls
            and not any(sha in u for u in uuids)
        ):
            found.setdefault(sha, "sha")


def _add_ids(text: str, found: dict[str, str], *, dash: bool, underscore: bool) -> None:
    """Add the tickets, prefixed ids, random ids and code ids of ``text`` (an id inside one
    already ``found`` is not added again)."""
    if dash and _TICKET_HINT.search(text):
        for prefix, number in _TICKET.findall(text):
            if prefix not in _NOT_TICKETS:
                found.setdefault(f"{prefix}-{number}", "ticket")
    if (underscore and _PREFIXED_HINTS[0].search(text)) or (
        dash and _PREFIXED_HINTS[1].search(text)
    ):
        for match in _PREFIXED.finditer(text):
            found.setdefault(match.group(0), "id")
    if underscore and _RANDOM_ID_HINT.search(text):
        for match in _RANDOM_ID.finditer(text):
            ident = match.group(0)
            if not any(ident in known for known in found):
                found.setdefault(ident, "id")
    # Every code id holds an uppercase letter A-Z: a text whose cased characters are all
    # lowercase (most paths, most prose) holds none.
    for ident in () if text.islower() or not _CODE_ID_HINT.search(text) else _CODE_ID.findall(text):
        if not any(ident in known for known in found):
            found.setdefault(ident, "id")


def _add_prose_ids(text: str, found: dict[str, str], inside_urls: str) -> None:
    """Add the issues and versions of ``text`` (prose only: elsewhere they are noise)."""
    if "#" in text or _may_name_issue(text):
        for hashed, named in _ISSUE.findall(text):
            found.setdefault(f"#{hashed or named}", "issue")
    if text.count(".") > 1:
        for version in _VERSION.findall(text):
            if version not in inside_urls:
                found.setdefault(version, "version")


def _may_name_issue(text: str) -> bool:
    """Whether ``text`` may hold "issue N", "PR N" or "pull request N" (``_ISSUE`` ignores case:
    for ASCII text, where that folds only ASCII letters, its lowered text tells at once)."""
    if not text.isascii():
        return True
    lowered = text.lower()
    return "issue" in lowered or "pr" in lowered or "pull request" in lowered


# -- values ----------------------------------------------------------------------------------

_VALUE = (
    r"(?:-?\d[\d_]*(?:\.\d+)?(?:\s?(?:%|ms|s|sec|seconds|minutes|min|h|hours|KB|MB|GB)\b)?"
    r"|true|false|True|False|none|None|null"
    r"|`[^`\n()]{1,40}`|\"[^\"\n]{1,60}\"|'[^'\n]{1,60}')"
)
_NAME = r"`?([A-Za-z_][\w.-]{1,60}?)`?"
_SET_PHRASE = re.compile(
    r"\b(?:set|change|bump|raise|lower|increase|decrease|reduce|update|cap|limit)\s+"
    rf"(?:the\s+)?{_NAME}\s+(?:from\s+(?P<old>{_VALUE})\s+)?(?:to|at)\s+(?P<new>{_VALUE})"
    r"(?!\w|\.\d)",
    re.IGNORECASE,
)
# "max_retries should be 6", "the timeout is now 45s", "make pool_size 8"
_BE_PHRASE = re.compile(
    rf"\b{_NAME}\s+(?:should|must|needs? to|has to|will)\s+be\s+(?:set\s+to\s+)?(?P<new>{_VALUE})"
    rf"(?!\w|\.\d)|\b{_NAME}\s+is\s+now\s+(?P<now>{_VALUE})(?!\w|\.\d)"
    rf"|\bmake\s+(?:the\s+|it\s+)?{_NAME}(?:\s+[a-z]+)?\s+(?P<make>{_VALUE})(?!\w|\.\d)",
    re.IGNORECASE,
)
# `name = value` / `name: value` ending its clause (so "x: 3 requests" is not a setting).
_ASSIGNMENT = re.compile(
    rf"(?:^|(?<=[\s(,]))`?([A-Za-z_][\w.-]*)`?\s?(?:=|:)\s?({_VALUE})"
    r"(?=\s*$|[,;)]|\.(?:\s|$)|\s\()"
)
# What every ``_ASSIGNMENT`` match holds: its "=" or ":", the optional space (``\s?``), and the
# first character of a ``_VALUE`` (a sign or digit, true/false/none/null in either case, or an
# opening quote or backtick).
_ASSIGNMENT_HINT = re.compile(r"[=:]\s?[-\dtfTFnN`\"']")
_CONFIG_LINE = re.compile(r"^\s*\"?([A-Za-z_][\w.-]*)\"?\s*[=:]\s*(.+?)\s*,?\s*$")
_PY_CONSTANT = re.compile(r"^([A-Z][A-Z0-9_]*)\s*(?::\s*[\w\[\], |]+)?\s*=\s*([^()\n]{1,60})$")
_PY_SETTING = re.compile(
    r"^([a-z_][a-z0-9_]*)\s*(?::\s*[\w\[\], |]+)?\s*=\s*(-?[\d.]+|True|False|None|'[^'\n]{0,40}'|\"[^\"\n]{0,40}\")$"
)
_STOP_NAMES = {"it", "this", "that", "them", "the", "value", "default", "http", "https", "e", "i"}
CONFIG_FILE = re.compile(
    r"(?:\.(?:toml|ini|cfg|conf|env|ya?ml|json|properties)|(?:^|/)(?:settings|config)\.py)$"
)


def _plain_name(name: str) -> bool:
    return name.lower() not in _STOP_NAMES and (
        "_" in name or "." in name or name.isupper() or any(c.isdigit() for c in name)
    )


# The words ``_SET_PHRASE`` opens with, and what ``_BE_PHRASE``'s first form needs besides
# "be" (its modal verbs, as the pattern spells them: "needs? to", "has to").
_SET_VERBS = (
    "set", "change", "bump", "raise", "lower", "increase", "decrease", "reduce", "update",
    "cap", "limit",
)  # fmt: skip
_MODALS = ("should", "must", "need", "has to", "will")


def _may_state_value(lowered: str) -> bool:
    """Whether lowered ASCII text may hold a ``_BE_PHRASE``: "… should/must/… be …", "… is now
    …" or "make …" (every match holds the words of one of its forms)."""
    if "make" in lowered:
        return True
    if "now" in lowered and "is" in lowered:
        return True
    return "be" in lowered and any(m in lowered for m in _MODALS)


def values_in_prose(text: str) -> list[tuple[str, str, str | None]]:
    """``(name, new value, old value or None)`` stated in prose: "set `retries` to 5", "change
    timeout from 10 to 30", "MAX_WORKERS = 8", "`pool_size: 4`". Fenced code is skipped."""
    text = without_fences(text)
    found: list[tuple[int, tuple[str, str, str | None]]] = []  # by position: the last is newest
    # The phrases ignore case: for ASCII text (where that folds only ASCII letters) the lowered
    # text tells whether the words each needs are there ("to"/"at"; "be", "now" or "make").
    lowered = text.lower() if text.isascii() else None
    if lowered is None or (
        ("to" in lowered or "at" in lowered) and any(v in lowered for v in _SET_VERBS)
    ):
        for match in _SET_PHRASE.finditer(text):
            name = match.group(1)
            if name.lower() not in _STOP_NAMES:
                value = (name, match.group("new").strip("`"), _strip(match.group("old")))
                found.append((match.start(), value))
    if lowered is None or _may_state_value(lowered):
        for match in _BE_PHRASE.finditer(text):
            name = match.group(1) or match.group(3) or match.group(5)
            new = match.group("new") or match.group("now") or match.group("make")
            if name and new and name.strip("`").lower() not in _STOP_NAMES:
                found.append((match.start(), (name.strip("`"), new.strip("`"), None)))
    found += _assignments(text)
    return [value for _, value in sorted(found, key=lambda pair: pair[0])]


def _assignments(text: str) -> list[tuple[int, tuple[str, str, str | None]]]:
    """``values_in_prose``'s ``name = value`` / ``name: value`` lines, by position."""
    found: list[tuple[int, tuple[str, str, str | None]]] = []
    if not _ASSIGNMENT_HINT.search(text):
        return found
    offset = 0
    # Each assignment is "=" or ":", at most one space, then a value's first character: a
    # line without them holds none (the pattern is tried at every position of a line).
    for line in text.splitlines(keepends=True):
        if not _ASSIGNMENT_HINT.search(line):
            offset += len(line)
            continue
        for match in _ASSIGNMENT.finditer(line):
            name, new = match.group(1), match.group(2)
            quoted = f"`{name}`" in line
            if (quoted or _plain_name(name)) and not name.startswith(("http", "https")):
                found.append((offset + match.start(), (name, new.strip("`"), None)))
        offset += len(line)
    return found


def _strip(value: str | None) -> str | None:
    return None if value is None else value.strip("`")


def config_values(text: str, path: str, limit: int = 12) -> list[tuple[str, str]]:
    """``(key, value)`` settings in a config file's text: ``key = value``/``key: value`` lines
    (TOML, INI, YAML, .env, JSON), or ``UPPER_CASE = value`` constants in a Python module."""
    found: list[tuple[str, str]] = []
    python = path.endswith(".py")
    for line in text.splitlines():
        if line.lstrip().startswith(("#", "//", ";", "[", "-")):
            continue
        if python:  # module-level settings: UPPER_CASE constants, or any unindented name
            match = _PY_CONSTANT.match(line.strip())
            if match is None and not line[:1].isspace():
                match = _PY_SETTING.match(line.strip())
        else:
            match = _CONFIG_LINE.match(line)
        if not match:
            continue
        value = match.group(2).strip().rstrip(",")
        if len(value) <= 60 and value not in ("{", "[") and "(" not in value:
            found.append((match.group(1), value))
    return found[:limit]


# -- sentences -------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'`(])|\n+")
CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|don't|do not|never|always|only|should|shouldn't|avoid|prefer|make sure"
    r"|ensure|keep|no longer|instead|please|need|needs|required?|requires|has to|have to|without|can't|cannot"
    r"|use|stick to|at most|at least|no more than|not allowed|forbidden|no|not)\b",
    re.IGNORECASE,
)
DECISION = re.compile(
    r"\b(?:decid\w*|chose|choose|going with|go with|decision|instead|because|abandon\w*"
    r"|switch\w* (?:to|back)|won't work|doesn't work|didn't work|does not work|root cause"
    r"|the (?:fix|problem|issue|cause|culprit) (?:is|was)|rather than|giving up on|dropping"
    r"|let's use|we'll use|I'll use|plan is|approach"
    # dead ends: what was tried and undone, ruled out or given up
    r"|reverted|reverting|revert (?:it|that|this|the)|rolled back|roll(?:ing)? back"
    r"|went back to|going back to|fell back|falling back|fall back to|gave up|give up"
    r"|ruled out|rule out|dead end|won't|will not|not going to|no longer|opted|settled on"
    r"|ended up|scrapped|undid|backed out|did not work|didn't help|did not help|tried \w+(?: \w+)*?,? but)\b",
    re.IGNORECASE,
)
NEXT_STEP = re.compile(r"\b(?:next|then I'll|I'll now|remaining|todo|still need|next step)\b", re.I)
TRIVIAL = re.compile(
    r"^(?:ok(?:ay)?|yes|yep|yeah|no|nope|thanks?(?: you)?|thx|continue|go on|go ahead|proceed"
    r"|sure|great|lgtm|done|next|cool|nice|perfect)(?:[ ,]+(?:please|thanks?|thank you))?[.! ]*$",
    re.IGNORECASE,
)


def _lowered(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` (which ignores case) as a case-sensitive pattern of its lowered text."""
    assert re.search(r"\\[A-Z]", pattern.pattern) is None  # lowering \S or \B changes them
    return re.compile(pattern.pattern.lower())


# The phrase patterns ignore case, and their words are ASCII: in ASCII text (where ignoring
# case folds only ASCII letters, and lowering changes no word or space character) their lowered
# forms find a match in the lowered text exactly where they find one, several times faster.
_FOLDED = {pattern: _lowered(pattern) for pattern in (CONSTRAINT, DECISION, NEXT_STEP)}


def says(pattern: re.Pattern[str], text: str) -> bool:
    """Whether ``pattern`` (``CONSTRAINT``, ``DECISION`` or ``NEXT_STEP``) is found in
    ``text``."""
    if text.isascii():
        return _FOLDED[pattern].search(text.lower()) is not None
    return pattern.search(text) is not None


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCED = re.compile(r"```.*?```", re.DOTALL)


_INLINE_CODE = re.compile(r"`([^`\n]{2,80})`")
_DEFINED = re.compile(
    r"^\s*(?:async\s+)?(?:def|class|function|func|fn|interface|struct|enum|type)\s+"
    r"([A-Za-z_]\w{1,60})",
    re.M,
)
_DOTTED_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\(\))")
_CODE_NAME = re.compile(r"^[A-Za-z_][\w.:-]*(?:\(\))?$")
_CODE_PATH = re.compile(r"(?<![\w/.])((?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8})\b")


def code_names(text: str, limit: int = 12) -> list[str]:
    """Code names a person's text gives: `` `spans` `` that hold one name, call or path
    (``Client.request()``, ``max_retries``, ``src/app.py``), functions and classes its fenced
    code defines, dotted calls and file paths in its prose; in order, without duplicates, at most
    ``limit``. A plain word in backticks (`` `pip` ``) is not a code name."""
    found: dict[str, None] = {}
    for span in _INLINE_CODE.findall(text) if "`" in text else ():
        span = span.strip()
        if _CODE_PATH.fullmatch(span) or (
            _CODE_NAME.match(span)
            and (
                any(c in span for c in "._()")
                or (span[:1].islower() and any(c.isupper() for c in span))
            )
        ):
            found.setdefault(span)
    for block in _FENCED.findall(text) if "```" in text else ():
        block_text = block if isinstance(block, str) else " ".join(block)
        for name in _DEFINED.findall(block_text):
            found.setdefault(name)
        for path in _CODE_PATH.findall(block_text):
            found.setdefault(path)
    prose = without_fences(text)
    for name in _DOTTED_CALL.findall(prose) if "()" in prose else ():
        found.setdefault(name)
    for path in _CODE_PATH.findall(prose) if "/" in prose else ():
        found.setdefault(path)
    return list(found)[:limit]


def without_fences(text: str) -> str:
    """``text`` with each fenced code block replaced by a space."""
    return _FENCED.sub(" ", text) if "```" in text else text


def unwrap(text: str) -> str:
    """Hard-wrapped lines joined into paragraphs; list items and blank lines still break."""
    out: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if out and out[-1] and stripped and not _LIST_ITEM.match(line):
            out[-1] += " " + stripped
        else:
            out.append(stripped)
    return "\n".join(out).strip()


def list_item(paragraph: str) -> str | None:
    """The text of a Markdown list item (marker removed), or ``None`` for other paragraphs."""
    return _LIST_ITEM.sub("", paragraph).strip() if _LIST_ITEM.match(paragraph) else None


def paragraphs(text: str) -> list[str]:
    """``text``'s paragraphs with hard wraps joined (list items are paragraphs too)."""
    return [p for p in unwrap(text).splitlines() if p.strip()]


def sentences(text: str) -> list[str]:
    """``text`` split into sentences and list items, fenced code removed, hard wraps joined."""
    text = unwrap(without_fences(text))
    out = []
    for piece in _SENTENCE_END.split(text):
        piece = _LIST_ITEM.sub("", piece).strip().lstrip("#> ").strip()
        if len(piece) >= 8:
            out.append(piece)
    return out


# -- tool output fed back as a user message (ReAct, mini-swe-agent) --------------------------------

_OBSERVATION = re.compile(
    r"^\s*(?:observation\b|<returncode>|<output>|output:|tool (?:output|result)\b|<tool_response>"
    r"|<function_results>|execution result|exit code:|\[command (?:output|finished))",
    re.I,
)


def is_observation(text: str) -> bool:
    """Whether a user-role message is a tool's output fed back as text (ReAct
    ``Observation:``, mini-swe-agent ``<returncode>``/``<output>``), not something a person
    wrote."""
    return bool(_OBSERVATION.match(text))


_WRAPPER = re.compile(
    r"^\s*(?:observation:|output:|tool (?:output|result):|execution result:|exit code:\s*-?\d+)\s*"
    r"|</?(?:returncode|output|tool_response|function_results|stdout|stderr)>",
    re.I | re.M,
)


def observation_body(text: str) -> str:
    """An observation's text without its wrapper (``Observation:``, ``<output>`` tags); a
    ``<returncode>N</returncode>`` becomes ``[exit code: N]`` so the outcome stays readable."""
    text = re.sub(r"<returncode>\s*(-?\d+)\s*</returncode>", r"[exit code: \1]", text)
    return _WRAPPER.sub("", text).strip("\n")
