"""Which stored items each message of a ``MessageCompactor``'s conversation became.

A message whose items are sent unchanged (the very objects) goes out as it came in, unconverted
(``WireConverter.from_items``): ``Original`` maps the seq of its first stored item to the message
and those items.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from compactkit.integrations._wire import Original
from compactkit.items import Item, Message
from compactkit.items.snapshot import is_summary_message
from compactkit.memory.base import AgentMemory
from compactkit.memory.in_memory import SeqMap

__all__ = ["kept", "remember"]

_seq_of = attrgetter("seq")


def remember(
    originals: SeqMap[Original],
    memory: AgentMemory,
    fresh: Sequence[Any],
    per_message: list[list[Item]],
    summaries: bool = True,
    stored: Sequence[Item] | None = None,
) -> None:
    """Map each new message to the stored items it became, so that it is sent as given
    while those items are sent unchanged (``summaries=False``: the caller knows that none
    of the items is a summary message, which is not stored as an item; ``stored``: the
    items as ``memory`` stored them, when the caller has them)."""
    if not summaries and stored is not None and len(stored) == sum(map(len, per_message)):
        # The usual call: every item was stored as it is, in order (no counts to take).
        at = 0
        for message, items in zip(fresh, per_message, strict=True):
            if items:
                first = stored[at]
                if first.seq is not None:
                    originals[first.seq] = (message, *stored[at : at + len(items)])
                at += len(items)
        return
    if summaries:
        stored, counts = _stored_of(memory, per_message)
    else:
        counts = list(map(len, per_message))
    total = sum(counts)
    if not total:
        return
    if stored is None or len(stored) != total:
        stored = memory.snapshot().items[-total:]
    at = 0
    for message, items, count in zip(fresh, per_message, counts, strict=True):
        mine = stored[at : at + count]
        at += count
        if count and count == len(items) and mine[0].seq is not None:
            originals[mine[0].seq] = (message, *mine)


def _stored_of(memory: AgentMemory, per_message: list[list[Item]]) -> tuple[list[Item], list[int]]:
    """The stored items the new messages became (the memory's last ones), and how many each
    message has there. A summary message read in became the memory's summary, unless it was
    not at a summary's place (after a message that is not an instruction): then it is stored
    as an item, quoted text. Walked from the end, a summary message counts when the stored item
    at its place holds its text."""
    active = memory.snapshot().items
    at = len(active)
    counts = [0] * len(per_message)
    for index in range(len(per_message) - 1, -1, -1):
        for item in reversed(per_message[index]):
            if at == 0:
                break
            held = active[at - 1]
            if is_summary_message(item) and not (
                isinstance(held, Message) and held.content == getattr(item, "content", None)
            ):
                continue  # (it became the summary)
            counts[index] += 1
            at -= 1
    return list(active[at:]), counts


def kept(old: SeqMap[Original], items: Sequence[Item]) -> SeqMap[Original]:
    """The entries of ``old`` whose first item is among ``items`` (the active ones), in a new
    map, by seq."""
    return old.subset(sorted(map(_seq_of, items)))
