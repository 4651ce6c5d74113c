"""A plain function as a compressor: ``messages -> messages`` or ``snapshot -> snapshot``.

``FunctionCompressor(fn)`` makes any such function a ``MemoryCompressor``, and every place that
takes a compressor (``Governor``, ``Agent``, ``compact_messages``, ``MessageCompactor``, the
framework integrations, memories, the evals) wraps a bare function in one by itself
(``as_memory_compressor``). A messages function receives the rendered history as Chat Completions
message dicts (the summary as its marked message after the instructions) and returns the
messages to keep, as dicts or LangChain messages; a snapshot function receives the
``MemorySnapshot`` and returns one.

What the function returns is held to the memory's rules before anything is applied: a message
returned unchanged keeps its stored identity (``seq``, pin), new ones are new items; every pinned
item is kept; no tool output is left without its call, and no call loses the output it had; the
summary is kept unless the function returns a new one. Anything else is a ``ConfigError`` naming
what was wrong. An exception raised by the function itself is a run-time failure: the result's
``outcome`` is ``"failed"`` and nothing is lost.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias

from compactkit.compressors.base import MemoryCompressor
from compactkit.errors import ConfigError
from compactkit.formats import chat_to_items, describe, items_to_chat
from compactkit.items import FunctionCall, FunctionCallOutput, Item
from compactkit.items.snapshot import CompactResult, CompactStats, MemorySnapshot

__all__ = ["FunctionCompressor", "Takes", "as_memory_compressor"]

Takes: TypeAlias = Literal["messages", "snapshot"]
"""What a ``FunctionCompressor``'s function takes and returns."""


class FunctionCompressor:
    """A ``messages -> messages`` or ``snapshot -> snapshot`` function as a compressor.

    Args:
        function: The function. It must not mutate what it is given.
        takes: ``"messages"`` or ``"snapshot"``; by default ``"snapshot"`` when its first
            parameter is annotated ``MemorySnapshot``, else ``"messages"``.
        name: The label in results and events (default: the function's name).

    Raises:
        ConfigError: ``function`` is not callable, or ``takes`` is neither kind.
    """

    def __init__(
        self,
        function: Callable[[Any], Any],
        *,
        takes: Takes | None = None,
        name: str | None = None,
    ) -> None:
        if not callable(function):
            raise ConfigError(
                f"FunctionCompressor takes a function, got {type(function).__name__}; pass "
                "messages -> messages or snapshot -> snapshot"
            )
        if takes is not None and takes not in ("messages", "snapshot"):
            raise ConfigError(f"takes must be 'messages' or 'snapshot', got {takes!r}")
        self.function = function
        self.takes: Takes = takes or _takes(function)
        self.name = name or getattr(function, "__name__", None) or type(function).__name__

    def __repr__(self) -> str:
        return f"FunctionCompressor({self.name!r}, takes={self.takes!r})"

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Run the function on ``snapshot`` and check what it returned.

        Raises:
            ConfigError: the function returned something that is not messages (or not a
                snapshot), or that breaks the memory's rules (a dropped pinned item, a tool
                output without its call, a call that lost its output, an item that is not in
                ``snapshot``).
        """
        try:
            if self.takes == "snapshot":
                answer: Any = self.function(snapshot)
            else:
                rendered = snapshot.render_items()
                answer = self.function([dict(m) for m in items_to_chat(rendered, lossy=True)])
        except Exception as exc:  # the function failing at run time loses nothing
            return CompactResult(
                snapshot=snapshot,
                outcome="failed",
                error=f"{self.name} raised {type(exc).__name__}: {exc}",
                cause=exc,
                stats=self._stats(snapshot, snapshot),
            )
        if self.takes == "snapshot":
            after = self._checked_snapshot(snapshot, answer)
        else:
            after = self._from_messages(snapshot, answer)
        _check_rules(snapshot, after, self.name)
        kept = {item.seq for item in after.items if item.seq is not None}
        changed = after.summary != snapshot.summary or list(after.items) != list(snapshot.items)
        return CompactResult(
            snapshot=after,
            folded=tuple(item for item in snapshot.items if item.seq not in kept),
            outcome="compacted" if changed else "unchanged",
            stats=self._stats(snapshot, after),
        )

    def _stats(self, before: MemorySnapshot, after: MemorySnapshot) -> CompactStats:
        return CompactStats(
            compressor=self.name, items_before=len(before.items), items_after=len(after.items)
        )

    def _checked_snapshot(self, before: MemorySnapshot, answer: object) -> MemorySnapshot:
        if not isinstance(answer, MemorySnapshot):
            raise ConfigError(
                f"{self.name} must return a MemorySnapshot, got {type(answer).__name__}; "
                "return snapshot.model_copy(update={'items': kept}) or pass takes='messages'"
            )
        summary = answer.summary or before.summary
        return answer.model_copy(update={"version": before.version, "summary": summary})

    def _from_messages(self, before: MemorySnapshot, answer: object) -> MemorySnapshot:
        read = MemorySnapshot.from_items(_items(self.name, answer))
        # A message returned unchanged is the stored item it came from (its seq, id and pin).
        stored: dict[str, list[Item]] = {}
        for item in before.items:
            key = _chat_key(item)
            if key is not None:
                stored.setdefault(key, []).append(item)
        items = []
        for item in read.items:
            originals = stored.get(_key(item))
            items.append(originals.pop(0) if originals else item)
        return before.model_copy(
            update={"items": tuple(items), "summary": read.summary or before.summary}
        )


def as_memory_compressor(value: object) -> MemoryCompressor:
    """``value`` when it is a compressor; a plain function wrapped in a ``FunctionCompressor``.

    Raises:
        ConfigError: ``value`` is neither.
    """
    if callable(getattr(value, "compress", None)):
        return value  # type: ignore[return-value]
    if callable(value):
        return FunctionCompressor(value)
    raise ConfigError(
        f"compressor must have compress(snapshot) -> CompactResult, or be a function "
        f"messages -> messages or snapshot -> snapshot; got {type(value).__name__}"
    )


def _takes(function: Callable[..., Any]) -> Takes:
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature
        return "messages"
    if not parameters:
        return "messages"
    annotation = parameters[0].annotation
    if annotation is MemorySnapshot or (
        isinstance(annotation, str) and annotation.rsplit(".", 1)[-1] == "MemorySnapshot"
    ):
        return "snapshot"
    return "messages"


def _items(name: str, answer: object) -> list[Item]:
    """What a messages function returned, as items (Chat Completions dicts or LangChain
    messages)."""
    if not isinstance(answer, Sequence) or isinstance(answer, (str, bytes)):
        raise ConfigError(
            f"{name} must return a list of messages, got {type(answer).__name__}; return the "
            "Chat Completions message dicts to keep"
        )
    messages = list(answer)
    if messages and not all(isinstance(m, dict) for m in messages):
        try:  # LangChain messages (trim_messages, filter_messages, …)
            from langchain_core.messages import convert_to_openai_messages

            messages = convert_to_openai_messages(messages)
        except (ImportError, NotImplementedError, ValueError, TypeError) as exc:
            odd = next(m for m in messages if not isinstance(m, dict))
            raise ConfigError(
                f"{name} returned a {type(odd).__name__} among its messages; return Chat "
                "Completions message dicts (or LangChain messages)"
            ) from exc
    try:
        return chat_to_items(messages)
    except ConfigError as exc:
        raise ConfigError(f"{name} returned messages that are not Chat Completions: {exc}") from exc


def _key(item: Item) -> str:
    return json.dumps(item.model_dump(exclude={"id", "seq", "pinned"}), sort_keys=True)


def _chat_key(item: Item) -> str | None:
    """The key of ``item`` as it comes back from Chat Completions (``None`` when Chat cannot
    carry it alone: reasoning, provider compaction items)."""
    try:
        back = chat_to_items(items_to_chat([item], lossy=True))
    except ConfigError:
        return None
    return _key(back[0]) if len(back) == 1 else None


def _check_rules(before: MemorySnapshot, after: MemorySnapshot, name: str) -> None:
    stored = {item.seq for item in before.items}
    unknown = [item for item in after.items if item.seq is not None and item.seq not in stored]
    if unknown:
        raise ConfigError(
            f"{name} returned {describe(unknown[0])} with seq={unknown[0].seq}, which is not in "
            "the snapshot it was given; keep items as they are, and make new ones with seq=None"
        )
    kept = {item.seq for item in after.items}
    dropped = [item for item in before.items if item.pinned and item.seq not in kept]
    if dropped:
        raise ConfigError(
            f"{name} dropped the pinned {describe(dropped[0])} (seq={dropped[0].seq}); a "
            "compressor keeps pinned items — unpin it first to let it go"
        )
    calls = {item.call_id for item in after.items if isinstance(item, FunctionCall)}
    outputs = {item.call_id for item in after.items if isinstance(item, FunctionCallOutput)}
    for item in after.items:
        if isinstance(item, FunctionCallOutput) and item.call_id not in calls:
            raise ConfigError(
                f"{name} kept the tool output of call_id={item.call_id!r} without its call; "
                "keep or drop a call and its output together (whole groups)"
            )
    answered = {item.call_id for item in before.items if isinstance(item, FunctionCallOutput)}
    lost = sorted((calls & answered) - outputs)
    if lost:
        raise ConfigError(
            f"{name} kept the call call_id={lost[0]!r} but dropped its output; keep or drop a "
            "call and its output together (whole groups)"
        )
