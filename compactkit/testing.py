"""Fakes for testing code that uses compactkit, without a model or a network.

* ``ScriptedLLM`` answers from a script (replies or exceptions, first in first out) and records
  every request in ``.calls``; ``assert_complete()`` fails when scripted replies were never used.
* ``FunctionLLM`` lets a function decide each reply from the messages it is sent, so a test can
  inspect exactly what a compressor asked.
* ``block_network()`` makes any real network connection fail loudly while it is active (mocked
  HTTP, such as respx, keeps working because it never opens a socket). Use it in a fixture::

      @pytest.fixture(autouse=True)
      def _no_network():
          with block_network():
              yield

Both fakes implement the ``LLM`` protocol (``complete`` and ``acomplete``).
"""

from __future__ import annotations

import inspect
import ipaddress
import socket
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from compactkit.compressors.summary.llm import ChatMessage

__all__ = ["FunctionLLM", "NetworkBlockedError", "ScriptedLLM", "block_network"]


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


class NetworkBlockedError(BaseException):
    """A test tried to open a real network connection inside ``block_network()``.

    A ``BaseException``, like pytest's own outcomes, so that no ``except Exception`` on the way
    (the SDK's, a compressor's) can turn it into an ordinary, retried failure.
    """


_LOOPBACK = ("localhost",)


def _allowed(host: object, allow: frozenset[str]) -> bool:
    if not isinstance(host, str):
        return False  # AF_UNIX paths are bytes or str; sockets to them are not "network"
    if host in allow or host in _LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


@contextmanager
def block_network(*, allow: Iterable[str] = ()) -> Iterator[None]:
    """Make every connection to a non-loopback host raise ``NetworkBlockedError``.

    Loopback (``127.0.0.1``, ``::1``, ``localhost``) stays reachable, so tests may run a local
    server; add other hosts with ``allow``. Name lookups of other hosts fail too, so nothing
    leaves the machine. In-process HTTP mocks (respx) are unaffected.
    """
    allowed = frozenset(allow)
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(address: object) -> None:
        if isinstance(address, tuple) and address and not _allowed(address[0], allowed):
            raise NetworkBlockedError(
                f"network access to {address!r} attempted inside block_network(); mock the "
                "request (respx, ScriptedLLM) or allow the host"
            )

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            check(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            check(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None:
            name = host.decode() if isinstance(host, bytes) else str(host)
            check((name, 0))
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign, assignment]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign, assignment]
    socket.getaddrinfo = getaddrinfo
    try:
        yield
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = real_getaddrinfo
