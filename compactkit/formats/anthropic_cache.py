"""Anthropic prompt caching: ``cache_control`` breakpoints on the stable prefix of a request.

Anthropic caches a request's prefix up to each block marked ``cache_control`` (at most 4 per
request) and bills cache reads at a tenth of the input price; the prefix runs tools → system →
messages, and only a byte-identical prefix hits. A cache-aware projection keeps the prompt the
previous one plus what was appended, so the breakpoints go where the prefix is stable:

1. the end of the prompt (the last block of the last message): written now, read by the next
   call, whose prefix it is;
2. the end of the system prompt, which caches the tools and the system prompt (the last tool
   definition when there is no system prompt);
3. the summary block: stable until the next compaction;
4. the end of the part shared with the previous request (``previous=``), which reads the
   previous call's entry even when more than the ~20 blocks Anthropic looks back over were
   appended since.

They are placed in that order of priority within ``max_breakpoints`` (breakpoints already in
the request count against it). Thinking blocks never carry one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NamedTuple

from compactkit.errors import ConfigError
from compactkit.formats.anthropic import AnthropicPrompt
from compactkit.items.snapshot import unseal_summary

__all__ = ["CachedAnthropicPrompt", "add_cache_breakpoints"]

MAX_BREAKPOINTS = 4
"""Anthropic's limit of ``cache_control`` breakpoints per request."""

_UNMARKABLE = ("thinking", "redacted_thinking")

Block = dict[str, Any]


class CachedAnthropicPrompt(NamedTuple):
    """An Anthropic request's ``system``, ``messages`` and ``tools`` with breakpoints placed."""

    system: str | list[Block] | None
    """The system prompt (a list of blocks once one of them carries a breakpoint)."""
    messages: list[dict[str, Any]]
    """The messages; a marked message's content is a list of blocks."""
    tools: list[dict[str, Any]]
    """The tool definitions (the last one marked when there is no system prompt)."""
    breakpoints: tuple[str, ...]
    """Where breakpoints were placed, in priority order (``"end"``, ``"system"``, …)."""


def add_cache_breakpoints(
    prompt: AnthropicPrompt,
    *,
    tools: Sequence[Mapping[str, Any]] = (),
    previous: Sequence[Mapping[str, Any]] | None = None,
    max_breakpoints: int = MAX_BREAKPOINTS,
    ttl: Literal["5m", "1h"] | None = None,
) -> CachedAnthropicPrompt:
    """Mark the stable prefix of ``prompt`` with ``cache_control`` breakpoints.

    Args:
        prompt: What ``items_to_anthropic`` returned (it is not modified).
        tools: The request's tool definitions (``tools_to_anthropic``); they come first in the
            cached prefix.
        previous: The previous request's ``messages`` (breakpoints in it are ignored): the end
            of the part this request shares with it gets a breakpoint.
        max_breakpoints: At most this many breakpoints in the whole request (Anthropic: 4),
            counting those already present.
        ttl: The cache lifetime (``"1h"`` costs more to write); default Anthropic's 5 minutes.

    Raises:
        ConfigError: ``max_breakpoints`` is not 1-4, or ``ttl`` is not ``"5m"``/``"1h"``.
    """
    if isinstance(max_breakpoints, bool) or max_breakpoints not in range(1, MAX_BREAKPOINTS + 1):
        raise ConfigError(
            f"max_breakpoints must be 1 to {MAX_BREAKPOINTS} (Anthropic's limit), "
            f"got {max_breakpoints!r}"
        )
    if ttl not in (None, "5m", "1h"):
        raise ConfigError(f"ttl must be '5m', '1h' or None, got {ttl!r}")
    marker: dict[str, str] = {"type": "ephemeral"}
    if ttl is not None:
        marker["ttl"] = ttl
    system = _system_blocks(prompt.system)
    messages = [_message_blocks(message) for message in prompt.messages]
    tool_list = [dict(tool) for tool in tools]
    present = _count_marks(system, messages, tool_list)
    room = max_breakpoints - present
    placed: list[str] = []

    def mark(block: Block | None, where: str) -> None:
        nonlocal room
        if room <= 0 or block is None or "cache_control" in block:
            return
        block["cache_control"] = dict(marker)
        placed.append(where)
        room -= 1

    mark(_last_markable(messages[-1]["content"]) if messages else None, "end")
    if system:
        mark(_last_markable(system), "system")
    elif tool_list:
        mark(tool_list[-1], "tools")
    summary = _summary_block(system, messages)
    if summary is not None:
        mark(summary, "summary")
    shared = _shared(prompt.messages, previous) if previous is not None else 0
    if 0 < shared < len(messages):
        mark(_last_markable(messages[shared - 1]["content"]), f"shared prefix (message {shared})")
    out_system: str | list[Block] | None = prompt.system
    if system and any("cache_control" in block for block in system):
        out_system = system
    return CachedAnthropicPrompt(out_system, messages, tool_list, tuple(placed))


def _system_blocks(system: str | list[Block] | None) -> list[Block]:
    if system is None or system == "":
        return []
    if isinstance(system, str):
        return [{"type": "text", "text": system}]
    return [dict(block) for block in system]


def _message_blocks(message: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``message`` whose content is a list of (copied) blocks."""
    out = dict(message)
    content = message.get("content")
    if isinstance(content, str):
        out["content"] = [{"type": "text", "text": content}] if content else []
    elif isinstance(content, list):
        out["content"] = [dict(block) if isinstance(block, Mapping) else block for block in content]
    return out


def _last_markable(blocks: Any) -> Block | None:
    if not isinstance(blocks, list):
        return None
    for block in reversed(blocks):
        if not isinstance(block, dict) or block.get("type") in _UNMARKABLE:
            continue
        if block.get("type") == "text" and not block.get("text"):
            continue  # an empty text block cannot be cached (or sent)
        return block
    return None


def _summary_block(system: list[Block], messages: list[dict[str, Any]]) -> Block | None:
    for block in system:
        if block.get("type") == "text" and unseal_summary(block.get("text", "")) is not None:
            return block
    for message in messages[:2]:  # the summary is the first message (or the system prompt)
        for block in message.get("content") or []:
            if (
                isinstance(block, dict)
                and block.get("type") == "text"
                and unseal_summary(block.get("text", "")) is not None
            ):
                return block
    return None


def _count_marks(*groups: list[Any]) -> int:
    count = 0
    for group in groups:
        for entry in group:
            if isinstance(entry, dict) and "cache_control" in entry:
                count += 1
            content = entry.get("content") if isinstance(entry, dict) else None
            if isinstance(content, list) and "role" in entry:
                count += sum(1 for b in content if isinstance(b, dict) and "cache_control" in b)
    return count


def _shared(messages: Sequence[Mapping[str, Any]], previous: Sequence[Mapping[str, Any]]) -> int:
    """How many leading messages are the same in both (breakpoints aside)."""
    count = 0
    for a, b in zip(messages, previous, strict=False):
        if _plain(a) != _plain(b):
            break
        count += 1
    return count


def _plain(message: Mapping[str, Any]) -> Any:
    """``message`` without ``cache_control`` marks, content as blocks (for comparison)."""
    content = message.get("content")
    if isinstance(content, str):
        blocks: Any = [{"type": "text", "text": content}] if content else []
    elif isinstance(content, list):
        blocks = []
        for block in content:
            if isinstance(block, Mapping):
                block = {k: v for k, v in block.items() if k != "cache_control"}
            blocks.append(block)
    else:
        blocks = copy.deepcopy(content)
    return message.get("role"), blocks
