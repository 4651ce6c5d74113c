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

__all__ = ["Group", "group_items"]

GroupKind = Literal["system", "developer", "user", "assistant", "orphan"]


@dataclass(frozen=True, slots=True)  # no dict per group: a projection indexes every group
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

    def __len__(self) -> int:
        return self.stop - self.start

    def slice(self, items: Sequence[Item]) -> Sequence[Item]:
        """The group's items."""
        return items[self.start : self.stop]


def group_items(items: Sequence[Item], start: int = 0) -> list[Group]:
    """Split ``items[start:]`` into atomic groups, in order (indices are into ``items``).

    Linear in the number of items.
    """
    groups: list[Group] = []
    # One slice, then plain indexing: ``items`` may be an ``ItemsView`` (a memory's snapshot),
    # whose items cost a Python call each to index.
    rest, offset = items[start:], start
    i, n = 0, len(rest)
    while i < n:
        item = rest[i]
        if isinstance(item, Message) and item.role != "assistant":
            groups.append(Group(offset + i, offset + i + 1, item.role))
            i += 1
            continue
        if isinstance(item, FunctionCallOutput):
            groups.append(Group(offset + i, offset + i + 1, "orphan"))
            i += 1
            continue
        group_start = i
        calls: list[str] = []
        pending: dict[str, None] = {}
        seen_output = False
        while i < n:
            item = rest[i]
            if isinstance(item, Message) and item.role != "assistant":
                break
            if isinstance(item, FunctionCallOutput):
                if item.call_id not in pending:
                    break  # belongs to no call of this group: an orphan
                del pending[item.call_id]
                seen_output = True
            else:  # reasoning, assistant text or a function call: part of a response
                if seen_output and not pending:
                    break  # the previous response is complete; this starts the next one
                if isinstance(item, FunctionCall):
                    calls.append(item.call_id)
                    pending[item.call_id] = None
                elif not isinstance(item, (Message, Reasoning, ProviderCompaction)):
                    raise ConfigError(
                        f"group_items takes items, got {type(item).__name__} at index "
                        f"{offset + i}; "
                        "convert provider messages first (chat_to_items, responses_to_items, "
                        "anthropic_to_items)"
                    )
            i += 1
        groups.append(
            Group(offset + group_start, offset + i, "assistant", tuple(calls), tuple(pending))
        )
    return groups
