"""Values stated in conversation items: settings changed in prose and config files' settings.

``values_in_prose`` ("set `retries` to 5", "MAX_WORKERS = 8"), ``config_values`` (a config file's
``key = value`` lines) and ``CONFIG_FILE`` (which paths are config files). They are separate from
``_facts`` because reading a setting's name and value is a concern of its own, with its own
phrases and stop names; fenced code is dropped with ``_facts_prose.without_fences``.
"""

from __future__ import annotations

import re

from compactkit.compressors._anchored import matches_at, occurrences, run_start
from compactkit.compressors._facts_prose import without_fences

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


def _set_phrases(text: str, lowered: str | None) -> list[re.Match[str]]:
    """``_SET_PHRASE.finditer(text)``, tried only where a match can start.

    Every match starts with one of ``_SET_VERBS``; in ASCII text (``lowered``: the text
    lowered, where ignoring case folds only ASCII letters) the pattern is tried only where one
    stands (``_anchored``), instead of at every position
    (tests/compressors/test_anchored_patterns.py: the same matches as ``finditer``).
    """
    if lowered is None:
        return list(_SET_PHRASE.finditer(text))
    return matches_at(_SET_PHRASE, text, occurrences(lowered, _SET_VERBS))


# Where ``_BE_PHRASE``'s first two forms are tried from (in the lowered ASCII text): a modal verb,
# or "is", followed by what every match of its form holds after it, up to the first character of
# a ``_VALUE`` (a sign or digit, true/false/none/null, an opening quote or backtick).
_MODAL_BE = re.compile(
    r"(?:should|must|needs? to|has to|will)(?=\s+be\s+(?:set\s+to\s+)?[-\d`\"'tfn])"
)
_IS_NOW = re.compile(r"is(?=\s+now\s+[-\d`\"'tfn])")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_LONGEST_NAME = 61  # ``_NAME``'s first character and at most 60 more


def _be_phrases(text: str, lowered: str | None) -> list[re.Match[str]]:
    """``_BE_PHRASE.finditer(text)``, tried only where a match can start.

    The pattern opens with ``\b`` and a name, and ignores case: the regex engine tries it at
    every position (a third of the digest's reading of prose). In ASCII text (``lowered``: the
    text lowered, where ignoring case folds only ASCII letters) a match of its "make" form
    starts at a "make"; one of its other two forms ends its name right before the whitespace
    (and a closing backtick) before a modal verb or "is" that what the form needs follows
    (``_MODAL_BE``, ``_IS_NOW``), so it starts in the run of name characters there, at most
    ``_LONGEST_NAME`` back (or at the backtick before it). The pattern is tried at those places
    only (``_anchored``; tests/compressors/test_anchored_patterns.py: the same matches as
    ``finditer``).
    """
    if lowered is None:
        return list(_BE_PHRASE.finditer(text))
    starts = occurrences(lowered, ("make",))
    # (``_MODAL_BE`` tried where one of ``_MODALS`` stands, which each of its matches starts
    # with: the engine would try it at every letter one starts with; ``_IS_NOW`` only where a
    # "now" stands)
    for found in matches_at(_MODAL_BE, lowered, occurrences(lowered, _MODALS)):
        starts += _name_starts(text, found.start())
    for found in _IS_NOW.finditer(lowered) if "now" in lowered else ():
        starts += _name_starts(text, found.start())
    return matches_at(_BE_PHRASE, text, starts)


def _name_starts(text: str, verb: int) -> range | list[int]:
    """Where a ``_NAME`` that whitespace separates from ``verb`` (a position in ``text``) may
    start: in the run of name characters before that whitespace (and a backtick), or at the
    backtick before the run."""
    end = verb
    while end and text[end - 1].isspace():
        end -= 1
    if end == verb:
        return []
    if end and text[end - 1] == "`":
        end -= 1
    start = run_start(text, end, _NAME_CHARS, _LONGEST_NAME)
    first = max(start, end - _LONGEST_NAME)
    if start == first and start and text[start - 1] == "`":
        return [start - 1, *range(first, end - 1)]
    return range(first, end - 1)


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
        for match in _set_phrases(text, lowered):
            name = match.group(1)
            if name.lower() not in _STOP_NAMES:
                value = (name, match.group("new").strip("`"), _strip(match.group("old")))
                found.append((match.start(), value))
    if lowered is None or _may_state_value(lowered):
        for match in _be_phrases(text, lowered):
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
    # line without them holds none.
    for line in text.splitlines(keepends=True):
        for match in _assignments_in(line) if _ASSIGNMENT_HINT.search(line) else ():
            name, new = match.group(1), match.group(2)
            quoted = f"`{name}`" in line
            if (quoted or _plain_name(name)) and not name.startswith(("http", "https")):
                found.append((offset + match.start(), (name, new.strip("`"), None)))
        offset += len(line)
    return found


# Where an ``_ASSIGNMENT_HINT`` starts: the "=" or ":" of every ``_ASSIGNMENT`` match.
_ASSIGNMENT_AT = re.compile(r"[=:](?=\s?[-\dtfTFnN`\"'])")


def _assignments_in(line: str) -> list[re.Match[str]]:
    """``_ASSIGNMENT.finditer(line)``, tried only where a match can start.

    A match starts at the line's start or after a space, "(" or ",", and holds none of them
    up to its "=" or ":" but the one space the pattern allows before it; so it starts right
    after the last of them before that sign (or before the space ahead of it). The pattern is
    tried at those few places, in order, each past the end of the match before (as
    ``finditer`` does), instead of at every place of the line (tests/compressors/
    test_digest_reading_fast_paths.py: the same matches as ``finditer``).
    """
    starts: set[int] = set()
    for sign in _ASSIGNMENT_AT.finditer(line):
        end = sign.start()
        starts.add(_word_start(line, end))
        if end and line[end - 1].isspace():
            starts.add(_word_start(line, end - 1))
    matches: list[re.Match[str]] = []
    done = 0
    for start in sorted(starts):
        if start >= done and (match := _ASSIGNMENT.match(line, start)) is not None:
            matches.append(match)
            done = match.end()
    return matches


def _word_start(line: str, end: int) -> int:
    """Where the run of characters before ``end`` that holds no space, "(" or "," starts."""
    start = end
    while start and not (line[start - 1].isspace() or line[start - 1] in "(,"):
        start -= 1
    return start


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
