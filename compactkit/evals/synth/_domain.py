"""What a domain supplies to the plot: its vocabulary, workspace, runs, errors and updates."""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass

from compactkit.evals.synth._styles import Run
from compactkit.items import Tool

__all__ = ["Domain", "Ending", "Update", "insert_after"]


@dataclass(frozen=True)
class Update:
    """A value that changes mid-session: what the user says first, and then."""

    name: str
    aliases: tuple[str, ...]
    old: str
    new: str
    first: str
    """The user message that sets ``old``."""
    change: str
    """The user message that replaces it with ``new``."""
    config: tuple[str, str, str] | None = None
    """``(path, old line, new line)`` when the agent then edits a config file."""


@dataclass(frozen=True)
class Ending:
    """How the session stands when it stops."""

    state: str
    state_phrases: tuple[str, ...]
    next_step: str
    next_phrases: tuple[str, ...]
    final_user: str
    pending: Run | None


class Domain(ABC):
    """Base of the three domains; each method draws from the seeded ``rng`` only."""

    name = ""
    tools: tuple[Tool, ...] = ()
    late_constraints: tuple[str, ...] = ()
    decisions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    dead_ends: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @abstractmethod
    def system(self) -> str:
        """The system prompt."""

    @abstractmethod
    def opening(self, rng: random.Random) -> tuple[str, list[str]]:
        """The goal paragraph and the constraints the first user message states."""

    @abstractmethod
    def workspace(self, rng: random.Random, scale: float) -> dict[str, str]:
        """The files that exist at the start, by path."""

    @abstractmethod
    def new_file(self, rng: random.Random, scale: float) -> tuple[str, str]:
        """A file the agent creates: ``(path, content)``."""

    @abstractmethod
    def failing_run(self, rng: random.Random, path: str) -> tuple[Run, str]:
        """A run that fails after editing ``path``, and its exact error line."""

    @abstractmethod
    def passing_run(self, rng: random.Random, scale: float) -> Run:
        """A run that succeeds."""

    @abstractmethod
    def bulky_run(self, rng: random.Random, lines: int) -> Run:
        """A run with a huge output and no facts in it."""

    @abstractmethod
    def identifier_run(self, rng: random.Random) -> tuple[Run, str, str]:
        """A run whose output carries an identifier: ``(run, identifier, say)``."""

    @abstractmethod
    def recall_run(self, rng: random.Random) -> tuple[Run, str]:
        """A run whose output carries a number worth remembering: ``(run, fact)``."""

    @abstractmethod
    def update(self, rng: random.Random, index: int) -> Update:
        """The ``index``-th value that changes in this session."""

    @abstractmethod
    def ending(self, rng: random.Random, workspace: dict[str, str]) -> Ending:
        """The last turns."""


def insert_after(rng: random.Random, content: str, added: str) -> tuple[str, str]:
    """An edit that inserts ``added`` after a random non-blank line: ``(old, new)``.

    ``old`` is a line that occurs once in ``content``, so the edit is unambiguous.
    """
    lines = content.splitlines()
    unique = [line for line in lines if line.strip() and content.count(line) == 1 and len(line) > 8]
    line = rng.choice(unique) if unique else lines[-1]
    indent = line[: len(line) - len(line.lstrip())] + ("    " if line.endswith(":") else "")
    return line, f"{line}\n{indent}{added}"
