"""Reading the messages of one conversation into items (``WireReader``, which
``WireConverter`` extends with writing them back, ``_wire.py``).

A message compactkit cannot read becomes a pinned placeholder (``_wire_format.Passthrough``);
a call reusing an id read before is renamed inside compactkit (the id goes out as given); two
calls sharing one id before any output comes between them are a ``FormatError``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from compactkit.errors import ConfigError, FormatError
from compactkit.formats import (
    anthropic_to_items,
    chat_to_items,
    responses_to_items,
    to_plain,
    tools_from_anthropic,
    tools_from_chat,
    tools_from_responses,
)
from compactkit.formats.chat import plain_chat_message_items
from compactkit.integrations._wire_format import (
    FORMATS,
    PASSTHROUGH_KEY,
    PASSTHROUGH_RAW,
    MessageFormat,
    Passthrough,
)
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool

__all__ = ["INNER_SUFFIX", "Checkpoint", "WireReader"]

_ID_SEP = "\u2063#"  # invisible separator: marks compactkit's suffix on a reused call id
INNER_SUFFIX = re.compile(_ID_SEP + r"\d+")
"""compactkit's suffix on a renamed call id (removed from what goes out)."""


class WireReader:
    """Reads the messages of one conversation, remembering the call ids it read and what it
    passed through.

    Args:
        format: The conversation's format.
    """

    def __init__(self, format: MessageFormat) -> None:
        if format not in FORMATS:
            raise ConfigError(
                f"format must be 'chat', 'responses' or 'anthropic' (or None to detect it), "
                f"got {format!r}"
            )
        self._format: MessageFormat = format
        self._raw: dict[str, Any] = {}
        self._call_ids: set[str] = set()  # calls of passed-through messages
        # Every call id read (renamed ones as renamed; their number is part of a renamed id)
        # -> True once an output answered it: a dict, a fifth of a set's memory at 5,000 ids.
        self._seen_calls: dict[str, bool | None] = {}
        self._renamed: dict[str, str] = {}  # a reused call id -> its latest call's inner id
        # The calls read since the last output or user/system message, by call id as given
        # (-> the index of their message): a call reusing one of their ids is ambiguous
        self._open_calls: dict[str, int] = {}
        # The outputs read since the last call or user/system message, likewise: an output
        # answering one of their calls again answers a call already answered
        self._answered: dict[str, int] = {}
        # The calls answered since the last ``checkpoint`` (their ids as read), to be marked
        # unanswered again by ``rollback``; ``None`` when no checkpoint was taken.
        self._answered_since: list[str] | None = None

    def to_items(
        self, message: Any, index: int, on_passthrough: Callable[[Passthrough], None]
    ) -> list[Item]:
        """The items of one message; a placeholder (reported to ``on_passthrough``) when it
        cannot be read."""
        if self._format == "chat" and not self._call_ids:  # (no call passed through to answer)
            fast = plain_chat_message_items(message)  # a plain dict: built unvalidated
            if fast is not None:
                return self._unique_ids(fast, message, index)
        plain = to_plain(message)
        reason = self._answers_passed_call(plain)
        if reason is None:
            try:
                items = _READERS[self._format]([plain])
            except (FormatError, ValueError, TypeError, AttributeError) as exc:
                reason = str(exc).removeprefix("message 0: ").removeprefix("input item 0: ")
            else:  # (outside the try: a repeated call id is an error, never a passthrough)
                return self._unique_ids(items, plain, index)
        on_passthrough(Passthrough(index=index, reason=reason))
        return [self._placeholder(message, plain)]

    def checkpoint(self) -> Checkpoint:
        """What ``to_items`` changes, as it is now: ``rollback`` undoes the reading of the
        messages read since (a call that raised on one of them reads them again)."""
        self._answered_since = []
        return Checkpoint(
            len(self._seen_calls),
            dict(self._renamed) if self._renamed else None,
            set(self._call_ids) if self._call_ids else None,
            len(self._raw),
            dict(self._open_calls) if self._open_calls else None,
            dict(self._answered) if self._answered else None,
            self._answered_since,
        )

    def rollback(self, mark: Checkpoint) -> None:
        """Forget what ``to_items`` read since ``mark`` (the latest ``checkpoint``): renamed
        ids, calls, the answers to calls and placeholders (dicts keep their order: the newest
        entries are popped)."""
        seen = self._seen_calls
        for call_id in mark.answered_since:
            if call_id in seen:
                seen[call_id] = None
        for kept, grown in ((mark.seen, seen), (mark.raw, self._raw)):
            while len(grown) > kept:
                grown.popitem()
        self._renamed = dict(mark.renamed or {})
        self._call_ids = set(mark.call_ids or ())
        self._open_calls = dict(mark.open_calls or {})
        self._answered = dict(mark.answered or {})

    def system_items(self, system: Any) -> list[Item]:
        """Anthropic's top-level ``system`` as leading system messages.

        Raises:
            ConfigError: ``system`` is not a string or a list of text blocks.
        """
        try:
            return anthropic_to_items([], system=to_plain(system))
        except FormatError as exc:
            raise ConfigError(f"system: {exc}") from None

    def tools(self, tools: Sequence[Any]) -> list[Tool]:
        """Tool schemas (compactkit ``Tool``s or any format's tool dicts) as ``Tool``s; a tool
        compactkit does not model (a built-in tool) is not counted."""
        out: list[Tool] = []
        for index, tool in enumerate(tools):
            if isinstance(tool, Tool):
                out.append(tool)
                continue
            plain = to_plain(tool)
            if not isinstance(plain, Mapping):
                raise ConfigError(
                    f"tools[{index}] must be a Tool or a tool dict, got {type(tool).__name__}"
                )
            reader = (
                tools_from_chat
                if "function" in plain
                else tools_from_anthropic
                if "input_schema" in plain
                else tools_from_responses
            )
            try:
                out.extend(reader([plain]))
            except FormatError:
                continue  # a built-in tool (web search, …): the provider sizes it, not us
        return out

    def note_calls(self, call_ids: Iterable[str], answered: Iterable[str] = ()) -> None:
        """Record calls read without this converter (``_cold.read_cold``), in order, as
        ``to_items`` would have: a later call reusing one of their ids is renamed as it would
        be, and a later output for one of them ``answered`` (ids among ``call_ids``) is
        refused. The caller made sure none of them reuses an id (no renaming was due)."""
        self._open_calls.clear()
        for call_id in call_ids:
            self._renamed.pop(call_id, None)
            self._seen_calls[call_id] = None
        for call_id in answered:
            if call_id in self._seen_calls:
                self._seen_calls[call_id] = True

    @property
    def clean(self) -> bool:
        """Whether nothing read so far was passed through or had its call id renamed: then
        each message's items depended on that message alone."""
        return not self._raw and not self._renamed and not self._call_ids

    def _unique_ids(self, items: list[Item], message: Any, at: int) -> list[Item]:
        """Items with a reused call id (servers that number calls per response: ``call_0``
        every turn) renamed inside compactkit, so no rule mistakes a later call for a
        duplicate; the id goes out as it came in.

        Raises:
            FormatError: a call shares its id with an earlier call no output or user message
                came after yet (two calls of one assistant message, or of one response): no
                output could say which of them it answers; or an output answers a call an
                output read since the last call (or user message) answered already. Calls
                reusing the id of a call answered before (or left unanswered before a user
                message) are renamed.
        """
        seen, renames = self._seen_calls, self._renamed
        calls, answered = self._open_calls, self._answered
        for index, item in enumerate(items):  # (``items`` is the reader's new list: renamed
            cls = type(item)  # in place; a message, the usual item, is passed by its type)
            if cls is Message:
                if (calls or answered) and item.role != "assistant":  # type: ignore[union-attr]
                    calls.clear()
                    answered.clear()
                continue
            if cls is FunctionCall or (
                cls is not FunctionCallOutput and isinstance(item, FunctionCall)
            ):
                call_id = item.call_id  # type: ignore[union-attr]
                if call_id in calls:
                    raise _repeated(self._format, call_id, message, at, calls[call_id])
                calls[call_id] = at
                if answered:
                    answered.clear()
                if call_id in seen:
                    renamed = f"{call_id}{_ID_SEP}{len(seen)}"
                    renames[call_id] = renamed
                    item = items[index] = item.model_copy(update={"call_id": renamed})
                elif renames:
                    renames.pop(call_id, None)
                seen[item.call_id] = None  # type: ignore[union-attr]
            elif isinstance(item, FunctionCallOutput):
                if calls:
                    calls.clear()
                call_id = item.call_id
                if call_id in answered:
                    first = answered[call_id]
                    raise _repeated(self._format, call_id, message, at, first, output=True)
                answered[call_id] = at
                inner = renames.get(call_id, call_id)
                state = seen.get(inner, False)
                if state:  # the latest call with this id was answered (before a call or input)
                    raise _answered_before(self._format, call_id, message, at)
                if state is None:  # (False: a call never read, which the prompt repairs)
                    seen[inner] = True  # (a value of the dict: no memory per call)
                    if self._answered_since is not None:
                        self._answered_since.append(inner)
                if inner is not call_id:
                    items[index] = item.model_copy(update={"call_id": inner})
        return items

    def _placeholder(self, message: Any, plain: Any) -> Message:
        key = uuid.uuid4().hex  # unique across processes: a stored placeholder outlives this one
        self._raw[key] = message
        self._call_ids.update(_call_ids(plain))
        extra: dict[str, Any] = {PASSTHROUGH_KEY: key}
        try:
            text = json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
            extra[PASSTHROUGH_RAW] = plain  # JSON: a memory that stores the item keeps it
        except (TypeError, ValueError):
            text = repr(plain)
        # An assistant message sits inside a tool turn without splitting it (see items.groups).
        return Message(role="assistant", content=text, pinned=True, extra=extra)

    def _answers_passed_call(self, plain: Any) -> str | None:
        if not self._call_ids or not isinstance(plain, Mapping):
            return None
        answered = {plain.get("tool_call_id"), plain.get("call_id")}
        content = plain.get("content")
        if isinstance(content, list):
            answered.update(
                block.get("tool_use_id") for block in content if isinstance(block, Mapping)
            )
        hit = sorted(str(i) for i in answered & self._call_ids)
        if not hit:
            return None
        self._call_ids.difference_update(hit)
        return f"answers call {hit[0]!r}, which was passed through"


class Checkpoint(NamedTuple):
    """A converter's reading state (``WireConverter.checkpoint``)."""

    seen: int
    renamed: dict[str, str] | None
    call_ids: set[str] | None
    raw: int
    open_calls: dict[str, int] | None
    answered: dict[str, int] | None
    answered_since: list[str]
    """The calls answered since (the reader appends to it)."""


def _repeated(
    format: MessageFormat, call_id: str, message: Any, at: int, first: int, *, output: bool = False
) -> FormatError:
    """The error for a call (``output``: an output) sharing ``call_id`` with the call (output)
    of list item ``first`` (``WireReader._unique_ids``); ``message`` is list item ``at``."""
    if output:
        fix = "keep one output per call (the provider refuses a repeated id, and no call is "
        fix += "left for the second output)"
    else:
        fix = "give each call its own id (the provider refuses a repeated id, and no output "
        fix += "could say which of the calls it answers)"
    if format == "responses":
        kind = (
            "function_call_output items answer"
            if output
            else "function_call items of one response share"
        )
        return FormatError(
            f"input items {first} and {at}: two {kind} the call_id {call_id!r}; {fix}"
        )
    if first != at:
        kind = "tool outputs answer the call" if output else "tool calls share the id"
        between = "" if output else " and no tool output comes between them"
        return FormatError(f"messages {first} and {at}: two {kind} {call_id!r}{between}; {fix}")
    plain = to_plain(message)
    key = "tool_calls" if format == "chat" else "content"
    field = "tool_use_id" if output else "id"
    parts = plain.get(key) if isinstance(plain, Mapping) else None
    where = [
        f"{key}[{position}]"
        for position, part in enumerate(parts if isinstance(parts, list) else ())
        if isinstance(part, Mapping) and part.get(field) == call_id
    ]
    named = " and ".join(where[:2]) if len(where) >= 2 else "two parts"
    verb = "answer the call" if output else "share the id"
    if not output:
        fix = fix.replace("each call", "each call in one assistant message", 1)
    return FormatError(f"message {at}: {named} {verb} {call_id!r}; {fix}")


def _answered_before(format: MessageFormat, call_id: str, message: Any, at: int) -> FormatError:
    """The error for an output of list item ``at`` answering ``call_id`` when an output read
    before a later call or user message answered that call already."""
    fix = (
        "keep one output per call (the provider refuses a second output for one call); to call "
        "again with the same id, put the new call before its output"
    )
    if format == "responses":
        what = f"input item {at}: a function_call_output answers the call_id {call_id!r}"
    elif format == "chat":
        what = f"message {at}: a tool output answers the call {call_id!r}"
    else:
        plain = to_plain(message)
        parts = plain.get("content") if isinstance(plain, Mapping) else None
        where = next(
            (
                f"content[{position}]"
                for position, part in enumerate(parts if isinstance(parts, list) else ())
                if isinstance(part, Mapping) and part.get("tool_use_id") == call_id
            ),
            "a tool_result",
        )
        what = f"message {at}: {where} answers the call {call_id!r}"
    return FormatError(f"{what}, which an earlier output answered already; {fix}")


def _call_ids(plain: Any) -> list[str]:
    if not isinstance(plain, Mapping):
        return []
    ids = [plain.get("call_id")]
    calls = plain.get("tool_calls")
    if isinstance(calls, list):
        ids += [call.get("id") for call in calls if isinstance(call, Mapping)]
    content = plain.get("content")
    if isinstance(content, list):
        ids += [
            block.get("id")
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "tool_use"
        ]
    return [i for i in ids if isinstance(i, str) and i]


_READERS: dict[MessageFormat, Callable[[list[Any]], list[Item]]] = {
    "chat": chat_to_items,
    "responses": responses_to_items,
    "anthropic": anthropic_to_items,
}
