"""The security tests share one summary key with the CLI they run in-process, so the CLI never
writes its key file into the real home directory (tests that need the file set their own)."""

from __future__ import annotations

import pytest

from compactkit.items.snapshot import SUMMARY_KEY_ENV


@pytest.fixture(autouse=True)
def _shared_summary_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SUMMARY_KEY_ENV, "security-tests-summary-key")
