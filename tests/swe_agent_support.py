"""An SWE-agent session's pieces for the digest's tests: its task message and observations
(each ending with the shell's status lines), and reading a digest's sections."""

from __future__ import annotations

from collections.abc import Callable

from compactkit.compressors import DigestCompressor
from compactkit.items import Message
from compactkit.items.snapshot import MemorySnapshot

STATUS = "\n(Open file: {open})\n(Current directory: /repo)\nbash-$"
TASK = (
    "We're currently solving the following issue within our repository. Here's the issue "
    "text:\nISSUE:\nTimeDelta serialization loses precision in fields.py\n\n"
    "INSTRUCTIONS:\nYou must not edit the tests.\n" + STATUS.format(open="n/a")
)


def observation(text: str, open_file: str = "n/a") -> str:
    return text + STATUS.format(open=open_file)


FILE = "\n".join(f"{n}:    value_{n} = compute({n})" for n in range(1, 400))
"""A long listing (the digest is applied only when it is smaller than what it folds)."""


def summary_of(*texts: tuple[str, str]) -> str:
    """The digest of the session ``texts`` ((role, text) pairs), its last group kept."""
    items = tuple(Message(role=role, content=text) for role, text in texts)  # type: ignore[arg-type]
    result = DigestCompressor(keep_last_groups=1).compress(MemorySnapshot(items=items))
    assert result.snapshot is not None and result.snapshot.summary is not None
    return result.snapshot.summary


def section(summary: str, title: str) -> str:
    """The lines of the summary's section whose heading starts with ``title`` ("" if none)."""
    parts = summary.split("\n## ")
    return next((p for p in parts if p.startswith(title)), "")


def values_after_a_kept_write(write: Callable[[int], str]) -> str:
    """The summary's values section when the command ``write(30)`` is folded and a later
    ``write(45)`` is kept verbatim (each answered by the shell's status lines)."""
    items = tuple(
        Message(role=role, content=text)  # type: ignore[arg-type]
        for role, text in [
            ("user", TASK),
            ("assistant", write(30)),
            ("user", observation("")),
            ("assistant", f"Here is the module:\n{FILE}\nThe timeout is too short."),
            ("user", "Carry on."),
            ("assistant", write(45)),
            ("user", observation("")),
        ]
    )
    result = DigestCompressor(keep_last_groups=2).compress(MemorySnapshot(items=items))
    assert result.snapshot is not None and result.snapshot.summary is not None
    assert result.snapshot.items[-2].text == write(45)  # the newer write is kept verbatim
    return section(result.snapshot.summary, "Values")
