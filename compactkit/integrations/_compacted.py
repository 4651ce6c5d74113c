"""What ``MessageCompactor`` returns, ``CompactedMessages``, and the options it takes (moved
out of _compactor.py; both public from ``compactkit.integrations.messages``), with the small
records the compactor keeps between and within calls (``Seen``, ``Prepared``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compactkit.errors import ConfigError
from compactkit.governance.projector import ProjectionReport
from compactkit.integrations._seen import SeenList
from compactkit.integrations._wire import MessageFormat
from compactkit.items import Message, Tool
from compactkit.items.snapshot import CompactResult
from compactkit.runtime.events import Event
from compactkit.runtime.governor import Governor

__all__ = ["COMPACTOR_OPTIONS", "CompactedMessages", "Prepared", "Seen", "check_governor"]


@dataclass(frozen=True)
class CompactedMessages:
    """What to send this turn and what to keep, in the format the messages came in."""

    send: list[Any]
    """The prompt: pass it as ``messages=`` (Chat, Anthropic) or ``input=`` (Responses)."""
    history: list[Any]
    """What to keep as the conversation: the very list given while it holds exactly what the
    compactor holds (nothing compacted, or the list extends a ``history`` it returned);
    otherwise the marked summary and the kept messages (as given where unchanged)."""
    report: ProjectionReport
    """What the prompt kept, masked and omitted of the history, and why."""
    format: MessageFormat
    """The format of ``send`` and ``history``."""
    tokens: int
    """Tokens of the whole request (messages, instructions, tool schemas), by the model's
    counter."""
    budget: int
    """The budget the request had to fit."""
    system: Any = None
    """Anthropic only: the ``system=`` to send (the one given, plus the summary when its role
    is ``system``); ``None`` for the other formats."""
    compacted: bool = False
    """Whether this call compacted the history (``history`` is then a new list)."""
    compaction: CompactResult | None = None
    """The compaction that ran on this call, if one did (applied, or failed and reported)."""
    events: tuple[Event, ...] = ()
    """What happened: passthrough warnings, compactions, the projection."""


COMPACTOR_OPTIONS = (
    "budget",
    "trigger",
    "target",
    "compressor",
    "summary_role",
    "registry",
    "compaction",
    "policy",
    "projector",
    "governor",
    "on_event",
    "background",
)
"""The options ``MessageCompactor`` takes beyond ``model``, ``format`` and ``tools``."""


@dataclass
class Seen:
    """A message list the memory was brought up to."""

    messages: SeenList = field(default_factory=SeenList)
    exact: bool = True
    """Whether the memory holds exactly these messages (no compaction folded or changed any
    of them since): then the list itself is the history."""


@dataclass
class Prepared:
    """What a call brings beside the messages, read: instructions, tools, events so far."""

    instructions: list[Message]
    tools: list[Tool]
    events: list[Event] = field(default_factory=list)


def check_governor(governor: object, options: tuple[object, ...], compaction: bool) -> None:
    """Refuse a ``governor=`` given with options it already holds, or one that is not a
    ``Governor`` (``MessageCompactor(governor=...)``).

    Raises:
        ConfigError: any of ``options`` is given, ``compaction`` is off, or ``governor`` is
            not a ``Governor``.
    """
    if any(option is not None for option in options) or not compaction:
        raise ConfigError(
            "governor= is already configured: do not pass budget=, trigger=, target=, "
            "policy=, compressor=, summary_role=, projector=, registry=, background= "
            "or compaction= with it"
        )
    if not isinstance(governor, Governor):
        raise ConfigError(f"governor must be a Governor, got {type(governor).__name__}")
