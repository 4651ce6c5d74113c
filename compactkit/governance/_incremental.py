"""Helpers that keep per-turn work proportional to what changed, not to the whole history.

Memories append: the items of this turn's snapshot are last turn's items plus a few new ones.
The projector and the policy cache what they learned about last turn's items and only look at
the new tail, once ``extends`` confirms that the old items are still there unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from operator import is_

from compactkit.budget.tokens import TokenCounter
from compactkit.items import Item, Message, Role, Tool
from compactkit.items.snapshot import summary_message
from compactkit.items.view import ItemsView, same_history

__all__ = ["ItemsTally", "MessageCache", "OverheadCache", "extends", "item_counts", "sum_counts"]


def sum_counts(counter: TokenCounter, items: Iterable[Item]) -> int:
    """The summed ``count_item`` of ``items``: compactkit's counters sum cached items in C
    (``count_items``); any other counter item by item."""
    fast = getattr(counter, "count_items", None)
    if fast is not None:
        return int(fast(items))
    return sum(map(counter.count_item, items))


def item_counts(counter: TokenCounter, items: Iterable[Item]) -> list[int]:
    """Each item's ``count_item``, in order (in C for compactkit's counters, as ``sum_counts``)."""
    fast = getattr(counter, "item_counts", None)
    if fast is not None:
        return list(fast(items))
    return list(map(counter.count_item, items))


def extends(items: Sequence[Item], seen: Sequence[Item]) -> bool:
    """Whether ``items`` starts with exactly the items of ``seen``.

    Two views of one memory's items (``ItemsView``) with only appends between them extend each
    other without looking at the items. Otherwise the comparison runs in C and short-circuits on
    identity (a pointer comparison per item, about 4 ns); it stays exact when an old item
    was replaced in place (a later pin, an in-place mask), which a spot check would miss.
    """
    n = len(seen)
    if n == 0 or same_history(items, seen):  # one memory's reads, grown by appends: O(1)
        return True
    if len(items) < n or items[n - 1] is not seen[n - 1] or items[0] is not seen[0]:
        return False
    if len(items) == n:
        return tuple(items) == tuple(seen)
    return tuple(items[:n]) == tuple(seen)


def _tail(items: Sequence[Item], start: int) -> Sequence[Item]:
    """``items[start:]`` (a view's: a slice of its list, without the view's indexing and its
    tuple copy)."""
    if type(items) is ItemsView:
        return items._source[start : items._stop]
    return items[start:]


class OverheadCache:
    """``counter.count_overhead(tools)`` remembered for the last (counter, tools) seen.

    Counting tool schemas encodes their text; agents pass the same tool objects every turn.
    """

    def __init__(self) -> None:
        # One tuple, replaced whole, so that threads never see a half-updated entry.
        self._entry: tuple[TokenCounter | None, tuple[Tool, ...], int] = (None, (), 0)

    def __call__(self, counter: TokenCounter, tools: Sequence[Tool]) -> int:
        """The overhead of a request offering ``tools``, counted by ``counter``."""
        seen_counter, seen_tools, value = self._entry
        if (
            seen_counter is counter
            and len(tools) == len(seen_tools)
            and all(map(is_, tools, seen_tools))
        ):
            return value
        value = counter.count_overhead(tools)
        self._entry = (counter, tuple(tools), value)
        return value


class ItemsTally:
    """``sum(counter.count_item(i) for i in items)``, kept up to date as histories grow.

    Remembers the last few histories (one per session), so a growing one costs only its new
    items per call.
    """

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._entries: list[tuple[TokenCounter, Sequence[Item], int]] = []
        self._lock = threading.Lock()

    def __call__(self, counter: TokenCounter, items: Sequence[Item]) -> int:
        """The summed item tokens of ``items``."""
        with self._lock:
            entries = self._entries
            for position, (seen_counter, seen, total) in enumerate(entries):
                if seen_counter is counter and (seen is items or extends(items, seen)):
                    if len(items) > len(seen):
                        total += sum_counts(counter, _tail(items, len(seen)))
                    if position == 0:  # the usual call: the front history, grown, stays in front
                        entries[0] = (counter, items, total)
                        return total
                    del entries[position]
                    break
            else:
                total = sum_counts(counter, items)
            entries.insert(0, (counter, items, total))
            del entries[self._size :]
            return total


class MessageCache:
    """Messages made from text (instructions, the summary), one object per text.

    The same text gives the same object every turn, so the counter's per-item cache hits.
    """

    _limit = 64

    def __init__(self) -> None:
        self._messages: dict[tuple[str, str, bool], Message] = {}

    def get(self, role: Role, content: str, *, summary: bool = False) -> Message:
        """A message of ``role`` holding ``content``; ``summary`` marks it as the summary."""
        key = (role, content, summary)
        message = self._messages.get(key)
        if message is None:
            if summary:
                assert role != "assistant"
                message = summary_message(content, role)
            else:
                message = Message(role=role, content=content)
            if len(self._messages) >= self._limit:
                self._messages.clear()
            self._messages[key] = message
        return message
