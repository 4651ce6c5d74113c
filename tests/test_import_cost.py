"""``import compactkit`` loads no optional or heavy dependency: the ``openai`` SDK, SQLAlchemy and
the framework integrations load on first use, so an offline user pays only for the core; and
every public name loads with its module on first use, so counting, projecting and governing a
plain list load only the layers they run on (no agent runtime, sessions, summarizer, evals)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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


NEVER_FOR_COUNTING = (
    "compactkit.runtime",
    "compactkit.compressors",
    "compactkit.sessions",
    "compactkit.evals",
    "compactkit.integrations",
    "compactkit.sql",
    "compactkit.checkup",
    "tenacity",
    "asyncio",
)
# Governing a plain list runs the governance step and the deterministic compressors: never the
# agent loop, sessions, the LLM summary (tenacity, the SDK) or evals.
NEVER_FOR_PLAIN_LISTS = (
    "compactkit.runtime.agent",
    "compactkit.runtime.session",
    "compactkit.runtime._model",
    "compactkit.compressors.summary",
    "compactkit.sessions",
    "compactkit.evals",
    "compactkit.sql",
    "tenacity",
)


def loaded_of(loaded: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_import_compactkit_loads_none_of_its_layers() -> None:
    loaded = imported_modules("import compactkit")
    own_helpers = ("compactkit._lazy", "compactkit._version")  # the top level's, no layer
    layers = sorted(m for m in loaded if m.startswith("compactkit.") and m not in own_helpers)
    assert layers == [], f"import compactkit loaded {layers[:5]}"


def test_counting_loads_no_runtime_compressor_or_sdk() -> None:
    loaded = imported_modules(
        "import compactkit\n"
        "from compactkit import Message, counter_for\n"
        "assert counter_for('gpt-4o').count([Message(role='user', content='hi')]).tokens > 0"
    )
    assert "compactkit.budget.tokens" in loaded
    assert not loaded_of(loaded, NEVER_FOR_COUNTING + HEAVY)


def test_projecting_loads_no_runtime_summarizer_or_sdk() -> None:
    """The projector masks bulky outputs (``compressors.masking``), nothing more of them."""
    loaded = imported_modules(
        "from compactkit import ContextProjector, Message, MemorySnapshot, counter_for\n"
        "snapshot = MemorySnapshot(items=(Message(role='user', content='hi'),))\n"
        "ContextProjector(counter_for('gpt-4o'), budget=1000).project(snapshot)"
    )
    assert "compactkit.governance.projector" in loaded
    never = (
        *(p for p in NEVER_FOR_COUNTING if p != "compactkit.compressors"),
        "compactkit.compressors.ladder",
        "compactkit.compressors.digest",
        "compactkit.compressors.summary",
        "compactkit.compressors.window",
    )
    assert not loaded_of(loaded, never + HEAVY)


def test_the_count_command_loads_no_runtime_compressor_or_sdk(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hello"}]))
    loaded = imported_modules(
        "import sys\n"
        "from compactkit.cli import main\n"
        f"sys.exit(main(['count', {str(path)!r}, '--model', 'gpt-4o']))"
    )
    assert "compactkit.cli.count" in loaded
    heavy = [
        m for m in loaded_of(loaded, NEVER_FOR_COUNTING + HEAVY) if m != "compactkit.compressors"
    ]
    assert not heavy  # the compressors package itself is an empty shell: its names are lazy


def test_governing_a_plain_list_loads_no_agent_runtime_or_summarizer() -> None:
    loaded = imported_modules(
        "from compactkit.integrations import compact_messages\n"
        "compact_messages([{'role': 'user', 'content': 'hi'}], model='gpt-4o')"
    )
    assert "compactkit.runtime.governor" in loaded
    assert not loaded_of(loaded, NEVER_FOR_PLAIN_LISTS + HEAVY)


def test_every_public_name_loads_on_first_use() -> None:
    code = (
        "import compactkit\n"
        "missing = [n for n in compactkit.__all__ if getattr(compactkit, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert set(compactkit.__all__) <= set(dir(compactkit))\n"
        "from compactkit import Agent, SQLMemory, Message  # from-imports of lazy names\n"
        "from compactkit.runtime import Governor\n"
        "from compactkit.compressors import LadderCompressor"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_the_sdk_loads_when_a_summarizer_is_used() -> None:
    loaded = imported_modules(
        "import compactkit\n"
        "llm = compactkit.OpenAIChatLLM('gpt-4o-mini', api_key='sk-test')\n"
        "llm._sync_client()"
    )
    assert "openai" in loaded
