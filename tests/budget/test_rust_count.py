"""Counting with bpe-openai's Rust tokenizer gives tiktoken's counts, text for text; a process
can ask for tiktoken instead; a tokenizer that answers a probe differently is never used."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget import TiktokenCounter
from compactkit.budget._encodings import (
    _PROBE_COUNTS,
    _PROBE_TEXTS,
    TOKENIZER_ENV,
    get_encoding,
    rust_count,
)

ENCODINGS = ("o200k_base", "cl100k_base")
# Pieces where tokenizers differ when their pre-tokenization differs: contractions in any
# case, digit runs, whitespace before and after line breaks, special-token strings, scripts
# without spaces, combining marks, emoji with modifiers, lone surrogates.
TRICKY = st.sampled_from(
    [
        "'s", "'S", "'ll", "'LL", "'Re", " 1", "12345678", "  ", "\n\n", " \n", "\r\n", "\t",
        "<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>", "aB", "Ab", "\u0391\u0392\u03b3", "日本語",
        "한국어", "ไทย", "العربية", "e\u0301", "😀", "👍🏽", "\u200b", "\ufeff", "\x00",
        "\ud800", "\udfff", "/", "//", "..", "x_y", "$(", "```",
    ]
)  # fmt: skip
TEXTS = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=200),  # surrogates included
    st.lists(st.one_of(TRICKY, st.text(max_size=6)), max_size=30).map("".join),
)


@pytest.fixture(scope="module", params=ENCODINGS)
def pair(request: pytest.FixtureRequest) -> tuple[object, object]:
    rust = rust_count(request.param)
    assert rust is not None, "bpe-openai's tokenizer is a dependency: it must load here"
    return rust, get_encoding(request.param).encode_ordinary


@settings(max_examples=1500, deadline=None)
@given(text=TEXTS)
def test_every_text_counts_as_tiktoken_counts_it(pair: tuple[object, object], text: str) -> None:
    rust, encode = pair
    assert rust(text) == len(encode(text))  # type: ignore[operator, arg-type]


@pytest.mark.parametrize("name", ENCODINGS)
def test_long_runs_and_whole_files_count_the_same(name: str) -> None:
    rust = rust_count(name)
    assert rust is not None
    encode = get_encoding(name).encode_ordinary
    texts = [char * 20_000 for char in ("a", " ", "1", "\n", "日", "😀", "ab ", ". ")]
    texts.append(Path(__file__).read_text(encoding="utf-8") * 3)
    for text in texts:
        assert rust(text) == len(encode(text))


@pytest.mark.parametrize("name", ENCODINGS)
def test_the_probes_are_tiktoken_s_counts(name: str) -> None:
    """The constants the loaded tokenizer is checked against cannot drift from tiktoken."""
    encode = get_encoding(name).encode_ordinary
    assert tuple(len(encode(text)) for text in _PROBE_TEXTS) == _PROBE_COUNTS[name]


def test_an_encoding_without_probes_is_never_counted_by_the_rust_tokenizer() -> None:
    # bpe-openai knows voyage3_base, compactkit has no tiktoken counts to check it against
    assert rust_count("voyage3_base") is None
    assert rust_count("no-such-encoding") is None


def test_a_count_in_another_thread_than_the_load_is_the_same() -> None:
    rust = rust_count("o200k_base")
    assert rust is not None
    text = "A worker thread counts what the event loop's thread loaded. " * 50
    results: list[int] = []
    worker = threading.Thread(target=lambda: results.append(rust(text)))
    worker.start()
    worker.join()
    assert results == [len(get_encoding("o200k_base").encode_ordinary(text))]


def _fresh(code: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


COUNT_AND_SAY_WHO = (
    "import sys\n"
    "from compactkit.budget import TiktokenCounter\n"
    "print(TiktokenCounter().count_text({text!r}), 'bpe_openai._bindings' in sys.modules)"
)


def test_a_process_can_count_with_tiktoken_and_gets_the_same_counts() -> None:
    text = "Grüße aus 東京 🚀 — it's 12345 tokens'LL\r\n  x"
    expected = TiktokenCounter().count_text(text)
    assert _fresh(COUNT_AND_SAY_WHO.format(text=text)) == f"{expected} True"
    forced = _fresh(COUNT_AND_SAY_WHO.format(text=text), **{TOKENIZER_ENV: "tiktoken"})
    assert forced == f"{expected} False"


def test_the_package_still_imports_after_its_tokenizer_was_loaded_alone() -> None:
    """An extension module initialises once per process: ``import bpe_openai`` afterwards
    must reuse the module compactkit loaded, not fail."""
    code = (
        "from compactkit.budget import TiktokenCounter\n"
        "n = TiktokenCounter().count_text('hello world')\n"
        "import bpe_openai\n"
        "print(n, len(bpe_openai.get_encoding('o200k_base').encode('hello world')))"
    )
    assert _fresh(code) == "2 2"
