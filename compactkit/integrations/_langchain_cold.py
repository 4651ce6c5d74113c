"""``CompactkitMiddleware``'s first call on a long thread: read only the end a compaction keeps.

The middleware mirrors a LangGraph thread into a compactkit memory (``_mirror.py``); its first
model call in a process has an empty mirror. Reading a thread of 10,000 messages whole would
convert and count every message, find the mirror over the policy's trigger and compact it: the
digest reads every item (≈1.5 s at 10k messages). What a compaction leaves is a summary and a
newest part within the policy's target, so ``read_cold`` builds that directly, reading only:

1. the thread's end, newest first, converted and counted exactly until it holds more than half
   of what the target leaves beside the system prompt and the tool schemas; the kept part
   starts at the oldest human message within that (a turn boundary: no tool call is parted
   from its result), and is never less than the newest turn;
2. the messages before it get a shape check (plain ``HumanMessage``/``AIMessage``/
   ``ToolMessage``/``SystemMessage`` with text content, no summary compactkit wrote, no tool
   call without an id: what the converter reads without passing anything through), and their
   human and system messages are digested (``DigestCompressor``): the summary holds the task as
   its goal and every rule and request the user gave, verbatim, as a compaction's summary does.
   The assistant's words and the tool traffic of that part are not read: the files, commands,
   errors and decisions a full digest would list from it are not in this summary.

Anything else (a passthrough, a summary in the thread, a reused call id in the kept part, a
digest that is not smaller than the messages it replaces, no human or system message before
the kept part) and the thread is read whole, as before. The memory then holds the summary and
the kept part, under the target (so below the trigger: the first call projects, no compaction
runs); later calls read only their new messages, and the next compaction folds the kept part
into that summary. Only for ``mode="project"`` with the default compressor, no
``before_compaction``, ``on_event`` or ``budget_visible`` (each would see a fold no event
reported); tests/integrations/test_langchain_cold.py holds what reaches the model to the
request contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors.digest import digest_items
from compactkit.compressors.digest.compressor import DIGEST_SHARE, USER_WORDS
from compactkit.integrations import _langchain_convert as convert
from compactkit.integrations._cold import COLD_FROM
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool
from compactkit.items.snapshot import MemorySnapshot, looks_sealed, summary_message
from compactkit.runtime.governor import Governor

__all__ = ["COLD_FROM", "read_cold"]

_READ = (HumanMessage, AIMessage, ToolMessage, SystemMessage)


def read_cold(
    messages: Sequence[BaseMessage],
    governor: Governor,
    instructions: Sequence[Message],
    tools: Sequence[Tool],
) -> MemorySnapshot | None:
    """The mirror's memory for a long thread read for the first time (the summary of the
    unread start and the items of the leading system messages and the kept end), or ``None``:
    read the whole thread."""
    policy = governor.policy
    if len(messages) < COLD_FROM or policy is None:
        return None
    counter = governor.counter
    room = policy.target_tokens() - sum(map(counter.count_item, instructions))
    room -= counter.count_overhead(tools)
    lead = 0
    while lead < len(messages) and type(messages[lead]) is SystemMessage:
        lead += 1
    lead_items = _items(messages[:lead])
    if lead_items is None:
        return None
    room -= sum(map(counter.count_item, lead_items))
    found = _kept_end(messages, lead, room // 2, governor)
    if found is None:
        return None
    cut, kept, kept_tokens = found
    inputs = _digest_inputs(messages[lead:cut])
    if not inputs or not _unique_ids(kept):
        return None
    summary = _summary(inputs, room - kept_tokens, policy.target_tokens(), counter)
    return MemorySnapshot.of([*lead_items, *kept], summary=summary)


def _summary(inputs: list[Item], room: int, target: int, counter: TokenCounter) -> str:
    """The digest of ``inputs`` within ``room`` tokens, trimmed as a compaction trims it: the
    goal and the rules are kept whole unless they alone outgrow the digest's share of the
    target (``DigestCompressor``'s ``cap``)."""
    doc = digest_items(inputs)
    summary = doc.render()
    cap = max(1, room - counter.count_item(summary_message("")))
    if _tokens(summary, counter) <= cap:
        return summary
    summary = doc.trim_to(cap, counter, keep=USER_WORDS).render()
    if _tokens(summary, counter) > max(cap, int(target * DIGEST_SHARE)):
        summary = doc.trim_to(cap, counter).render()
    return summary


def _tokens(summary: str, counter: TokenCounter) -> int:
    return counter.count_item(summary_message(summary))


def _kept_end(
    messages: Sequence[BaseMessage], lead: int, reach: int, governor: Governor
) -> tuple[int, list[Item], int] | None:
    """``(cut, items, tokens)``: the kept part starts at message ``cut`` (a human message),
    converted into ``items`` of ``tokens``; ``None`` when the whole thread is within ``reach``
    (or holds no human message to cut at)."""
    count = governor.counter.count_item
    converted: list[list[Item]] = []
    total = 0
    cut: tuple[int, int, int] | None = None  # (index, messages converted, tokens)
    for index in range(len(messages) - 1, lead - 1, -1):
        items = _items([messages[index]])
        if items is None:
            return None
        converted.append(items)
        total += sum(map(count, items))
        if cut is not None and total > reach:
            break
        if type(messages[index]) is HumanMessage:
            cut = (index, len(converted), total)
    else:
        return None  # it all fits: nothing to leave unread
    if cut is None or cut[0] <= lead:
        return None
    index, size, tokens = cut
    return index, [item for items in reversed(converted[:size]) for item in items], tokens


def _items(messages: Sequence[BaseMessage]) -> list[Item] | None:
    """The items of ``messages`` when the converter reads each without a warning and none is
    a summary; else ``None``."""
    out: list[Item] = []
    warned: list[str] = []
    for message in messages:
        converted = convert.to_items(message, warned.append)
        if warned or isinstance(converted, str) or any(isinstance(i, str) for i in converted):
            return None
        out += converted  # type: ignore[arg-type]  # (no str: checked above)
    return out


def _digest_inputs(messages: Sequence[BaseMessage]) -> list[Item] | None:
    """The human and system messages of ``messages`` as items, when every message is one the
    converter reads without question (checked by shape, nothing converted); else ``None``."""
    inputs: list[Item] = []
    for message in messages:
        kind = type(message)
        content = message.content
        if kind not in _READ or type(content) is not str or looks_sealed(content):
            return None
        if kind is HumanMessage or kind is SystemMessage:
            if convert.is_summary(message):
                return None
            role = "user" if kind is HumanMessage else "system"
            inputs.append(Message(role=role, content=content, name=message.name))
        elif kind is AIMessage and not all(
            call.get("id") for call in cast(AIMessage, message).tool_calls
        ):
            return None
    return inputs


def _unique_ids(items: Sequence[Item]) -> bool:
    """Whether every call and every output in ``items`` has its own id (the mirror renames a
    reused one; a cold read leaves that to a whole read)."""
    calls = [item.call_id for item in items if isinstance(item, FunctionCall)]
    outputs = [item.call_id for item in items if isinstance(item, FunctionCallOutput)]
    return len(set(calls)) == len(calls) and len(set(outputs)) == len(outputs)
