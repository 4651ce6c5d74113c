"""Counting what a summarizer costs during one eval run (calls and tokens), per thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from compactkit.budget import TiktokenCounter
from compactkit.compressors import LLM, ChatMessage

__all__ = ["Meter", "MeteredLLM", "metering"]

_COUNTER = TiktokenCounter("o200k_base")
_PER_MESSAGE = 3  # Chat Completions framing per message


@dataclass
class Meter:
    """What the summarizer calls made inside one ``metering()`` block cost."""

    calls: int = 0
    """Requests sent (each attempt, retries included)."""
    input_tokens: int = 0
    """Prompt tokens sent (o200k_base count of the messages)."""
    output_tokens: int = 0
    """Tokens of the answers."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, messages: Sequence[ChatMessage], answer: str | None) -> None:
        """Record one request."""
        sent = sum(_COUNTER.count_text(str(m.get("content", ""))) + _PER_MESSAGE for m in messages)
        with self._lock:
            self.calls += 1
            self.input_tokens += sent
            self.output_tokens += _COUNTER.count_text(answer) if answer else 0


_CURRENT: ContextVar[Meter | None] = ContextVar("compactkit_eval_meter", default=None)


@contextmanager
def metering() -> Iterator[Meter]:
    """Count every ``MeteredLLM`` request made in this block (in this thread or task)."""
    meter = Meter()
    token = _CURRENT.set(meter)
    try:
        yield meter
    finally:
        _CURRENT.reset(token)


class MeteredLLM:
    """An ``LLM`` that reports each request to the active ``metering()`` block.

    Args:
        llm: The model to call.
    """

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def __repr__(self) -> str:
        return repr(self.llm)

    def complete(self, messages: Sequence[ChatMessage]) -> str:
        """``llm.complete``, counted."""
        answer: str | None = None
        try:
            answer = self.llm.complete(messages)
            return answer
        finally:
            meter = _CURRENT.get()
            if meter is not None:
                meter.add(messages, answer)

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        """``llm.acomplete``, counted."""
        answer: str | None = None
        try:
            answer = await self.llm.acomplete(messages)
            return answer
        finally:
            meter = _CURRENT.get()
            if meter is not None:
                meter.add(messages, answer)
