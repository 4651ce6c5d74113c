"""``import compactkit`` loads no optional or heavy dependency: the ``openai`` SDK, SQLAlchemy and
the framework integrations load on first use, so an offline user pays only for the core."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("openai", "sqlalchemy", "psycopg", "langchain", "langchain_core", "agents", "pydantic_ai")


def imported_modules(code: str) -> set[str]:
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if "|" in line}


def test_import_compactkit_loads_no_heavy_dependency() -> None:
    loaded = imported_modules("import compactkit")
    assert "compactkit" in loaded
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert not heavy, f"import compactkit loaded {heavy[:5]}"


def test_the_sdk_loads_when_a_summarizer_is_used() -> None:
    loaded = imported_modules(
        "import compactkit\n"
        "llm = compactkit.OpenAIChatLLM('gpt-4o-mini', api_key='sk-test')\n"
        "llm._sync_client()"
    )
    assert "openai" in loaded
