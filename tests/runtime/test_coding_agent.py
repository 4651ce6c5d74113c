"""examples/coding_agent.py against a fake OpenAI-compatible server on a loopback port, found
through OPENAI_BASE_URL like any real server, until its reading session compacts twice."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from compactkit import FileSessionStore, chat_to_items, counter_for
from compactkit.budget import budget_for
from compactkit.testing import FakeOpenAI, FakeReply, text, tool_call

ROOT = Path(__file__).resolve().parents[2]
MODEL = "gpt-4"  # 8,192 tokens: reading a dozen files overflows it


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("coding_agent", ROOT / "examples/coding_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["coding_agent"] = module
    spec.loader.exec_module(module)
    return module


def make_project(root: Path, files: int) -> list[str]:
    (root / "pkg").mkdir()
    names = []
    for n in range(files):
        name = f"pkg/module_{n}.py"
        body = "".join(
            f"def function_{n}_{k}(x):\n    return x * {k}  # step {k}\n" for k in range(60)
        )
        (root / name).write_text(f'"""Module {n}."""\n' + body)
        names.append(name)
    (root / "secret.txt").write_text("outside")  # reachable, but the agent stays in pkg/
    return names


class Explorer:
    """A scripted model: list the package, read every module, search, then answer; it checks
    every prompt it is sent (within budget, well-formed, the question kept)."""

    def __init__(self, names: list[str]) -> None:
        self.plan: list[FakeReply] = [
            tool_call("list_dir", {"path": "pkg"}),
            *[tool_call("read_file", {"path": name}) for name in names],
            tool_call("read_file", {"path": "../outside.txt"}),
            tool_call("search", {"pattern": r"def function_3_1\b"}),
            text("function_3_1 is defined in pkg/module_3.py."),
        ]
        self.prompts: list[int] = []

    def __call__(self, body: dict[str, Any]) -> FakeReply:
        items = chat_to_items(body["messages"])
        self.prompts.append(counter_for(MODEL).count(items).tokens)
        calls = {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}
        outputs = {m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"}
        assert calls == outputs, "a call without output (or the reverse) was sent"
        assert any(m.get("content") == "Where is function_3_1?" for m in body["messages"])
        return self.plan.pop(0)


def test_the_coding_agent_runs_against_a_server_and_compacts_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    example = load_example()
    project = tmp_path / "project"
    project.mkdir()
    model = Explorer(make_project(project, 24))
    fake = FakeOpenAI(default=model)
    with fake.serve() as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        agent = example.build_agent(project, MODEL, store=tmp_path / "sessions")
        result = agent.new_session().run("Where is function_3_1?")

    assert result.output == "function_3_1 is defined in pkg/module_3.py."
    applied = [c for c in result.compactions if c.changed]
    assert len(applied) >= 2
    assert max(model.prompts) <= budget_for(MODEL).usable_input
    outputs = {o.call_id: o for step in result.steps for o in step.outputs}
    escaped = [o for o in outputs.values() if "outside the project directory" in o.output]
    assert len(escaped) == 1 and escaped[0].is_error
    found = [o.output for o in outputs.values() if o.name == "search"]
    assert found == ["pkg/module_3.py:4: def function_3_1(x):"]
    print(example.report(result))
    assert "compactions" in capsys.readouterr().out
    saved = FileSessionStore(tmp_path / "sessions").load(result.session_id)
    assert saved.step == len(result.steps) and saved.memory.summary  # saved after every step


def test_the_tools_refuse_paths_outside_the_root(tmp_path: Path) -> None:
    example = load_example()
    make_project(tmp_path, 2)
    tools = {t.name: t for t in example.make_tools(tmp_path / "pkg")}
    with pytest.raises(PermissionError):
        tools["read_file"].function("../secret.txt")
    assert "module_0.py" in tools["list_dir"].function(".")
    assert (
        tools["read_file"]
        .function("module_1.py", start_line=2, max_lines=1)
        .startswith("    2  def function_1_0(x):")
    )


def test_no_tool_follows_a_link_out_of_the_root(tmp_path: Path) -> None:
    example = load_example()
    make_project(tmp_path, 1)
    (tmp_path / "pkg" / "leak.py").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "pkg" / "up").symlink_to(tmp_path, target_is_directory=True)
    tools = {t.name: t for t in example.make_tools(tmp_path / "pkg")}
    assert tools["search"].function("outside") == "no matches"  # secret.txt holds "outside"
    assert "module_0.py" in tools["search"].function("Module 0")  # files inside still found
    for path in ("leak.py", "up/secret.txt"):
        with pytest.raises(PermissionError):
            tools["read_file"].function(path)
    with pytest.raises(PermissionError):
        tools["list_dir"].function("up")


def test_a_catastrophic_pattern_stops_the_search_not_the_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = load_example()
    monkeypatch.setattr(example, "SEARCH_SECONDS", 0.1)
    (tmp_path / "slow.txt").write_text("a" * 40 + "!\n")
    (search,) = [t for t in example.make_tools(tmp_path) if t.name == "search"]
    # A backtracking engine takes ~2**40 steps on this line; the regex engine's timeout ends it.
    assert "search stopped: over 0.1 s" in search.function(r"(a|aa)+$")
    with pytest.raises(ValueError, match="invalid pattern"):
        search.function("(unclosed")
