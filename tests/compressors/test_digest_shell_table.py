"""The digest's shell parsing: the command table, quote-aware splitting, and settings changed
through the shell or written inside a text action (what the summary then says)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from compactkit.compressors import SummaryDocument, digest_items
from compactkit.compressors.digest._shell_files import (
    SHELL_COMMANDS,
    shell_file_ops,
    split_commands,
)
from compactkit.items import FunctionCall, FunctionCallOutput, Message


def call(name: str, call_id: str, **args: Any) -> FunctionCall:
    return FunctionCall(call_id=call_id, name=name, arguments=json.dumps(args))


def out(call_id: str, text: str) -> FunctionCallOutput:
    return FunctionCallOutput(call_id=call_id, output=text)


def listed(doc: SummaryDocument, key: str) -> str:
    return "\n".join(doc.entries(key))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("line", "parts"),
    [
        ("sed -i 's|A = 0\\.1|A = 0.05|' conf/settings.py", 1),
        ("echo 'a; b | c' > out.txt && cat out.txt", 2),
        ('grep -n "x|y" src/a.py | head -3; ls', 3),
        ("make build 2>&1 | tail -5 &", 2),
        ("pytest -q & wait", 2),
    ],
)
def test_a_line_splits_at_separators_outside_quotes(line: str, parts: int) -> None:
    assert len(split_commands(line)) == parts


@pytest.mark.parametrize(
    ("command", "path", "modified", "what"),
    [
        ("sed -i 's|old|new|g' src/app.py", "src/app.py", True, "edited (sed -i)"),
        ("sed -n '1,20p' src/app.py", "src/app.py", False, "read (sed)"),
        ("perl -pi -e 's/a/b/' lib/x.pl", "lib/x.pl", True, "edited (perl -i)"),
        ("rm -f build/out.o", "build/out.o", True, "deleted"),
        ("touch docs/new.md", "docs/new.md", True, "created (touch)"),
        ("grep -rn TODO src/main.py", "src/main.py", False, "read (grep)"),
        ("ruff format src/app.py", "src/app.py", True, "reformatted (ruff)"),
        ("git checkout -- src/app.py", "src/app.py", True, "reverted (git checkout)"),
        ("git rm old/file.py", "old/file.py", True, "git rm"),
        ("nohup black src/app.py", "src/app.py", True, "reformatted (black)"),
        ("echo done >> logs/run.log", "logs/run.log", True, "appended (>>)"),
    ],
)
def test_the_table_says_what_a_command_does_to_its_files(
    command: str, path: str, modified: bool, what: str
) -> None:
    ops = [op for op in shell_file_ops(command) if op.path == path]
    assert [(op.modified, op.what) for op in ops] == [(modified, what)]


def test_a_program_the_table_does_not_know_touches_no_file() -> None:
    assert "pytest" not in SHELL_COMMANDS
    assert shell_file_ops("pytest tests/test_app.py") == []
    assert shell_file_ops("ruff check src/app.py") == []  # no --fix: a read-only lint


def test_mv_names_both_ends() -> None:
    ops = {(op.path, op.what) for op in shell_file_ops("git mv src/a.py src/b.py")}
    assert ops == {("src/b.py", "git mv from src/a.py"), ("src/a.py", "moved to src/b.py")}


def test_a_setting_changed_by_sed_with_another_delimiter_supersedes_the_old_value() -> None:
    items = [
        Message(role="user", content="Use a significance level of 0.10."),
        call("bash", "c1", command="cat > analysis/settings.py <<'EOF'\nALPHA = 0.10\nEOF"),
        out("c1", ""),
        call("bash", "c2", command="sed -i 's|ALPHA = 0\\.10|ALPHA = 0.05|' analysis/settings.py"),
        out("c2", ""),
    ]
    doc = digest_items(items)
    assert "`analysis/settings.py`" in listed(doc, "files_modified")
    values = doc.entries("values")
    assert "`ALPHA` = 0.05 (current)" in values
    assert "`ALPHA` = 0.10 (current)" not in values


def test_code_inside_a_react_action_input_is_not_a_stated_value() -> None:
    patch = (
        "Thought: Updating analysis/pool.py.\nAction: bash\nAction Input: apply_patch <<'PATCH'\n"
        "*** Begin Patch\n*** Update File: analysis/pool.py\n@@\n+        reader_filter = 90\n"
        "*** End Patch\nPATCH"
    )
    items = [
        Message(role="user", content="Clean the export."),
        Message(role="assistant", content=patch),
    ]
    doc = digest_items(items)
    assert "reader_filter" not in doc.render()
    assert "`analysis/pool.py`" in listed(doc, "files_modified")
