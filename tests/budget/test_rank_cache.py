"""The verified rank files are cached on disk after first use; a damaged or unwritable cache
only means the bundled file is read (and checked) again — the counts never change."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TEXT = "def parse(self, text): return self.grammar.match(text)  # Grüße, 東京 🚀"
COUNT = (
    "from compactkit.budget.tokens import get_encoding\n"
    f"print(len(get_encoding('o200k_base').encode_ordinary({TEXT!r})))"
)


def count_in_new_process(cache: str) -> int:
    env = {**os.environ, "COMPACTKIT_CACHE_DIR": cache}
    done = subprocess.run(
        [sys.executable, "-c", COUNT], env=env, capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def test_the_cache_is_written_once_and_read_back_with_the_same_counts(tmp_path: Path) -> None:
    exact = count_in_new_process("off")  # the bundled file, checked against OpenAI's sha256
    folder = tmp_path / "cache"
    assert count_in_new_process(str(folder)) == exact
    (cached,) = folder.iterdir()
    written = cached.read_bytes()
    assert count_in_new_process(str(folder)) == exact  # read from the cache
    assert cached.read_bytes() == written

    damaged = bytearray(written)
    damaged[len(damaged) // 2] ^= 0xFF  # one flipped byte in the ranks
    cached.write_bytes(bytes(damaged))
    assert count_in_new_process(str(folder)) == exact
    assert cached.read_bytes() == written  # rewritten whole

    cached.write_bytes(written[: len(written) // 3])  # cut short (a crash while writing)
    assert count_in_new_process(str(folder)) == exact
    assert cached.read_bytes() == written


def test_a_cache_folder_that_cannot_be_written_is_not_an_error(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert count_in_new_process(str(blocked / "cache")) == count_in_new_process("off")
