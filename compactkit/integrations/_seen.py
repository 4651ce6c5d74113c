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

A message object is also edited in place (``messages[0]["content"] = ...`` every turn, text
appended to the last user message, an assistant message filled as it streams, ``msg.content =
...`` on a LangChain or pydantic message): the same object, so identity says nothing. For the
first message and the eight most recent ones (the positions every call checks) ``SeenList``
keeps a ``mark`` taken when they were read: their values, a few levels down (a tuple of
references, not a copy of the text), compared by identity then equality. An edit there makes
``starts`` false; ``edited`` names the positions, and the compactor reads those messages
again alone or the whole list again (``_compactor_read.ListReader``). Nine marks in all,
whatever the list's length: nothing is kept per message.

What the check cannot see: an old message (not among the recent ones) replaced by another,
unequal object at a position not sampled on that call. It is noticed by a later call (within
``n / 8`` calls), which then reads the list again from the start. An old message edited in
place (past the eight most recent, not the first) is not noticed at all. Appends, truncations,
a new list, replacements and in-place edits of the first and the recent messages and lists
that do not start with the seen ones are always told apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["FULL_COMPARE_BELOW", "SeenList", "mark"]

FULL_COMPARE_BELOW = 1024
"""Below this many seen messages the whole prefix is compared (≤ ~5 µs)."""
_RECENT = 8
_SPREAD = 8
_DEPTH = 4
"""How many levels under a message ``mark`` follows (an Anthropic tool result's text block is
four down: message, content list, block, its content list)."""
_LEAVES = frozenset({str, int, float, bool, type(None), bytes})
_UNCOUNTED = "cache_control"
"""A key ``mark`` leaves out: Anthropic's prompt-caching mark, which the usual recipe puts on the
last block of the request it sends (``turn.send`` holds the caller's own messages) and which
adds no token to what the model reads."""


def mark(value: Any, depth: int = _DEPTH) -> Any:
    """What ``value`` holds, ``depth`` levels down: a dict's values (but a ``cache_control``
    mark), a list's items and an object's fields (``__dict__``: pydantic models, LangChain messages, dataclasses) as tuples of
    the same, with strings and numbers by reference. Two marks compare equal while nothing in
    those levels was assigned anew (a tuple compares its items by identity first: O(1) per
    unchanged string, however long)."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if kind is dict:
        values: Any = value.values()
        if _UNCOUNTED in value:  # (a caching mark put on a block of a request once sent)
            values = [v for k, v in value.items() if k != _UNCOUNTED]
    elif kind is list or kind is tuple:
        values = value
    else:
        fields = getattr(value, "__dict__", None) if depth else None
        if type(fields) is not dict:
            return value
        values = fields.values()
    if not depth:
        return tuple(values)
    return tuple([v if type(v) in _LEAVES else mark(v, depth - 1) for v in values])


class SeenList:
    """The messages a compactor has read, and the O(1) check that a new list starts with them.

    Args:
        messages: The messages read so far (copied).
        full_compare_below: Compare the whole prefix while fewer messages were seen.
    """

    __slots__ = ("_calls", "_full_below", "_marks", "messages")

    def __init__(
        self, messages: Sequence[Any] = (), *, full_compare_below: int = FULL_COMPARE_BELOW
    ) -> None:
        self.messages: list[Any] = list(messages)
        self._full_below = full_compare_below
        self._calls = 0
        self._marks: dict[int, Any] = {}
        """position -> ``mark`` of the message read there: the first and the recent ones."""
        self._mark_from(0)

    def __len__(self) -> int:
        return len(self.messages)

    def starts(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` starts with the seen messages, the first and the recent ones
        unedited since they were read (see the module docstring for what the check covers)."""
        return self._same_objects(messages) and self._unedited(messages)

    def edited(self, messages: Sequence[Any]) -> list[int] | None:
        """The positions of the first and the recent messages edited in place since they were
        read, when ``messages`` otherwise starts with the seen messages (``[]``: ``starts``);
        ``None`` when it does not start with them."""
        if not self._same_objects(messages):
            return None
        return [p for p, old in self._marks.items() if mark(messages[p]) != old]

    def remark(self, positions: Sequence[int]) -> None:
        """Take the marks at ``positions`` again (their messages were read again)."""
        for position in positions:
            self._marks[position] = mark(self.messages[position])

    def _same_objects(self, messages: Sequence[Any]) -> bool:
        """``starts`` by identity or equality alone (an object edited in place passes)."""
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
        copy) and starts with the seen messages, by identity or equality: the same
        conversation, even with a message edited in place (which ``starts`` then tells)."""
        n = len(self.messages)
        return (
            0 < n <= len(messages)
            and messages[n - 1] is self.messages[-1]
            and self._same_objects(messages)
        )

    def extend(self, fresh: Sequence[Any]) -> None:
        """Record the messages read after the seen ones (and the marks of the recent ones)."""
        start = len(self.messages)
        self.messages.extend(fresh)
        self._mark_from(start)

    def _unedited(self, messages: Sequence[Any]) -> bool:
        """Whether the first and the recent messages hold what they held when read."""
        return all(mark(messages[position]) == old for position, old in self._marks.items())

    def _mark_from(self, start: int) -> None:
        """Mark the messages read from ``start`` on that are the first or recent; forget the
        marks of those no longer recent."""
        seen, marks = self.messages, self._marks
        n = len(seen)
        recent = max(1, n - _RECENT)
        for position in [p for p in marks if 0 < p < recent]:  # (at most nine marks)
            del marks[position]
        if start == 0 and n:
            marks[0] = mark(seen[0])
        for position in range(max(start, recent), n):
            marks[position] = mark(seen[position])
