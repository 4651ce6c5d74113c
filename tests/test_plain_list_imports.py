"""A fresh process that governs a plain list (``from compactkit.integrations import
compact_messages`` and a first call under the budget, as a CLI hook, a serverless function or a
script runs it) loads only what that call runs: no async machinery, no background compaction,
no digest or window compressor (the ladder loads them when it first climbs), no TOML parser
(the shipped profiles are read back from compactkit's cache), no agent runtime, sessions,
summarizer, evals or SDKs; and it builds no validator for the shipped profiles (they are
constructed, see ``budget._profiles_shipped``). Each name below is one an eager import once
loaded: the test fails when one comes back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

NOT_FOR_A_FIRST_CALL = (
    # async machinery (Governor.astep, BackgroundCompaction load it with their use)
    "asyncio",
    "concurrent.futures",
    "ssl",
    "compactkit.runtime.background",
    "compactkit.runtime._background_parts",
    "compactkit.runtime._jobs",
    # the ladder's later rungs, and the digest's parsers
    "compactkit.compressors.digest",
    "compactkit.compressors.sections",
    "compactkit.compressors.window",
    "compactkit.compressors._trim",
    "compactkit.compressors._facts_prose",
    "compactkit.compressors._verify",
    "compactkit.compressors._facts",  # (masking loads its patterns with the first mask)
    "compactkit.compressors.summary",
    # the TOML parser: the shipped profiles come back from the cache
    "tomllib",
    # what a plain list never runs
    "compactkit.runtime.agent",
    "compactkit.runtime.session",
    "compactkit.runtime._model",
    "compactkit.runtime.tools",
    "compactkit.sessions",
    "compactkit.sql",
    "compactkit.evals",
    "compactkit.checkup",
    "compactkit.cli",
    "sqlalchemy",
    "openai",
    "httpx",
    "tenacity",
    "langchain_core",
    "agents",
    "pydantic_ai",
)

FIRST_CALL = """
import json, sys
from compactkit.integrations import compact_messages
imported = set(sys.modules)
messages = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "List the files."},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "ls", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py b.py"},
    {"role": "assistant", "content": "a.py and b.py."},
]
result = compact_messages(messages, model="gpt-4o")
assert result.send == messages and not result.compacted, result.send
from compactkit.budget.profile import Budget, ModelProfile
print(json.dumps({
    "imported": sorted(imported),
    "called": sorted(sys.modules),
    "built": [c.__name__ for c in (Budget, ModelProfile) if c.__pydantic_complete__],
}))
"""


def first_call(cache: Path) -> dict[str, list[str]]:
    env = {**os.environ, "COMPACTKIT_CACHE_DIR": str(cache)}
    env.pop("COMPACTKIT_PROFILES", None)
    run = subprocess.run(
        [sys.executable, "-c", FIRST_CALL], capture_output=True, text=True, check=True, env=env
    )
    result: dict[str, list[str]] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def loaded(modules: list[str]) -> list[str]:
    return sorted(
        m for m in modules if any(m == p or m.startswith(p + ".") for p in NOT_FOR_A_FIRST_CALL)
    )


def test_a_first_plain_list_call_loads_only_what_it_runs(tmp_path: Path) -> None:
    first_call(tmp_path)  # the first process ever parses the profiles and caches them
    seen = first_call(tmp_path)
    assert "compactkit.runtime.governor" in seen["imported"]
    assert not loaded(seen["imported"]), "importing compact_messages loaded these"
    assert not loaded(seen["called"]), "a first call under the budget loaded these"


def test_a_first_call_builds_no_validator_for_the_shipped_profiles(tmp_path: Path) -> None:
    assert first_call(tmp_path)["built"] == []


def test_a_process_without_the_cache_parses_the_profiles(tmp_path: Path) -> None:
    """The cache is only a shortcut: without it the TOML parser loads and the call is the same."""
    seen = first_call(tmp_path / "fresh")
    assert "tomllib" in seen["called"]
    assert seen["built"] == []
