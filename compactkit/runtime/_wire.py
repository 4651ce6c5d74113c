"""The prompt in wire format, converted incrementally from one step to the next.

Converting a whole prompt every step costs O(prompt) (several µs an item), and a session's
prompt is mostly the previous one plus what the last step appended. ``WireCache`` keeps the last
conversion and the positions in it where a conversion may restart cleanly ("marks": a
user/system/developer message with no tool call waiting for its output, where nothing before
can change how what follows converts; in chat also the end of a prompt that ends with a tool
message and no call waiting). When the new prompt starts with the same items up to the last
such mark, only the rest is converted; otherwise (after a compaction, say) all of it.
The result is exactly what ``items_to_chat`` / ``items_to_responses`` return for the prompt.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from compactkit.formats import items_to_chat, items_to_responses
from compactkit.items import FunctionCall, FunctionCallOutput, Item, ItemsChain, ItemsView, Message
from compactkit.items.view import same_history

__all__ = ["WireCache"]

Convert = Callable[..., list[Any]]


class WireCache:
    """One conversation's last prompt and its wire form (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._api: str | None = None
        self._out: list[Any] = []
        self._marks: list[tuple[int, int]] = []  # (items before the mark, messages before it)
        # the last prompt (immutable: a tuple, an ItemsView or an ItemsChain)
        self._seen: Sequence[Item] = ()

    def convert(self, api: str, prompt: Sequence[Item]) -> list[Any]:
        """``prompt`` in ``api``'s wire format (lossy: what the API cannot express is dropped).

        The list returned is reused by the next call (do not keep it across calls; the
        messages in it are never changed).
        """
        items = prompt if isinstance(prompt, (tuple, ItemsView, ItemsChain)) else tuple(prompt)
        convert: Convert = items_to_chat if api == "chat" else items_to_responses
        with self._lock:
            start, sent, marks = 0, 0, []
            if api == self._api and self._marks:
                index, count = self._marks[-1]
                # A cache-aware prompt that grew the last one in place starts with it: O(1).
                if index <= len(items) and (
                    same_history(items, self._seen) or items[:index] == self._seen[:index]
                ):
                    start, sent, marks = index, count, list(self._marks)
            rest = convert(items[start:], lossy=True)
            if start:  # in place: O(what changed); the previous request was sent already
                out = self._out
                del out[sent:]
                out.extend(rest)
            else:
                out = rest
            marks.extend(_marks(items, start, sent, rest, convert))
            self._api, self._out, self._marks, self._seen = api, out, marks[-4:], items
            return out


def _marks(
    items: Sequence[Item], start: int, sent: int, rest: list[Any], convert: Convert
) -> list[tuple[int, int]]:
    """Clean restart points after ``start``: the last one only, as (items, messages) before it.

    A restart point needs the message count at that position too; counting messages of a
    partial conversion would re-convert, so the mark is taken where the suffix's own
    conversion can be split: the last user/system/developer message with nothing pending,
    converted separately to learn how many messages precede it.
    """
    pending: set[str] = set()
    last: int | None = None
    for index, item in enumerate(items[start:], start):  # a slice: plain tuple indexing
        if isinstance(item, FunctionCall):
            pending.add(item.call_id)
        elif isinstance(item, FunctionCallOutput):
            pending.discard(item.call_id)
        elif isinstance(item, Message) and item.role != "assistant" and not pending:
            last = index
    marks: list[tuple[int, int]] = []
    if last is not None and last != start:
        tail = convert(items[last:], lossy=True)
        head_messages = sent + len(rest) - len(tail)
        if rest[len(rest) - len(tail) :] == tail:  # else the split is not clean: no mark
            marks.append((last, head_messages))
    if (
        convert is items_to_chat
        and not pending
        and len(items) > start
        and isinstance(items[-1], FunctionCallOutput)
        and rest
        and rest[-1].get("role") == "tool"
    ):
        # Chat restarts cleanly after a tool message with no call waiting: no assistant message
        # is open for a later call to join, and no item waits for outputs (so each step of a
        # tool loop converts only what it appended, not the turn so far).
        marks.append((len(items), sent + len(rest)))
    return marks
