"""Progress of long commands on stderr: a rich bar when stderr is a terminal, else nothing.

stdout stays the command's output (JSON, messages), so a pipe or ``--json`` reader never sees
the bar; ``--quiet`` turns it off on a terminal too. ``TTY_COMPATIBLE=1`` (rich's switch) shows
it where stderr is not a terminal (a CI log that renders control codes), ``TTY_COMPATIBLE=0``
hides it on one. Without rich installed the bar is one line rewritten in place.
"""

from __future__ import annotations

import argparse
import os
import sys
from types import TracebackType
from typing import Any


def _add_quiet_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="no progress on stderr (default: shown when stderr is a terminal)",
    )


def _stderr_is_terminal() -> bool:
    forced = os.environ.get("TTY_COMPATIBLE", "")
    if forced in ("0", "1"):
        return forced == "1"
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr: no terminal
        return False


class Progress:
    """``with Progress("summary", quiet=args.quiet) as p: p.update(done, total, "chunk 2")``.

    Shown only when ``quiet`` is false and stderr is a terminal; the bar is erased when the
    block ends, so a finished command leaves stderr as it would be without it.
    """

    def __init__(self, label: str, *, quiet: bool = False) -> None:
        self.label = label
        self.shown = not quiet and _stderr_is_terminal()
        self._bar: Any = None
        self._task: Any = None
        self._plain = False
        self._started = False

    def __enter__(self) -> Progress:
        return self

    def _start(self) -> None:
        """Open the bar on the first update: a step that never reports (a ladder whose cheap
        rungs suffice never summarizes) shows no empty "0/?" bar."""
        self._started = True
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
        except ImportError:  # rich is optional (the evals extra): a plain line instead
            self._plain = True
            return
        self._bar = Progress(
            TextColumn(self.label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True, force_terminal=True),
            transient=True,
            redirect_stdout=False,  # stdout is the command's output, written after the bar
        )
        self._task = self._bar.add_task("", total=None)
        self._bar.start()

    def update(self, done: int, total: int, description: str = "") -> None:
        """``done`` of ``total`` steps finished; ``description`` says what runs now."""
        if self.shown and not self._started:
            self._start()
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total, description=description)
            self._bar.refresh()
        elif self._plain:
            sys.stderr.write(f"\r{self.label} {done}/{total} {description}".rstrip() + "\x1b[K")
            sys.stderr.flush()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif self._plain:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
