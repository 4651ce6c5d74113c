"""``scripts/identity.py``: the hash a speed change is checked against must itself be stable.

Two fresh processes governing the same session must print the same hashes (a summary's random
signature is the only per-process difference, and it is blanked), and the stateless call must
send, keep and count exactly what the stateful one does, compactions included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run() -> dict[str, tuple[str, int]]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "identity.py"), "synthetic", "--size", "1200"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    lines = [line.split() for line in done.stdout.splitlines()]
    return {mode: (found, int(compactions)) for _, mode, found, _, compactions, *_ in lines}


def test_two_processes_print_the_same_hashes_and_stateless_equals_stateful() -> None:
    first, second = _run(), _run()
    assert first == second
    assert first["stateful"] == first["stateless"]
    assert first["stateful"][1] > 0  # the session compacted: the summary is in the hash
