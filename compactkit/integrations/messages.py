"""Govern a plain message list, no framework: ``compact_messages`` and ``MessageCompactor``.

For agents that keep the conversation as a list of OpenAI Chat Completions messages, Responses
input items or Anthropic messages (dicts, or the SDK objects as the clients return them)::

    turn = compact_messages(messages, model="gpt-4o", tools=tools)
    reply = client.chat.completions.create(model="gpt-4o", messages=turn.send, tools=tools)
    messages = [*turn.history, reply.choices[0].message]

``send`` is this call's prompt (under the model's budget, every tool call with its output);
``history`` is what to keep (the list given, or the compacted one: the marked summary and the
kept messages). ``MessageCompactor`` is the same as a stateful callable: it remembers the
conversation it governed, so each call on a growing list converts, counts and indexes only the
new messages. Both run the shared governance step (``compactkit.runtime.Governor``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from compactkit.errors import ConfigError
from compactkit.integrations._compactor import (
    COMPACTOR_OPTIONS,
    CompactedMessages,
    MessageCompactor,
)
from compactkit.integrations._wire import MessageFormat

if TYPE_CHECKING:  # the preview loads with its first use (it pulls in the summarizer)
    from compactkit.compressors.preview import CompactionPreview

__all__ = ["CompactedMessages", "MessageCompactor", "MessageFormat", "compact_messages"]


@overload
def compact_messages(
    messages: Sequence[Any],
    *,
    model: str,
    tools: Sequence[Any] | None = None,
    format: MessageFormat | None = None,
    instructions: str | None = None,
    system: Any = None,
    usage: int | None = None,
    dry_run: Literal[False] = False,
    **options: Any,
) -> CompactedMessages: ...


@overload
def compact_messages(
    messages: Sequence[Any],
    *,
    model: str,
    tools: Sequence[Any] | None = None,
    format: MessageFormat | None = None,
    instructions: str | None = None,
    system: Any = None,
    usage: int | None = None,
    dry_run: Literal[True],
    **options: Any,
) -> CompactionPreview: ...


def compact_messages(
    messages: Sequence[Any],
    *,
    model: str,
    tools: Sequence[Any] | None = None,
    format: MessageFormat | None = None,
    instructions: str | None = None,
    system: Any = None,
    usage: int | None = None,
    dry_run: bool = False,
    **options: Any,
) -> CompactedMessages | CompactionPreview:
    """Govern one call's messages: what to send (under budget, pairs intact) and what to keep.

    The stateless form of ``MessageCompactor``: ``options`` are its (``compaction``,
    ``policy``, ``compressor``, ``summary_role``, ``registry``, ``on_event``, …). Called in a
    loop, it costs what the stateful form does: the compactors of the most recent
    conversations (``COMPACTORS_KEPT``) are kept process-wide and one that has read the list
    up to its last message (or the ``history`` it returned) reads only the new messages.

    Example::

        turn = compact_messages(messages, model="gpt-4o", tools=tools)
        reply = client.chat.completions.create(model="gpt-4o", messages=turn.send, tools=tools)
        messages = [*turn.history, reply.choices[0].message]

    With ``dry_run=True`` it returns a ``CompactionPreview`` instead (``Governor.preview``):
    what a compaction of these messages would keep, mask and fold (items numbered from 0 in
    the order read: an assistant message with tool calls is several items), the tokens before
    and after and the summarizer calls it would make. Nothing is sent to a summarizer and
    nothing is kept.
    """
    unknown = [name for name in options if name not in COMPACTOR_OPTIONS]
    if unknown:
        raise ConfigError.unknown_options("compact_messages", unknown, [*COMPACTOR_OPTIONS, *_CALL])
    if dry_run:
        # A compactor of its own, not a kept one: the preview leaves the conversations
        # compact_messages remembers exactly as they were.
        compactor = MessageCompactor(model, format=format, **options)
        return compactor.preview(messages, tools=tools, instructions=instructions, system=system)
    compactor = _COMPACTORS.find(messages, model, format, options)
    return compactor(messages, tools=tools, instructions=instructions, system=system, usage=usage)


COMPACTORS_KEPT = 16
"""How many conversations ``compact_messages`` keeps a compactor for (least recently used
first out); each holds its conversation's items, as a ``MessageCompactor`` does."""


class _Compactors:
    """The compactors of ``compact_messages``' most recent conversations.

    A conversation is found by its list: among the compactors built with the same options, the
    one whose last read message the list holds at the same place, the very object, and which
    starts with the other read messages (``SeenList.starts``: O(1)). Options are
    matched by value when hashable and plain (a model name, a flag), else by identity (a policy,
    a callback), and the entry holds them so that their ids stay theirs.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._entries: list[tuple[tuple[Any, ...], MessageCompactor, tuple[Any, ...]]] = []

    def find(
        self,
        messages: Sequence[Any],
        model: str,
        format: MessageFormat | None,
        options: dict[str, Any],
    ) -> MessageCompactor:
        key = (model, format, *sorted((name, _option_key(v)) for name, v in options.items()))
        with self._lock:
            entries = self._entries
            if messages:
                for position in range(len(entries) - 1, -1, -1):  # the most recent first
                    entry = entries[position]
                    if entry[0] == key and entry[1]._continues(messages):
                        if position != len(entries) - 1:
                            entries.append(entries.pop(position))
                        return entry[1]
        compactor = MessageCompactor(model, format=format, **options)  # raises on a bad option
        with self._lock:
            self._entries.append((key, compactor, tuple(options.values())))
            del self._entries[: -self._size]
        return compactor

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _option_key(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return (type(value).__name__, value)
    return ("id", id(value))


_COMPACTORS = _Compactors(COMPACTORS_KEPT)


_CALL = ("model", "format", "tools", "instructions", "system", "usage")
