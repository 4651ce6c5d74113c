"""A small read-only coding agent: it answers questions about one directory.

Three tools, confined to the directory it is given (paths that leave it are refused, symbolic
links included: a path counts where it leads): ``list_dir``, ``read_file`` and ``search``.
``search`` runs the model's pattern with the ``regex`` engine (installed with tiktoken) under a
time limit, so a catastrophic pattern such as ``(a|aa)+$`` stops the search, not the agent. It runs against any OpenAI-compatible endpoint::

    export OPENAI_API_KEY=...                     # and, for another server:
    export OPENAI_BASE_URL=http://localhost:8000/v1
    python examples/coding_agent.py --root . --model gpt-4o-mini "Where is the projector's budget checked?"

compactkit governs every step: long reading sessions are compacted (mask → digest → window) before
they overflow the model's window, and ``--store DIR`` saves the session after every step so that
``--resume ID`` continues it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TypeAlias

import openai
import regex

from compactkit import Agent, FileSessionStore, RunResult, tool
from compactkit.runtime import FunctionTool

Client: TypeAlias = "openai.OpenAI | openai.AsyncOpenAI"

MAX_READ_LINES = 400
MAX_MATCHES = 50
SEARCH_SECONDS = 2.0
"""Wall-clock budget of one ``search`` call (the regex engine may overrun it a few times over
on one line: it checks its timeout periodically, not on every step)."""
INSTRUCTIONS = (
    "You are a careful, read-only coding assistant. Explore the project with the tools "
    "(list_dir, read_file, search) before answering, cite files and line numbers, and say so "
    "when you could not find something."
)


def make_tools(root: Path) -> list[FunctionTool]:
    """The three read-only tools, confined to ``root``."""
    root = root.resolve()

    def inside(path: str) -> Path:
        target = (root / path).resolve()
        if target != root and root not in target.parents:
            raise PermissionError(f"{path!r} is outside the project directory")
        return target

    @tool(rerun_on_resume=True)
    def list_dir(path: str = ".") -> str:
        """List a directory of the project: sub-directories end with '/'.

        Args:
            path: The directory, relative to the project root.
        """
        directory = inside(path)
        entries = sorted(directory.iterdir(), key=lambda p: (not p.is_dir(), p.name))
        names = [
            f"{p.name}/" if p.is_dir() else p.name for p in entries if not p.name.startswith(".")
        ]
        return "\n".join(names) or "(empty)"

    @tool(rerun_on_resume=True)
    def read_file(path: str, start_line: int = 1, max_lines: int = MAX_READ_LINES) -> str:
        """Read lines of a text file, numbered.

        Args:
            path: The file, relative to the project root.
            start_line: The first line to read (1-based).
            max_lines: How many lines to read at most.
        """
        lines = inside(path).read_text(errors="replace").splitlines()
        start = max(1, start_line)
        chosen = lines[start - 1 : start - 1 + max(1, min(max_lines, MAX_READ_LINES))]
        body = "\n".join(f"{n:>5}  {line}" for n, line in enumerate(chosen, start))
        more = len(lines) - (start - 1 + len(chosen))
        return body + (f"\n… {more} more lines (read on with start_line)" if more > 0 else "")

    @tool(rerun_on_resume=True)
    def search(pattern: str, path: str = ".") -> str:
        """Search the project's text files for a regular expression; returns file:line: text.

        Args:
            pattern: A Python regular expression.
            path: The directory to search, relative to the project root.
        """
        try:
            compiled = regex.compile(pattern)
        except regex.error as exc:
            raise ValueError(f"invalid pattern {pattern!r}: {exc}") from None
        deadline = time.monotonic() + SEARCH_SECONDS
        matches: list[str] = []

        def stopped(why: str) -> str:
            return "\n".join([*matches, f"… search stopped: {why}"])

        for file in sorted(inside(path).rglob("*")):
            relative = file.relative_to(root)
            if not file.is_file() or any(part.startswith(".") for part in relative.parts):
                continue
            resolved = file.resolve()  # a link inside the root may lead out of it
            if resolved != root and root not in resolved.parents:
                continue
            try:
                text = resolved.read_text()
            except (UnicodeDecodeError, OSError):
                continue
            for number, line in enumerate(text.splitlines(), 1):
                remaining = deadline - time.monotonic()
                try:
                    if remaining <= 0:
                        raise TimeoutError
                    found = compiled.search(line, timeout=remaining)
                except TimeoutError:
                    return stopped(f"over {SEARCH_SECONDS:g} s; simplify the pattern")
                if found:
                    matches.append(f"{relative}:{number}: {line.strip()[:200]}")
                    if len(matches) >= MAX_MATCHES:
                        return stopped(f"{MAX_MATCHES} matches")
        return "\n".join(matches) or "no matches"

    return [list_dir, read_file, search]


def build_agent(
    root: Path,
    model: str = "gpt-4o-mini",
    *,
    client: Client | None = None,
    api: Literal["chat", "responses"] = "chat",
    store: Path | None = None,
    max_steps: int = 40,
) -> Agent:
    """The coding agent for ``root``. Without ``client`` it reads ``OPENAI_API_KEY`` and
    ``OPENAI_BASE_URL`` (any OpenAI-compatible server)."""
    return Agent(
        model,
        client,
        tools=make_tools(root),
        instructions=INSTRUCTIONS,
        api=api,
        store=FileSessionStore(store) if store is not None else None,
        max_steps=max_steps,
    )


def report(result: RunResult) -> str:
    """A one-paragraph account of a run: the answer, then what it cost."""
    compacted = sum(1 for c in result.compactions if c.changed)
    return (
        f"{result.output}\n\n-- {len(result.steps)} steps, {len(result.tool_calls)} tool calls, "
        f"{compacted} compactions, {result.usage.prompt_tokens:,} prompt tokens "
        f"({result.usage.cached_tokens:,} cached), session {result.session_id}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--root", type=Path, default=Path("."), help="the project directory")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--api", choices=["chat", "responses"], default="chat")
    parser.add_argument("--store", type=Path, help="save the session here after every step")
    parser.add_argument("--resume", metavar="ID", help="continue a saved session (needs --store)")
    args = parser.parse_args(argv)
    agent = build_agent(args.root, args.model, store=args.store, api=args.api)
    session = agent.resume(args.resume) if args.resume else agent.new_session()
    print(report(session.run(args.question)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
