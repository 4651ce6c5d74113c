"""A shell command's words, as ``shlex.split`` reads them, without its character-by-character
state machine.

Cost model: ``shlex.split`` reads its input one character at a time in Python (about 1 µs per
character); an agent session runs thousands of shell commands, and the digest reads every one
(``_shell_files``). Here a word is one regular-expression match (runs of plain characters,
``\\x`` escapes, ``'…'`` and ``"…"`` spans) and only a word that holds a quote or a backslash is
unquoted piece by piece: about 20x faster on real commands.

The plain version it replaces is ``shlex.split(text)`` (POSIX mode, no comments), with its
``ValueError`` (an unclosed quote, a trailing backslash) as ``None``;
tests/compressors/test_shell_words.py holds them equal on random and real command lines.
"""

from __future__ import annotations

import re

__all__ = ["shell_words"]

# shlex's whitespace (POSIX mode): only these split words (a form feed or a vertical tab, which
# ``str.split`` would split at, is part of a word)
_WHITESPACE = " \t\r\n"
_PLAIN_WORD = re.compile(r"[^ \t\r\n]+")
# A double-quoted span, ``"(?:[^"\\]|\\.)*"`` unrolled (runs of plain characters between its
# escapes: the regex engine reads a run in one step, where the plain form takes one branch per
# character, and no run can be split two ways, so an unclosed quote fails in linear time;
# tests/compressors/test_pattern_rewrites.py: the same spans).
DOUBLE_QUOTED = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_WORD = re.compile(rf"""(?:[^ \t\r\n'"\\]+|\\.|'[^']*'|{DOUBLE_QUOTED})+""", re.S)
_PIECE = re.compile(r"""([^'"\\]+)|\\(.)|'([^']*)'|"([^"\\]*(?:\\.[^"\\]*)*)\"""", re.S)
# Inside double quotes a backslash escapes only a backslash or a double quote (else it stays).
_QUOTED_ESCAPE = re.compile(r'\\([\\"])')


def shell_words(text: str) -> list[str] | None:
    """``shlex.split(text)``, or ``None`` where it raises ``ValueError`` (an unclosed quote, a
    backslash at the end)."""
    if "'" not in text and '"' not in text and "\\" not in text:
        return _PLAIN_WORD.findall(text)
    words: list[str] = []
    position = 0
    for match in _WORD.finditer(text):
        if text[position : match.start()].strip(_WHITESPACE):
            return None  # skipped: a quote never closed, a backslash with nothing after it
        word = match.group()
        words.append(_unquoted(word) if "'" in word or '"' in word or "\\" in word else word)
        position = match.end()
    return None if text[position:].strip(_WHITESPACE) else words


def _unquoted(word: str) -> str:
    """A word without its quotes and escapes (``a'b c'"\\"d"`` → ``ab c"d``)."""
    out: list[str] = []
    for plain, escaped, single, double in _PIECE.findall(word):
        if plain:
            out.append(plain)
        elif escaped:
            out.append(escaped)
        elif double:
            out.append(_QUOTED_ESCAPE.sub(r"\1", double) if "\\" in double else double)
        else:
            out.append(single)  # (or an empty quoted span: nothing)
    return "".join(out)
