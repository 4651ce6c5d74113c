"""``SeenList``: recognising the message list a compactor saw, in O(1) per call.

A loop hands ``MessageCompactor`` the whole conversation before every model call: usually the
list of the previous call plus a message or two. The plain check compares the old prefix,
``tuple(messages[:n]) == seen`` (identity first, then equality, in C: about 5 ns a message,
50 µs at 10k messages, plus the copy of the list kept for the next call: the whole call's
cost grew with the list). ``SeenList`` keeps its own list, extended by the new messages only,
and checks, by identity or equality: the length, the first and the last seen messages, the
eight most recent ones, and eight positions spread over the list whose offset moves every call
(so every position is checked once within ``n / 8`` calls). Lists below
``full_compare_below`` messages (a few µs) are compared whole, as the plain check does.

What the sampled check cannot see: an old message (not among the recent ones) replaced by
another, unequal object at a position not sampled on that call. It is noticed by a later call
(within ``n / 8`` calls), which then reads the list again from the start. Appends, truncations,
a new list, edits of the recent messages and lists that do not start with the seen ones are
always told apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["FULL_COMPARE_BELOW", "SeenList"]

FULL_COMPARE_BELOW = 1024
"""Below this many seen messages the whole prefix is compared (≤ ~5 µs)."""
_RECENT = 8
_SPREAD = 8


class SeenList:
    """The messages a compactor has read, and the O(1) check that a new list starts with them.

    Args:
        messages: The messages read so far (copied).
        full_compare_below: Compare the whole prefix while fewer messages were seen.
    """

    __slots__ = ("_calls", "_full_below", "messages")

    def __init__(
        self, messages: Sequence[Any] = (), *, full_compare_below: int = FULL_COMPARE_BELOW
    ) -> None:
        self.messages: list[Any] = list(messages)
        self._full_below = full_compare_below
        self._calls = 0

    def __len__(self) -> int:
        return len(self.messages)

    def starts(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` starts with the seen messages (see the module docstring for
        what the sampled check covers)."""
        seen = self.messages
        n = len(seen)
        if n == 0:
            return True
        if len(messages) < n:
            return False
        if n < self._full_below:
            prefix = messages[:n]
            return (prefix if isinstance(prefix, list) else list(prefix)) == seen
        self._calls += 1
        stride = max(1, n // _SPREAD)
        positions = (
            0,
            *range(n - 1, max(-1, n - 1 - _RECENT), -1),
            *range(self._calls % stride, n, stride),
        )
        for position in positions:
            old, new = seen[position], messages[position]
            if new is not old and new != old:
                return False
        return True

    def continued_by(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` holds the very last seen message at its place (not an equal
        copy) and ``starts`` with the seen messages."""
        n = len(self.messages)
        return (
            0 < n <= len(messages)
            and messages[n - 1] is self.messages[-1]
            and self.starts(messages)
        )

    def extend(self, fresh: Sequence[Any]) -> None:
        """Record the messages read after the seen ones."""
        self.messages.extend(fresh)
