"""The Python examples in README.md and docs/*.md run as written.

Each ```python block runs in a fresh namespace, in a temporary directory, in file order (a page's
blocks share one namespace so later examples may use earlier names). A block fenced as
```python no-run is shown but not executed (for code that needs a network or an API key).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from compactkit.testing import block_network

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python[ \t]*(?P<flags>[^\n]*)\n(?P<code>.*?)^```", re.M | re.S)


def blocks(page: Path) -> list[str]:
    return [m["code"] for m in BLOCK.finditer(page.read_text()) if "no-run" not in m["flags"]]


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=lambda p: p.name)
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", os.environ.get("OPENAI_API_KEY", "sk-test"))
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    with block_network():
        for number, code in enumerate(blocks(page), 1):
            try:
                exec(compile(code, f"{page.name}[{number}]", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the failure message is the point
                raise AssertionError(f"{page.name} example {number} failed: {exc!r}") from exc
