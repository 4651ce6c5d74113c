"""The bundled model profiles' parsed tables are cached on disk after first use, like the rank
files: a process that finds them reads the same profiles, and a damaged, foreign or unwritable
cache only means profiles.toml is parsed again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROFILES = (
    "import json\n"
    "from compactkit.budget.profiles import default_registry, budget_for\n"
    "registry = default_registry()\n"
    "print(json.dumps([budget_for(m).model_dump(mode='json') for m in "
    "('gpt-4o', 'gpt-4.1', 'claude-sonnet-4-5', 'gemini-2.5-pro', 'o3')], sort_keys=True))"
)


def profiles_in_new_process(cache: str) -> str:
    env = {**os.environ, "COMPACTKIT_CACHE_DIR": cache}
    done = subprocess.run(
        [sys.executable, "-c", PROFILES], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_the_tables_are_cached_once_and_read_back_as_the_same_profiles(tmp_path: Path) -> None:
    parsed = profiles_in_new_process("off")
    folder = tmp_path / "cache"
    assert profiles_in_new_process(str(folder)) == parsed
    (cached,) = folder.glob("profiles-*.tables")
    written = cached.read_bytes()
    assert profiles_in_new_process(str(folder)) == parsed  # read from the cache
    assert cached.read_bytes() == written

    # A changed value that still loads (a model name): never used, and rewritten.
    assert b"gpt-4o" in written
    cached.write_bytes(written.replace(b"gpt-4o", b"gpt-4x"))
    assert profiles_in_new_process(str(folder)) == parsed
    assert cached.read_bytes() == written

    cached.write_bytes(written[: len(written) // 3])  # cut short (a crash while writing)
    assert profiles_in_new_process(str(folder)) == parsed
    assert cached.read_bytes() == written


def test_a_profiles_cache_folder_that_cannot_be_written_is_not_an_error(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert profiles_in_new_process(str(blocked / "cache")) == profiles_in_new_process("off")
