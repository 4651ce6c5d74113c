"""A shell command's words are read as ``shlex.split`` reads them (``_shell_words``), on random
command lines and on real ones, and a simple command's files are the same read once or again
(``_part_ops`` is remembered per command)."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors.digest import _shell_files as shell_files
from compactkit.compressors.digest._shell_words import shell_words

PROPERTY = settings(deadline=None, max_examples=1500)


def _plain(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:
        return None


_QUOTING = ["'", '"', "\\", "\\\\", "''", '""', "\\'", '\\"']
_SPACES = [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\u00a0", "\u2028"]
_pieces = st.sampled_from(
    ["a", "b", *_QUOTING, *_SPACES, "#", "é", "$x", ">", ">>", "|", ";", "&&", "2>&1"]
)


@PROPERTY
@given(st.lists(_pieces, max_size=24).map("".join))
def test_words_are_shlex_words(text: str) -> None:
    assert shell_words(text) == _plain(text)


@PROPERTY
@given(st.text(max_size=40))
def test_words_of_any_text_are_shlex_words(text: str) -> None:
    assert shell_words(text) == _plain(text)


REAL = [
    "cd /testbed",
    'find . -type f -name "*.py" | grep -i separable | head -20',
    "cd /testbed && python3 -c \"\nfrom astropy.modeling import models as m\nprint('x')\n\"",
    "sed -i 's/return x$/return y/' astropy/modeling/separable.py",
    'grep -n "_cstack" -A 30 astropy/modeling/separable.py',
    "cat > test_fix.py << 'EOF'",
    "echo 'unclosed",
    'echo "a \\"quoted\\" word" \\$HOME trailing\\',
    "python -c 'import sys; print(sys.argv)' \"it's\" ''",
    "FOO=1 sudo sed -i.bak -e 's|a|b|' ./x.cfg 2>/dev/null",
    'perl -pi -e "s/\\\\bfoo\\\\b/bar/g" src/*.py',
]


@pytest.mark.parametrize("command", REAL)
def test_real_command_words_are_shlex_words(command: str) -> None:
    assert shell_words(command) == _plain(command)


@pytest.mark.parametrize("command", REAL)
def test_a_command_read_again_touches_the_same_files(command: str) -> None:
    shell_files._part_ops.cache_clear()
    first = shell_files._part_ops(command)
    assert first == tuple(shell_files._simple_ops(command))
    assert shell_files._part_ops(command) == first
    assert shell_files.shell_file_ops(command) == shell_files.shell_file_ops(command)


def test_an_unclosed_quote_falls_back_to_whitespace_words() -> None:
    assert shell_files._command_tokens("cat 'a b") == ["cat", "'a", "b"]
    assert shell_files._command_tokens("sudo cat 'a b' c") == ["cat", "a b", "c"]
