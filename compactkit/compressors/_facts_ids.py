"""Identifiers in conversation items: URLs, commits, shas, uuids, tickets, issues, ids, versions.

``identifiers_in`` and the patterns (with the cheap hints that decide whether each is run) it
reads text with. They are separate from ``_facts`` because they are one concern of their own —
what names a record, a commit or a release — with many patterns and their tests
(``test_facts_patterns``, ``test_facts_hints``); the error, outcome and measurement readers stay
in ``_facts``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from compactkit.compressors._anchored import case_folded, matches_at, occurrences, run_start
from compactkit.compressors._facts import code

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
_ID_PREFIXES = (
    "req", "run", "msg", "resp", "job", "build", "deploy", "order",
    "user", "usr", "cus", "evt", "txn", "sess", "trace", "span", "inc",
)  # fmt: skip
_PREFIXED = re.compile(rf"\b(?:{'|'.join(_ID_PREFIXES)})[_-](?=[A-Za-z0-9]*\d)[A-Za-z0-9]{{4,}}\b")
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
# A random id's "_" is followed by eight letters or digits, a capital or a digit among them (its
# \b ends the run there, where a digit beyond ASCII would be a word character): snake_case
# names (``test_separability``) hold none.
_RANDOM_ID_HINT = re.compile(r"_(?=[A-Za-z0-9]{8})[a-z]*[A-Z0-9]")
_CODE_ID_HINT = re.compile(r"[A-Z]\d{8}")


def identifiers_in(text: str, *, prose: bool, limit: int = 8) -> list[tuple[str, str]]:
    """``(identifier, kind)`` pairs in ``text``, in order, without duplicates, at most ``limit``.

    Kinds: ``url``, ``commit`` (git's ``[branch sha] message`` lines, with the message),
    ``sha``, ``uuid``, ``ticket``, ``issue``, ``id``, ``version``. Issues and versions are only
    taken from ``prose`` (messages and call arguments), where they are rarely noise.
    """
    # A pattern is only run when ``text`` holds the characters every one of its matches holds
    # (most texts are short and hold few of them: most patterns are skipped unread).
    found: dict[str, str] = {}
    if "] " in text and (text.startswith("[") or "\n[" in text):  # a line that opens with "["
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
    # A text is read for its digits once: where each run of hex digits that starts with a digit
    # lies tells where its shas are, and (ASCII text, where a digit is 0-9) which of the
    # patterns that need a digit can match.
    runs = _digit_runs(text)
    if runs is not None:
        _add_found_shas(runs.shas, found, inside_urls)
    ascii_runs = (runs or _NO_DIGIT) if text.isascii() else None
    _add_ids(text, found, dash=dash, underscore=underscore, runs=ascii_runs)
    if prose:
        _add_prose_ids(text, found, inside_urls, runs=ascii_runs)
    return list(found.items())[:limit]


# A run of hex digits from a digit on (``[0-9][0-9a-f]*``): every match of a pattern that needs a
# digit 0-9 holds one, where the digit is. ``_SHA_RUN``: the runs that can hold a sha or a code
# id, seven or more long or with a hex letter before them (a match after a hex letter may also
# start inside a run shorter than seven: after the "1a" of "1a2", where the reading finds one
# shorter still). It opens with a digit, so the regex engine skips ahead to the next digit.
_SHA_RUN = re.compile(r"[0-9](?:[0-9a-f]{6,}|(?<=[a-f][0-9])[0-9a-f]*)")
_DASH_THEN_DIGIT = re.compile(r"-[0-9]")
_HEX_LETTERS = frozenset("abcdef")
_HEX = frozenset("0123456789abcdef")
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_BEFORE_SHA = _WORD | frozenset("/.-")  # what ``_SHA`` may not follow (ASCII)
_AFTER_SHA = _WORD | frozenset("-")  # what it may not precede
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


class _DigitRuns(NamedTuple):
    """What a text's runs of hex digits from a digit on tell, read in one pass
    (``_digit_runs``)."""

    shas: list[str]
    """``_SHA.findall(text)`` that hold a digit, without repeats."""
    dash_digit: bool
    """Whether a "-" stands before a digit (``_TICKET_HINT``, in ASCII text)."""
    capital_digits: bool
    """Whether eight digits follow a capital (``_CODE_ID_HINT``, in ASCII text)."""


_NO_DIGIT = _DigitRuns([], dash_digit=False, capital_digits=False)
_DIGIT = re.compile(r"[0-9]")


def _digit_runs(text: str) -> _DigitRuns | None:
    """What the runs of hex digits from a digit on of ``text`` tell (``None``: it holds no
    digit 0-9), read in one pass over those that can hold a sha or a code id.

    A ``_SHA`` match is a whole run of 7 to 40 hex digits that follows no word character, "/",
    "." or "-" and precedes no word character or "-" (its look-arounds rule out every shorter
    part of a run); holding a digit, it starts with the hex letters before one of the runs and
    ends where that run ends. A "-" or a capital (not hex digits) before a digit starts a run
    there. (tests/compressors/test_digest_reading_fast_paths.py: the same shas as the pattern,
    in ASCII text and beyond, where a letter or digit of any script is a word character; the
    same hints as their patterns in ASCII text.) Read so instead of by the patterns, whose
    look-behinds make the regex engine try them at every hex digit.

    Only the runs ``_SHA_RUN`` finds are read: most runs are short numbers (line numbers,
    counts), and a run shorter than seven with no hex letter before it is no sha, and no code
    id (eight digits); whether a "-" stands before a digit is one search of its own. In ASCII
    text they are found without the regex engine (``_long_runs``).
    """
    if _DIGIT.search(text) is None:
        return None
    shas, capital_digits = _long_runs(text) if text.isascii() else _lettered_runs(text)
    dash_digit = "-" in text and _DASH_THEN_DIGIT.search(text) is not None
    return _DigitRuns(shas, dash_digit, capital_digits)


def _lettered_runs(text: str) -> tuple[list[str], bool]:
    """``_DigitRuns.shas`` and ``.capital_digits`` of ``text`` (which holds a digit), read from
    the runs ``_SHA_RUN`` finds."""
    shas: dict[str, None] = {}
    capital_digits = False
    size = len(text)
    for run in _SHA_RUN.finditer(text):
        start, end = run.span()
        if start:
            before = text[start - 1]
            if before in _HEX_LETTERS:  # (inside a shorter run, what it reads is too short)
                start -= 1
                while start and text[start - 1] in _HEX_LETTERS:
                    start -= 1
            elif before in _UPPER and end - start >= 8 and text[start : start + 8].isdigit():
                capital_digits = True
        if 7 <= end - start <= 40:
            sha = text[start:end]
            if sha in shas or sha.isdigit():
                continue  # (a sha found before: its place in the order is taken)
            if (start == 0 or not _sha_edge(text[start - 1], _BEFORE_SHA)) and (
                end == size or not _sha_edge(text[end], _AFTER_SHA)
            ):
                shas[sha] = None
    return list(shas), capital_digits


# ASCII text with each hex digit (0-9, a-f) an "x" and every other character a space: where
# seven "x" stand in a row a run of seven or more hex digits starts (a search for seven bytes).
_HEX_MARKS = bytes(ord("x") if chr(c) in _HEX else ord(" ") for c in range(256))
_SEVEN_HEX = b"x" * 7


def _long_runs(text: str) -> tuple[list[str], bool]:
    """``_lettered_runs`` of an ASCII ``text``, read from its whole runs of hex digits (as long
    as they go) of seven or more that hold a digit: those, and only those, are where a sha or a
    code id's eight digits stand (tests/compressors/test_digit_runs_ascii.py: the same as
    ``_lettered_runs``).

    Why: a ``_SHA_RUN`` match runs to the end of its whole run, from the run's first digit (a
    run of seven or more that holds one: after a hex letter, or seven long from it) or later
    (a shorter run, where what it reads is shorter than a sha, or than eight digits); walked
    back over the run's letters before that digit, a sha candidate is the whole run. The runs
    are found by byte searches in the text translated to ``_HEX_MARKS`` (C speed, about 1 ns a
    character), where ``_SHA_RUN``'s class makes the regex engine test every character and try
    the pattern at every digit.
    """
    marks = text.encode("ascii").translate(_HEX_MARKS)
    shas: dict[str, None] = {}
    capital_digits = False
    size = len(text)
    start = marks.find(_SEVEN_HEX)
    while start >= 0:
        end = marks.find(b" ", start + 7)
        end = size if end < 0 else end
        run = text[start:end]
        if not run.isalpha():  # (it holds a digit)
            before = text[start - 1] if start else ""
            if before in _UPPER and end - start >= 8 and run[:8].isdigit():
                capital_digits = True
            if (
                end - start <= 40
                and not run.isdigit()
                and run not in shas
                and before not in _BEFORE_SHA
                and (end == size or text[end] not in _AFTER_SHA)
            ):
                shas[run] = None
        start = marks.find(_SEVEN_HEX, end)
    return list(shas), capital_digits


def _sha_edge(char: str, ascii_edges: frozenset[str]) -> bool:
    """Whether ``char`` next to a run of hex digits keeps it from being a sha: one of
    ``ascii_edges``, or a word character beyond ASCII (a letter or digit of any script, as the
    pattern's word characters are)."""
    return char in ascii_edges or (not char.isascii() and char.isalnum())


def _add_found_shas(shas: list[str], found: dict[str, str], inside_urls: str) -> None:
    """Add ``shas`` (each holding a digit and a letter) not inside a URL or a uuid already
    ``found``."""
    if not shas:
        return
    # Only shas are added below, so the uuids found stay the same.
    uuids = [u for u, kind in found.items() if kind == "uuid"]
    for sha in shas:
        if sha not in inside_urls and not any(sha in u for u in uuids):
            found.setdefault(sha, "sha")


def _add_ids(
    text: str,
    found: dict[str, str],
    *,
    dash: bool,
    underscore: bool,
    runs: _DigitRuns | None = None,
) -> None:
    """Add the tickets, prefixed ids, random ids and code ids of ``text`` (an id inside one
    already ``found`` is not added again; ``runs``: its ``_digit_runs`` when ASCII)."""
    tickets, code_ids = _digit_hints(text, runs, dash=dash)
    if tickets:
        for match in _tickets(text):
            prefix, number = match.groups()
            if prefix not in _NOT_TICKETS:
                found.setdefault(f"{prefix}-{number}", "ticket")
    for match in _prefixed_ids(text):
        found.setdefault(match.group(0), "id")
    if underscore and _RANDOM_ID_HINT.search(text):
        for match in _random_ids(text):
            ident = match.group(0)
            if not any(ident in known for known in found):
                found.setdefault(ident, "id")
    for ident in _CODE_ID.findall(text) if code_ids else ():
        if not any(ident in known for known in found):
            found.setdefault(ident, "id")


# Where the patterns below are tried (``_anchored``): each match starts with a run of these
# characters (its \b before the run: no match starts inside one) right before its "-" or "_".
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_UPPER_OR_DIGIT = _UPPER | frozenset("0123456789")
_DASH_DIGIT = re.compile(r"-\d")
_PREFIX_SET = frozenset(_ID_PREFIXES)
_PREFIX_SIZES = sorted({len(prefix) for prefix in _ID_PREFIXES})


def _prefix_end(separator: str) -> re.Pattern[str]:
    """A ``separator`` right after one of ``_ID_PREFIXES`` and before letters and digits that
    hold a digit: where a ``_PREFIXED`` match's separator stands. It opens with the separator
    (a fast scan) and looks back for a prefix of each size, so the regex engine answers at each
    separator, where the plain hint (``_PREFIXED_HINTS``) stops at every ``x_1`` of a script."""
    behind = "|".join(
        f"(?<=(?:{'|'.join(p for p in _ID_PREFIXES if len(p) == size)}){separator})"
        for size in _PREFIX_SIZES
    )
    return re.compile(rf"{separator}(?:{behind})(?=[A-Za-z0-9]*\d)")


_PREFIX_ENDS = (_prefix_end("_"), _prefix_end("-"))


def _tickets(text: str) -> list[re.Match[str]]:
    """``_TICKET.finditer(text)``: tried at the capitals and digits (2-10) before each "-" that
    a digit follows."""
    return _after_run(text, _TICKET, _DASH_DIGIT, _UPPER_OR_DIGIT, 2, 10)


def _prefixed_ids(text: str) -> list[re.Match[str]]:
    """``_PREFIXED.finditer(text)``: tried at each of ``_ID_PREFIXES`` that stands right before
    a "_" or "-" that letters and digits holding a digit follow (``_PREFIX_ENDS``), in a text
    that holds such a "_" or "-" at all (``_PREFIXED_HINTS``, a fast scan)."""
    starts = []
    for separator, hint, ends in zip("_-", _PREFIXED_HINTS, _PREFIX_ENDS, strict=True):
        if separator in text and hint.search(text):
            for found in ends.finditer(text):
                at = found.start()
                starts += [
                    at - size
                    for size in _PREFIX_SIZES
                    if size <= at and text[at - size : at] in _PREFIX_SET
                ]
    return matches_at(_PREFIXED, text, starts) if starts else []


def _random_ids(text: str) -> list[re.Match[str]]:
    """``_RANDOM_ID.finditer(text)``: tried at the lowercase prefix (2-10 letters) before each
    "_" that eight letters or digits follow, a capital or a digit among them."""
    return _after_run(text, _RANDOM_ID, _RANDOM_ID_HINT, _LOWER, 2, 10)


def _after_run(
    text: str,
    pattern: re.Pattern[str],
    hint: re.Pattern[str],
    run: frozenset[str],
    shortest: int,
    longest: int,
) -> list[re.Match[str]]:
    """``pattern.finditer(text)`` for a pattern that opens with a run of ``shortest`` to
    ``longest`` characters of ``run`` right before what ``hint`` finds: tried only at the
    start of each such run (``matches_at``)."""
    starts = []
    for found in hint.finditer(text):
        at = found.start()
        start = run_start(text, at, run, longest)
        if shortest <= at - start <= longest:
            starts.append(start)
    return matches_at(pattern, text, starts)


def _digit_hints(text: str, runs: _DigitRuns | None, *, dash: bool) -> tuple[bool, bool]:
    """Whether ``text`` holds ``_TICKET_HINT`` (a "-" before a digit) and ``_CODE_ID_HINT``
    (eight digits right after a capital), read from its ``_digit_runs`` when ASCII."""
    if runs is None:
        # Every code id holds an uppercase letter A-Z: a text whose cased characters are all
        # lowercase (most paths, most prose) holds none.
        code_ids = not text.islower() and _CODE_ID_HINT.search(text) is not None
        return dash and _TICKET_HINT.search(text) is not None, code_ids
    return runs.dash_digit, runs.capital_digits


def _add_prose_ids(
    text: str, found: dict[str, str], inside_urls: str, runs: _DigitRuns | None = None
) -> None:
    """Add the issues and versions of ``text`` (prose only: elsewhere they are noise;
    ``runs``: its ``_digit_runs`` when ASCII — both need a digit)."""
    if runs is _NO_DIGIT:
        return
    for number in issue_numbers(text):  # (it lowers the text once, to find where they start)
        found.setdefault(f"#{number}", "issue")
    if text.count(".") > 1:
        for version in _versions(text):
            if version not in inside_urls:
                found.setdefault(version, "version")


def _versions(text: str) -> list[str]:
    """``_VERSION.findall(text)``.

    A version starts at a digit (or a "v" before it) that follows no word character or ".":
    there a run of digits starts, and it ends at the version's first "." before a digit. So it
    is tried only there (``_anchored``; tests/compressors/test_digest_reading_fast_paths.py:
    the same versions as the pattern): at the start of the run of digits before each "." that
    a digit follows, found from the few such dots instead of from every number of a text full
    of them. (A digit is one of any script, as the pattern reads digits: ``str.isdecimal``.)
    """
    starts = []
    for dot in _DOT_DIGIT.finditer(text):
        end = start = dot.start()
        while start and text[start - 1].isdecimal():
            start -= 1
        if start < end:
            starts.append(start)
            if start and text[start - 1] == "v":
                starts.append(start - 1)
    return [m.group(0) for m in matches_at(_VERSION, text, starts)] if starts else []


_DOT_DIGIT = re.compile(r"\.\d")


# Where an ``_ISSUE`` match can start: a "#" before two digits (in the text), or a name followed by
# its space (in the lowered text).
_HASH_NUMBER = re.compile(r"#\d\d")
_ISSUE_NAMES = ("issue ", "pr ", "pull request ")


def issue_numbers(text: str) -> list[str]:
    """The numbers ``_ISSUE.findall(text)`` finds (its one group that matched), in order.

    ``_ISSUE`` ignores case and opens with a look-behind and ``\b``: the regex engine tries it
    at every position of the text (50-60 ns per character). For ASCII text it is tried only
    where a match can start: a "#" before two digits, or one of ``_ISSUE_NAMES`` in the lowered
    text (``_anchored``; tests/compressors/test_anchored_patterns.py: the same numbers as
    ``findall``); so is text beyond ASCII whose lowered text holds them where the text does
    (``case_folded``). A script's comments hold many a "#", rarely before two digits.
    """
    lowered = case_folded(text)
    if lowered is None:  # (ignoring case, a letter beyond ASCII may match an ASCII one)
        return [hashed or named for hashed, named in _ISSUE.findall(text)]
    starts = occurrences(lowered, _ISSUE_NAMES)
    if "#" in text:
        starts += [found.start() for found in _HASH_NUMBER.finditer(text)]
    return [m.group(1) or m.group(2) for m in matches_at(_ISSUE, text, starts)]
