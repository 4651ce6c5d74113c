"""Identifiers in conversation items: URLs, commits, shas, uuids, tickets, issues, ids, versions.

``identifiers_in`` and the patterns (with the cheap hints that decide whether each is run) it
reads text with. They are separate from ``_facts`` because they are one concern of their own —
what names a record, a commit or a release — with many patterns and their tests
(``test_facts_patterns``, ``test_facts_hints``); the error, outcome and measurement readers stay
in ``_facts``.
"""

from __future__ import annotations

import re

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
