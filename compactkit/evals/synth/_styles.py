"""Agent styles: how one abstract action looks in the transcript of a real kind of agent.

* ``typed`` — many typed tools (``read_file``, ``edit_file``, ``run_tests``, domain tools), the
  OpenAI function-calling style; independent calls go out in parallel.
* ``bash`` — one ``bash`` tool; files are read with ``cat``/``sed -n``, written with heredocs, and
  edited with ``sed -i``, ``apply_patch`` or a ``python - <<EOF`` script (mini-swe-agent style).
* ``editor`` — a ``str_replace_editor`` tool (view / create / str_replace) plus ``bash``
  (SWE-agent / Anthropic computer-use style).
* ``react`` — no tools at all: ``Thought:`` / ``Action:`` / ``Action Input:`` text from the
  assistant, ``Observation:`` text back as a user message.
"""

from __future__ import annotations

import json
import random
import shlex
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from compactkit.items import Tool

__all__ = [
    "STYLES",
    "Create",
    "Delete",
    "Edit",
    "Read",
    "Run",
    "Action",
    "StyleName",
    "render",
    "style_tools",
]

StyleName: TypeAlias = Literal["typed", "bash", "editor", "react"]
STYLES: tuple[StyleName, ...] = ("typed", "bash", "editor", "react")


@dataclass(frozen=True)
class Read:
    """Look at a file."""

    path: str
    content: str


@dataclass(frozen=True)
class Create:
    """Write a new file."""

    path: str
    content: str


@dataclass(frozen=True)
class Edit:
    """Replace ``old`` with ``new`` in a file (``old`` occurs once)."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Delete:
    """Remove a file."""

    path: str


@dataclass(frozen=True)
class Run:
    """Run a command; ``typed`` is the same action as a typed tool call, when there is one."""

    command: str
    output: str
    typed: tuple[str, dict[str, Any]] | None = None
    failed: bool = False


Action: TypeAlias = Read | Create | Edit | Delete | Run


def _schema(**props: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
        "required": list(props)[:1],
    }


_BASH = Tool(
    name="bash",
    description="Run a bash command in the workspace and return its combined output.",
    parameters=_schema(command="The command line to run"),
)
_TYPED = (
    Tool(name="read_file", description="Read a text file.", parameters=_schema(path="File path")),
    Tool(
        name="write_file",
        description="Create or overwrite a file.",
        parameters=_schema(path="File path", content="The complete new content"),
    ),
    Tool(
        name="edit_file",
        description="Replace one exact occurrence of old_str with new_str.",
        parameters=_schema(path="File path", old_str="Text to replace", new_str="Replacement"),
    ),
    Tool(name="delete_file", description="Delete a file.", parameters=_schema(path="File path")),
    Tool(
        name="run_command",
        description="Run a shell command and return its output.",
        parameters=_schema(command="The command line"),
    ),
)
_EDITOR = Tool(
    name="str_replace_editor",
    description="View, create and edit files. Commands: view, create, str_replace.",
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": ["view", "create", "str_replace"]},
            "path": {"type": "string"},
            "file_text": {"type": "string"},
            "old_str": {"type": "string"},
            "new_str": {"type": "string"},
        },
        "required": ["command", "path"],
    },
)


def style_tools(style: StyleName, domain_tools: tuple[Tool, ...]) -> list[Tool]:
    """The tool schemas a style offers the model (none for ReAct)."""
    if style == "typed":
        return [*_TYPED, *domain_tools]
    if style == "bash":
        return [_BASH]
    if style == "editor":
        return [_EDITOR, _BASH]
    return []


def _numbered(content: str) -> str:
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(content.splitlines(), 1))


def _heredoc(path: str, content: str, rng: random.Random) -> str:
    marker = rng.choice(("EOF", "PY", "END"))
    if rng.random() < 0.7:
        return f"cat > {shlex.quote(path)} <<'{marker}'\n{content.rstrip()}\n{marker}"
    return f"mkdir -p $(dirname {shlex.quote(path)}) && tee {shlex.quote(path)} >/dev/null <<'{marker}'\n{content.rstrip()}\n{marker}"


def _shell_edit(action: Edit, rng: random.Random) -> str:
    one_line = "\n" not in action.old and "\n" not in action.new
    roll = rng.random()
    if (
        one_line
        and "|" not in action.old + action.new
        and "'" not in action.old + action.new
        and roll < 0.45
    ):
        old = (
            action.old.replace("\\", "\\\\")
            .replace(".", "\\.")
            .replace("[", "\\[")
            .replace("*", "\\*")
        )
        new = action.new.replace("\\", "\\\\").replace("&", "\\&")
        return f"sed -i 's|{old}|{new}|' {shlex.quote(action.path)}"
    if roll < 0.75:
        minus = "\n".join(f"-{line}" for line in action.old.splitlines())
        plus = "\n".join(f"+{line}" for line in action.new.splitlines())
        return (
            "apply_patch <<'PATCH'\n*** Begin Patch\n"
            f"*** Update File: {action.path}\n@@\n{minus}\n{plus}\n*** End Patch\nPATCH"
        )
    return (
        "python - <<'PY'\nfrom pathlib import Path\n"
        f"p = Path({action.path!r})\ns = p.read_text()\n"
        f"s = s.replace({action.old!r}, {action.new!r}, 1)\np.write_text(s)\nPY"
    )


def _shell(action: Action, rng: random.Random) -> tuple[str, str]:
    """The action as one shell command, and what the shell prints."""
    if isinstance(action, Read):
        if rng.random() < 0.75 or action.content.count("\n") < 40:
            return f"cat {shlex.quote(action.path)}", action.content
        lines = action.content.splitlines()
        end = min(len(lines), rng.randint(40, 120))
        return f"sed -n '1,{end}p' {shlex.quote(action.path)}", "\n".join(lines[:end])
    if isinstance(action, Create):
        return _heredoc(action.path, action.content, rng), ""
    if isinstance(action, Edit):
        command = _shell_edit(action, rng)
        done = "Done!" if command.startswith("apply_patch") else ""
        return command, done
    if isinstance(action, Delete):
        return f"rm {shlex.quote(action.path)}", ""
    return action.command, action.output


def render(style: StyleName, action: Action, rng: random.Random) -> tuple[str, dict[str, Any], str]:
    """The action as a tool call in ``style``: ``(tool name, arguments, output)``.

    For ``react`` the name is ``"bash"`` and the arguments hold the command; the builder writes
    it as text.
    """
    if style == "typed":
        if isinstance(action, Read):
            return "read_file", {"path": action.path}, action.content
        if isinstance(action, Create):
            size = len(action.content.encode())
            return (
                "write_file",
                {"path": action.path, "content": action.content},
                f"Wrote {size} bytes to {action.path}",
            )
        if isinstance(action, Edit):
            return (
                "edit_file",
                {"path": action.path, "old_str": action.old, "new_str": action.new},
                f"Edited {action.path}: 1 replacement",
            )
        if isinstance(action, Delete):
            return "delete_file", {"path": action.path}, f"Deleted {action.path}"
        if action.typed is not None:
            return action.typed[0], dict(action.typed[1]), action.output
        return "run_command", {"command": action.command}, action.output
    if style == "editor" and not isinstance(action, (Run, Delete)):
        if isinstance(action, Read):
            args = {"command": "view", "path": action.path}
            out = f"Here's the result of running `cat -n` on {action.path}:\n{_numbered(action.content)}"
            return "str_replace_editor", args, out
        if isinstance(action, Create):
            args = {"command": "create", "path": action.path, "file_text": action.content}
            return "str_replace_editor", args, f"File created successfully at: {action.path}"
        args = {
            "command": "str_replace",
            "path": action.path,
            "old_str": action.old,
            "new_str": action.new,
        }
        snippet = _numbered(action.new)
        out = f"The file {action.path} has been edited. Here's the result of running `cat -n` on a snippet of {action.path}:\n{snippet}\nReview the changes and make sure they are as expected."
        return "str_replace_editor", args, out
    command, output = _shell(action, rng)
    return "bash", {"command": command}, output


def arguments_json(arguments: dict[str, Any]) -> str:
    """Arguments as the model writes them (compact JSON, non-ASCII kept)."""
    return json.dumps(arguments, ensure_ascii=False)
