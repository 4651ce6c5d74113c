"""``compactkit --version`` names the installed version and exits 0."""

from __future__ import annotations

import subprocess
import sys

import compactkit


def test_version_flag_prints_the_version() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "compactkit", "--version"], capture_output=True, text=True
    )
    assert run.returncode == 0
    assert run.stdout.strip() == f"compactkit {compactkit.__version__}"
