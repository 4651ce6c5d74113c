"""``CompactkitMiddleware(cold_start="quick")``'s first call on a long thread: read only the end
a compaction keeps.

An opt-in: by default (``cold_start="full"``) the first call reads the thread whole, so the
summary lists what a compaction of all of it lists. This read trades that for speed.

The middleware mirrors a LangGraph thread into a compactkit memory (``_mirror.py``); its first
model call in a process has an empty mirror. Reading a thread of 10,000 messages whole would
convert and count every message, find the mirror over the policy's trigger and compact it: the
digest reads every item (≈1.5 s at 10k messages). What a compaction leaves is a summary and a
newest part within the policy's target, so ``read_cold`` builds that directly, reading only:

1. the thread's end, newest first, converted and counted exactly until it holds more than half
   of what the target leaves beside the system prompt and the tool schemas; the kept part
   starts at the oldest human message within that (a turn boundary: no tool call is parted
   from its result), and is never less than the newest turn;
2. the messages before it get a shape check (a plain ``HumanMessage`` or ``SystemMessage``
   with text content that is no summary compactkit wrote, an ``AIMessage`` whose tool calls
   all have ids, a ``ToolMessage``: what the converter reads without passing anything
   through), and their human and system messages are digested (``digest_items``, trimmed as
   ``DigestCompressor`` trims a summary): the summary holds the task as its goal and every
   rule and request the user gave, verbatim, as a compaction's summary does. The assistant's
   words and the tool traffic of that part are not read: the files, commands, errors and
   decisions a full digest would list from it are not in this summary.

Anything else (a message the converter would pass through, a summary in the thread, no human
or system message before the kept part) and the thread is read whole, as before. The mirror
then reads the kept part as it reads any thread (a reused call id is renamed for the memory
alike) and holds the summary with it, within the target unless the newest turn alone is
larger (so the first call projects; no compaction runs); later calls read only their new
messages, and the next compaction folds the kept part into that summary. Only for
``mode="project"`` with the default compressor, no ``before_compaction``, ``on_event`` or
``budget_visible`` (each would see a fold no event reported);
tests/integrations/test_langchain_cold.py holds what reaches the model to the request
contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors.digest import digest_items
from compactkit.compressors.digest.compressor import DIGEST_SHARE, USER_WORDS
from compactkit.errors import ConfigError
from compactkit.integrations import _langchain_convert as convert
from compactkit.integrations._cold import COLD_FROM
from compactkit.items import Item, Message, Tool
from compactkit.items.snapshot import looks_sealed, summary_message
from compactkit.runtime.governor import Governor

__all__ = ["COLD_FROM", "ColdThread", "quick_start", "read_cold"]


@dataclass(frozen=True)
class ColdThread:
    """What ``read_cold`` read of a thread: the messages to mirror and the summary of the rest."""

    kept: list[BaseMessage]
    """The leading system messages and the kept end, in order (the mirror converts them)."""
    summary: str
    """The digest of the human and system messages before the kept end."""


def read_cold(
    messages: Sequence[BaseMessage],
    governor: Governor,
    instructions: Sequence[Message],
    tools: Sequence[Tool],
) -> ColdThread | None:
    """The part of a long thread read for the first time that the mirror holds, and the
    summary of the rest; ``None``: read the whole thread."""
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
    cut, kept_tokens = found
    inputs = _digest_inputs(messages[lead:cut])
    if not inputs:
        return None
    summary = _summary(inputs, room - kept_tokens, policy.target_tokens(), counter)
    return ColdThread(kept=[*messages[:lead], *messages[cut:]], summary=summary)


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
) -> tuple[int, int] | None:
    """``(cut, tokens)``: the kept part starts at message ``cut`` (a human message) and takes
    ``tokens``; ``None`` when the whole thread is within ``reach`` (or holds no human message
    to cut at), or a message of its end would be passed through or is a summary."""
    count = governor.counter.count_item
    total = 0
    cut: tuple[int, int] | None = None
    for index in range(len(messages) - 1, lead - 1, -1):
        items = _items([messages[index]])
        if items is None:
            return None
        total += sum(map(count, items))
        if cut is not None and total > reach:
            break
        if type(messages[index]) is HumanMessage:
            cut = (index, total)
    else:
        return None  # it all fits: nothing to leave unread
    if cut is None or cut[0] <= lead:
        return None
    return cut


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
        if kind is HumanMessage or kind is SystemMessage:
            # (their text may be a summary: only a plain one is read without converting)
            content = message.content
            if type(content) is not str or looks_sealed(content) or convert.is_summary(message):
                return None
            role = "user" if kind is HumanMessage else "system"
            inputs.append(Message(role=role, content=content, name=message.name))
        elif kind is AIMessage:
            # (any content: the converter reads an AIMessage's blocks without question)
            if not all(call.get("id") for call in cast(AIMessage, message).tool_calls):
                return None
        elif kind is not ToolMessage:
            return None
    return inputs


def quick_start(
    cold_start: object,
    *,
    mode: str,
    compressor: object,
    on_event: object,
    before_compaction: object,
    budget_visible: bool,
) -> bool:
    """Whether a long thread's first call reads only its end (``cold_start="quick"``,
    ``read_cold``); a ``ConfigError`` when the other options would see or decide a
    fold that read skips (it reports no compaction event and runs no compressor)."""
    if cold_start not in ("full", "quick"):
        raise ConfigError(f'cold_start must be "full" or "quick", got {cold_start!r}')
    if cold_start == "full":
        return False
    clashes = [
        name
        for name, clash in (
            ('mode="compact"', mode != "project"),
            ("compressor= (or summarizer=)", compressor is not None),
            ("on_event=", on_event is not None),
            ("before_compaction=", before_compaction is not None),
            ("budget_visible=True", budget_visible),
        )
        if clash
    ]
    if clashes:
        raise ConfigError(
            f'cold_start="quick" builds the first summary itself, with no compaction event and '
            f"no compressor: it cannot be combined with {', '.join(clashes)}; drop those or use "
            'cold_start="full" (the default)'
        )
    return True
