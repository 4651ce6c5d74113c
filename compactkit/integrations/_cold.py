"""The first call on a long message list: read only what a prompt can send.

A loop's first call in a new process (or a stateless ``compact_messages`` on a list nobody read
yet) would convert every message to items, store them and index them, although the budget lets
a prompt reach only the end of the list. With compaction off, nothing ever reads the rest: each
prompt is the leading instructions, the latest user input and a window of whole groups from
the end (docs/projector.md). ``read_cold`` finds where the reachable part starts, newest first:

1. it converts the list's end in growing chunks, each cut before a user message (a group
   boundary: the groups after it are the whole list's), and asks the projector where the groups
   no window can reach end (``ContextProjector.unreachable_from``: the closed groups from there
   to the end take more than the budget even masked, measured exactly as a projection does);
2. it cuts before the newest user message at or before that group and before the latest user
   input (which a prompt keeps ahead of the window), so the first group read is never sent;
3. the messages between the leading instructions and the cut get only a shape check
   (``plain_chat_items``): each must be a chat dict that converts without question, and its
   number of items is counted, no item built. Anything else (SDK objects, content parts,
   extra keys, a summary, a malformed message, a reused call id, a passed-through message)
   and the whole list is read as before, so errors and passthroughs are the full read's.

The memory then holds the instructions and the reachable end; the prompt is the one the whole
list gives (tests/integrations/test_cold_call.py compares them call by call), and the report
counts the unread items as omitted (``shift_report``). Later calls on the growing list read
only their new messages, as before.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from compactkit.formats.chat import CHAT_MESSAGE_KEYS, plain_call_id
from compactkit.governance.projector import ContextProjector, ProjectionReport
from compactkit.integrations._wire import Passthrough, WireConverter
from compactkit.items import FunctionCall, Item
from compactkit.items.snapshot import looks_sealed

__all__ = ["COLD_FROM", "ColdRead", "plain_chat_items", "read_cold", "shift_report"]

COLD_FROM = 256
"""Lists shorter than this are read whole (the search would cost more than it saves)."""
_FIRST_CHUNK = 512
_TEXT_ROLES = ("system", "developer", "user")


@dataclass
class ColdRead:
    """What ``read_cold`` read: the messages whose items the memory gets, and what it left."""

    messages: list[Any]
    """The leading instructions and the reachable end, in order."""
    items: list[list[Item]]
    """Each of those messages' items."""
    skipped: int
    """Items the unread messages stand for (the report counts them as omitted)."""
    lead_items: int
    """Items of the leading instructions: the unread items would follow them."""
    call_ids: list[str]
    """The call ids of the messages read and unread, in order (for the converter)."""


def read_cold(messages: Sequence[Any], projector: ContextProjector, budget: int) -> ColdRead | None:
    """The reachable part of ``messages`` (chat dicts), or ``None``: read the whole list."""
    n = len(messages)
    lead = 0
    while lead < n and _is_instruction(messages[lead]):
        lead += 1
    scratch = WireConverter("chat")  # its state never reaches the compactor's converter
    converted: dict[int, list[Item]] = {}
    found = _search(messages, lead, projector, budget, scratch, converted)
    if found is None:
        return None
    start, over = found
    latest = next((i for i in range(n - 1, lead - 1, -1) if _is_user(messages[i])), -1)
    cut = _user_before(messages, min(over, latest - 1), lead)
    if cut <= lead:
        return None
    for index in range(cut, start):
        converted[index] = scratch.to_items(messages[index], index, _ignore)
    skipped = plain_chat_items(messages[lead:cut])
    heads = [scratch.to_items(messages[index], index, _ignore) for index in range(lead)]
    if skipped is None or not scratch.clean:
        return None  # (a message passed through, or a call id renamed)
    count, skipped_ids = skipped
    read_ids = [
        item.call_id
        for index in range(cut, n)
        for item in converted[index]
        if isinstance(item, FunctionCall)
    ]
    call_ids = [*skipped_ids, *read_ids]
    if len(set(call_ids)) != len(call_ids):
        return None  # a reused id renames later calls: only a full read numbers them right
    return ColdRead(
        messages=[*messages[:lead], *messages[cut:]],
        items=[*heads, *(converted[index] for index in range(cut, n))],
        skipped=count,
        lead_items=sum(map(len, heads)),
        call_ids=call_ids,
    )


def _search(
    messages: Sequence[Any],
    lead: int,
    projector: ContextProjector,
    budget: int,
    scratch: WireConverter,
    converted: dict[int, list[Item]],
) -> tuple[int, int] | None:
    """``(start, over)``: the messages from ``start`` on were converted (into ``converted``),
    and no window reaches message ``over`` or any before it; ``None`` when it all may be."""
    n = len(messages)
    size = _first_chunk(messages, lead, budget, projector.mask_threshold)
    if size is None:
        return None  # the whole list is likely reachable: the search would find nothing
    start = n
    while True:
        earlier = _user_before(messages, max(lead, n - size), lead)
        if earlier < 0 or earlier == start:
            return None  # everything is reachable: nothing to leave unread
        start = earlier
        for index in range(start, n):
            if index not in converted:
                converted[index] = scratch.to_items(messages[index], index, _ignore)
        if not scratch.clean:
            return None
        at, offsets = _offsets(converted, start, n)
        found = projector.unreachable_from(at, budget)
        if found is not None:
            position = bisect_right(offsets, found) - 1
            if offsets[position] != found:
                return None  # a group starts inside a message: never, for chat dicts
            return start, start + position
        size *= 2


def _ignore(_: Passthrough) -> None:
    """(A passthrough shows in ``WireConverter.clean``.)"""


def plain_chat_items(messages: Sequence[Any]) -> tuple[int, list[str]] | None:
    """``(items, call ids)`` that ``messages`` convert to when every one is a chat dict that
    converts without question (``chat_to_items`` neither raises nor passes it through, and it
    is no summary); ``None`` when one is not. No item is built: about 1 µs a message."""
    count = 0
    call_ids: list[str] = []
    for message in messages:
        if type(message) is not dict or not message.keys() <= CHAT_MESSAGE_KEYS:
            return None
        name = message.get("name")
        if name is not None and type(name) is not str:
            return None
        role = message.get("role")
        content = message.get("content")
        if role in _TEXT_ROLES:
            if type(content) is not str or looks_sealed(content) or "tool_calls" in message:
                return None
            count += 1
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if (
                type(call_id) is not str
                or not call_id
                or (content is not None and type(content) is not str)
            ):
                return None
            count += 1
        elif role == "assistant":
            if content is not None and type(content) is not str:
                return None
            calls = message.get("tool_calls") or []
            if type(calls) is not list:
                return None
            for call in calls:
                call_id = plain_call_id(call)
                if call_id is None:
                    return None
                call_ids.append(call_id)
            count += len(calls) + (content is not None or not calls or name is not None)
        else:
            return None
    return count, call_ids


def _first_chunk(messages: Sequence[Any], lead: int, budget: int, threshold: int) -> int | None:
    """How many messages from the end to read first: enough, by a guess that counts few
    tokens per character (more messages than a window takes, so that one measurement
    usually finds the end of the reach; a wrong guess only costs another round). ``None``
    when by that guess the whole list fits: then it is read whole at once."""
    guess = 0
    for index in range(len(messages) - 1, lead - 1, -1):
        message = messages[index]
        content = message.get("content") if type(message) is dict else None
        size = len(content) // 4 if type(content) is str else 0
        if size > threshold // 2 and message.get("role") == "tool":
            size = 20  # (about what a mask's placeholder takes)
        guess += 4 + size
        if guess > budget:
            return max(_FIRST_CHUNK, len(messages) - index)
    return None


def _is_instruction(message: Any) -> bool:
    """A leading system or developer message that reads as one (never a summary)."""
    return plain_chat_items([message]) is not None and message.get("role") in _TEXT_ROLES[:2]


def _is_user(message: Any) -> bool:
    """A user message that reads as one (a group boundary, never a summary)."""
    return plain_chat_items([message]) is not None and message.get("role") == "user"


def _user_before(messages: Sequence[Any], index: int, lead: int) -> int:
    """The newest plain user message at or before ``index`` (after the lead), or -1."""
    for position in range(index, lead - 1, -1):
        if _is_user(messages[position]):
            return position
    return -1


def _offsets(
    converted: dict[int, list[Item]], start: int, stop: int
) -> tuple[list[Item], list[int]]:
    items: list[Item] = []
    offsets: list[int] = []
    for index in range(start, stop):
        offsets.append(len(items))
        items += converted[index]
    return items, offsets


_OMITTED = re.compile(r"omitted (\d+) item\(s\) before item (\d+) to fit the budget")
_POSITION = re.compile(
    r"\(item (\d+)\)( ahead of the window| answers no call| never got an output)$"
)


def shift_report(report: ProjectionReport, skipped: int, after: int) -> ProjectionReport:
    """``report`` as the whole list gives it: ``skipped`` more items omitted, and the item
    positions the notes name (at or past ``after``, where the unread items would be) moved
    by ``skipped``."""

    def moved(match: re.Match[str]) -> str:
        position = int(match.group(1))
        return f"(item {position + skipped if position >= after else position}){match.group(2)}"

    notes = []
    for note in report.notes:
        omitted = _OMITTED.fullmatch(note)
        if omitted is not None:
            older, first = int(omitted.group(1)), int(omitted.group(2))
            note = (
                f"omitted {older + skipped} item(s) before item {first + skipped} to fit the budget"
            )
        else:
            note = _POSITION.sub(moved, note)
        notes.append(note)
    return ProjectionReport(
        kept=report.kept,
        masked=report.masked,
        omitted=report.omitted + skipped,
        notes=tuple(notes),
        masked_call_ids=report.masked_call_ids,
        cached_prefix_tokens=report.cached_prefix_tokens,
    )
