"""``block_network()``: make any real network connection fail loudly in tests."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["NetworkBlockedError", "block_network"]


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
