"""CLI tests share one summary key with the library, so a summary a test seals reads back in
``main()`` (and the CLI never writes its key file into the real home directory)."""

from __future__ import annotations

import pytest

from compactkit.items.snapshot import SUMMARY_KEY_ENV


@pytest.fixture(autouse=True)
def _shared_summary_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SUMMARY_KEY_ENV, "cli-tests-summary-key")
