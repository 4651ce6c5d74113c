"""Scripted fakes of the ``LLM`` protocol that record what they were sent."""

from __future__ import annotations

import inspect
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from compactkit.compressors.summary.llm import ChatMessage

__all__ = ["FunctionLLM", "ScriptedLLM"]


def _copy(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [dict(m) for m in messages]


class ScriptedLLM:
    """An ``LLM`` that plays back a script of replies, in order.

    Args:
        replies: Strings to return, or exceptions to raise, one per call.

    Attributes:
        calls: Every request received, oldest first (each a list of message dicts).
    """

    def __init__(self, replies: Iterable[str | BaseException] = ()) -> None:
        self._script: deque[str | BaseException] = deque(replies)
        self._lock = threading.Lock()
        self.calls: list[list[dict[str, str]]] = []

    def add(self, *replies: str | BaseException) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(replies)

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet."""
        return len(self._script)

    def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The next scripted reply (or raise the next scripted exception)."""
        with self._lock:
            self.calls.append(_copy(messages))
            if not self._script:
                raise AssertionError(
                    f"ScriptedLLM ran out of replies at call {len(self.calls)}; add more replies"
                )
            reply = self._script.popleft()
        if isinstance(reply, BaseException):
            raise reply
        return reply

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        """Same as ``complete``."""
        return self.complete(messages)

    def assert_complete(self) -> None:
        """Fail when scripted replies were never requested."""
        if self._script:
            raise AssertionError(
                f"ScriptedLLM has {len(self._script)} unused replies after {len(self.calls)} calls"
            )


class FunctionLLM:
    """An ``LLM`` whose replies come from ``function(messages)``.

    Args:
        function: Decides the reply; it may raise to simulate a failure. An ``async``
            function works with ``acomplete`` only.

    Attributes:
        calls: Every request received, oldest first.
    """

    def __init__(self, function: Callable[[list[dict[str, str]]], str | Awaitable[str]]) -> None:
        self.function = function
        self.calls: list[list[dict[str, str]]] = []

    def complete(self, messages: Sequence[ChatMessage]) -> str:
        """``function(messages)``."""
        copied = _copy(messages)
        self.calls.append(copied)
        reply = self.function(copied)
        if inspect.isawaitable(reply):
            _close(reply)
            raise TypeError("FunctionLLM got an async function: call acomplete() instead")
        return reply

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        """``function(messages)``, awaited when it is a coroutine function."""
        copied = _copy(messages)
        self.calls.append(copied)
        reply = self.function(copied)
        if inspect.isawaitable(reply):
            return await reply
        return reply


def _close(awaitable: Awaitable[Any]) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:  # avoid "coroutine was never awaited"
        close()
