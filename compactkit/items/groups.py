"""Atomic groups: the only places where compactkit may cut a conversation.

A group is one of:

* a single system, developer or user message;
* an assistant turn: one model response (its reasoning, assistant text and function calls, in
  any order) followed by the outputs of those calls. Parallel calls stay in one group.
  A new response starts a new group once every call of the current one has its output;
* an orphan: a function call output whose call is not in the group it follows.

Cutting between groups can never separate a call from its output, or reasoning from the call it
belongs to. Every projector and compressor cuts only at ``Group`` boundaries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from compactkit.errors import ConfigError
from compactkit.items.model import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ProviderCompaction,
    Reasoning,
)

__all__ = ["Group", "group_items"]  # (group_slice: the cache-aware projection's, not public)

GroupKind = Literal["system", "developer", "user", "assistant", "orphan"]


@dataclass(
    frozen=True, slots=True, init=False
)  # no dict per group: a projection indexes every group
class Group:
    """A half-open range ``items[start:stop]`` that is never split."""

    start: int
    """Index of the group's first item."""
    stop: int
    """Index one past the group's last item."""
    kind: GroupKind
    """What the group is (see the module docstring)."""
    call_ids: tuple[str, ...] = ()
    """The call ids of the function calls in the group, in order."""
    pending: tuple[str, ...] = field(default=())
    """Call ids in the group that have no output yet."""

    def __init__(
        self,
        start: int,
        stop: int,
        kind: GroupKind,
        call_ids: tuple[str, ...] = (),
        pending: tuple[str, ...] = (),
    ) -> None:
        # The slots set directly: a frozen dataclass's own __init__ goes through
        # object.__setattr__ per field, about twice the cost (every group of every history).
        _set_start(self, start)
        _set_stop(self, stop)
        _set_kind(self, kind)
        _set_call_ids(self, call_ids)
        _set_pending(self, pending)

    def __len__(self) -> int:
        return self.stop - self.start

    def slice(self, items: Sequence[Item]) -> Sequence[Item]:
        """The group's items."""
        return items[self.start : self.stop]


_set_start, _set_stop, _set_kind, _set_call_ids, _set_pending = (
    Group.__dict__[name].__set__ for name in ("start", "stop", "kind", "call_ids", "pending")
)

# What ``group_items`` reads of an item, by its class: a message other than the assistant's
# closes the group before it (_OWN), an output answers a call (_OUTPUT), a call opens one
# (_CALL), and assistant text, reasoning and a provider compaction are part of a response
# (_RESPONSE); anything else is not an item (_NOT_AN_ITEM).
_OWN, _OUTPUT, _CALL, _RESPONSE, _NOT_AN_ITEM = range(5)
_BY_TYPE = {
    FunctionCallOutput: _OUTPUT,
    FunctionCall: _CALL,
    Reasoning: _RESPONSE,
    ProviderCompaction: _RESPONSE,
}


def _class_of(item: object) -> int:
    """``item``'s class as ``group_items`` reads it, by ``isinstance`` (subclasses; the loop
    looks the exact item classes up by ``type`` first: an ``isinstance`` that fails against a
    pydantic model class goes through ``ABCMeta`` and costs several times a dict look-up)."""
    if isinstance(item, Message):
        return _RESPONSE if item.role == "assistant" else _OWN
    if isinstance(item, FunctionCallOutput):
        return _OUTPUT
    if isinstance(item, FunctionCall):
        return _CALL
    if isinstance(item, (Reasoning, ProviderCompaction)):
        return _RESPONSE
    return _NOT_AN_ITEM


def group_items(items: Sequence[Item], start: int = 0) -> list[Group]:
    """Split ``items[start:]`` into atomic groups, in order (indices are into ``items``).

    Linear in the number of items. Each item's class is read once, by ``type`` (``_class_of``
    for subclasses), and each call id once.
    """
    # One slice, then plain indexing: ``items`` may be an ``ItemsView`` (a memory's snapshot),
    # whose items cost a Python call each to index.
    return group_slice(items[start:], start)


def group_slice(rest: Sequence[Item], offset: int) -> list[Group]:
    """``group_items(items, offset)`` given ``rest``, the slice ``items[offset:]`` the caller
    already holds (a list or tuple: indexed item by item)."""
    groups: list[Group] = []
    n = len(rest)
    classes = [
        (_RESPONSE if item.role == "assistant" else _OWN)
        if type(item) is Message
        else _BY_TYPE.get(type(item)) or _class_of(item)
        for item in rest
    ]
    i = 0
    # Each group's stop is the next one's start: one int object for both (an index holds every
    # group of a session, and an int past 256 is a 32-byte object of its own).
    at = offset
    while i < n:
        kind = classes[i]
        if kind <= _OUTPUT:  # (_OWN or _OUTPUT) a message of its own, or a stray output
            stop = offset + i + 1
            own = kind == _OWN
            groups.append(Group(at, stop, rest[i].role if own else "orphan"))  # type: ignore[union-attr]
            at = stop
            i += 1
            continue
        calls: list[str] = []
        pending: dict[str, None] = {}
        seen_output = False
        while i < n:
            kind = classes[i]
            if kind == _OWN:
                break
            if kind == _OUTPUT:
                call_id = rest[i].call_id  # type: ignore[union-attr]
                if call_id not in pending:
                    break  # belongs to no call of this group: an orphan
                del pending[call_id]
                seen_output = True
            else:  # reasoning, assistant text or a function call: part of a response
                if seen_output and not pending:
                    break  # the previous response is complete; this starts the next one
                if kind == _CALL:
                    call_id = rest[i].call_id  # type: ignore[union-attr]
                    calls.append(call_id)
                    pending[call_id] = None
                elif kind == _NOT_AN_ITEM:
                    raise ConfigError(
                        f"group_items takes items, got {type(rest[i]).__name__} at index "
                        f"{offset + i}; "
                        "convert provider messages first (chat_to_items, responses_to_items, "
                        "anthropic_to_items)"
                    )
            i += 1
        stop = offset + i
        groups.append(Group(at, stop, "assistant", tuple(calls), tuple(pending)))
        at = stop
    return groups
