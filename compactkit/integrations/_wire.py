"""Message lists in the three wire formats <-> items, one message at a time.

A message compactkit cannot read (a shape the provider allows that compactkit does not model:
a Responses ``web_search_call`` or ``compaction`` item, a legacy ``function`` message, a custom
tool call) is never dropped: it becomes a pinned placeholder item (so no projection omits it and
no compaction folds it) that counts as its JSON text, and goes out again exactly as it came in.
Outputs answering a call that was passed through are passed through with it.
"""

from __future__ import annotations

import json
import re
import uuid
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple, TypeAlias

from compactkit.errors import ConfigError, FormatError
from compactkit.formats import (
    anthropic_to_items,
    chat_to_items,
    items_to_anthropic,
    items_to_chat,
    items_to_responses,
    responses_to_items,
    sdk_format,
    to_plain,
    tools_from_anthropic,
    tools_from_chat,
    tools_from_responses,
)
from compactkit.formats.chat import plain_chat_message_items
from compactkit.integrations._wire_resume import OUT_END, Resume, starts_with, unlike
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool
from compactkit.items.view import sliceable

__all__ = ["MessageFormat", "Original", "Passthrough", "WireConverter", "detect_format"]

MessageFormat: TypeAlias = Literal["chat", "responses", "anthropic"]
"""The message list formats: OpenAI Chat Completions messages, OpenAI Responses input items,
Anthropic Messages."""

Original: TypeAlias = "tuple[Any, ...]"
"""The message as it came in, then the stored items it became: one flat tuple (a compactor
keeps one per message for the whole session; a nested tuple of the items was 48+ bytes more
each)."""

FORMATS: tuple[MessageFormat, ...] = ("chat", "responses", "anthropic")
PASSTHROUGH_KEY = "__compactkit_passthrough__"
PASSTHROUGH_RAW = "__compactkit_raw__"
_CONVERTED_LIMIT = 4096
_ID_SEP = "\u2063#"  # invisible separator: marks compactkit's suffix on a reused call id
_INNER_SUFFIX = re.compile(_ID_SEP + r"\d+")

_ANTHROPIC_BLOCKS = {
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "image",
    "document",
}
_RESPONSES_PARTS = {"input_text", "output_text", "input_image", "input_file", "refusal"}


def detect_format(messages: Iterable[Any]) -> MessageFormat | None:
    """The format ``messages`` are in, or ``None`` when they read the same in every format
    (plain role/content text messages)."""
    for message in messages:
        format = sdk_format(message)
        if format is not None:
            return format
        if not isinstance(message, Mapping):
            continue
        if "type" in message:  # chat and Anthropic messages never carry a top-level "type"
            return "responses"
        if message.get("role") == "tool" or "tool_calls" in message or "tool_call_id" in message:
            return "chat"
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            format = sdk_format(part)
            if format is not None:
                return format
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind in _ANTHROPIC_BLOCKS:
                return "anthropic"
            if kind in _RESPONSES_PARTS:
                return "responses"
            if kind == "image_url":
                return "chat"
    return None


@dataclass(frozen=True)
class Passthrough:
    """A message compactkit could not read, passed through untouched."""

    index: int
    """Its position in the list it came in."""
    reason: str
    """Why it could not be read."""
    kind: Literal["passthrough"] = "passthrough"


class WireConverter:
    """Converts the messages of one conversation, remembering what it passed through.

    Args:
        format: The conversation's format (may be set later, while only plain text messages,
            which read the same in every format, were converted).
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
        # Every call id read (renamed ones as renamed; their number is part of a renamed id):
        # a dict used as a set, a fifth of a set's memory at 5,000 ids.
        self._seen_calls: dict[str, None] = {}
        self._renamed: dict[str, str] = {}  # a reused call id -> its latest call's inner id
        # The calls read since the last output or user/system message, by call id as given
        # (-> the index of their message): a call reusing one of their ids is ambiguous
        self._open_calls: dict[str, int] = {}
        # Runs converted before (masked outputs, the summary), by the ids of their items: the
        # same run recurs every call until the next compaction replaces it.
        self._converted: dict[tuple[int, ...], tuple[tuple[Item, ...], Any, list[Any]]] = {}
        self._resumes: dict[str, Resume] = {}  # by slot: the last call to resume from

    @property
    def format(self) -> MessageFormat:
        """The format messages are written in (see the class)."""
        return self._format

    @format.setter
    def format(self, format: MessageFormat) -> None:
        if format != self._format:
            # What was written in the format so far is written anew: a resumed prompt would
            # keep messages of the other format (Anthropic's were never merged), and a run
            # converted before would come back in it.
            self._resumes.clear()
            self._converted.clear()
        self._format = format

    # -- reading ---------------------------------------------------------------------------

    def to_items(
        self, message: Any, index: int, on_passthrough: Callable[[Passthrough], None]
    ) -> list[Item]:
        """The items of one message; a placeholder (reported to ``on_passthrough``) when it
        cannot be read."""
        if self.format == "chat" and not self._call_ids:  # (no call passed through to answer)
            fast = plain_chat_message_items(message)  # a plain dict: built unvalidated
            if fast is not None:
                return self._unique_ids(fast, message, index)
        plain = to_plain(message)
        reason = self._answers_passed_call(plain)
        if reason is None:
            try:
                items = _READERS[self.format]([plain])
            except (FormatError, ValueError, TypeError, AttributeError) as exc:
                reason = str(exc).removeprefix("message 0: ").removeprefix("input item 0: ")
            else:  # (outside the try: a repeated call id is an error, never a passthrough)
                return self._unique_ids(items, plain, index)
        on_passthrough(Passthrough(index=index, reason=reason))
        return [self._placeholder(message, plain)]

    def checkpoint(self) -> Checkpoint:
        """What ``to_items`` changes, as it is now: ``rollback`` undoes the reading of the
        messages read since (a call that raised on one of them reads them again)."""
        return Checkpoint(
            len(self._seen_calls),
            dict(self._renamed) if self._renamed else None,
            set(self._call_ids) if self._call_ids else None,
            len(self._raw),
            dict(self._open_calls) if self._open_calls else None,
        )

    def rollback(self, mark: Checkpoint) -> None:
        """Forget what ``to_items`` read since ``mark`` (``checkpoint``): renamed ids, calls
        and placeholders (dicts keep their order: the newest entries are popped)."""
        for kept, grown in ((mark.seen, self._seen_calls), (mark.raw, self._raw)):
            while len(grown) > kept:
                grown.popitem()
        self._renamed = dict(mark.renamed or {})
        self._call_ids = set(mark.call_ids or ())
        self._open_calls = dict(mark.open_calls or {})

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

    # -- writing ---------------------------------------------------------------------------

    def from_items(
        self,
        items: Sequence[Item],
        originals: Mapping[int, Original] | None = None,
        *,
        skip: int = 0,
        slot: str = "send",
    ) -> tuple[Any, list[Any]]:
        """``(system, messages)``: the items (after the first ``skip``) in this format.

        Where a run of items is exactly what one message became (``originals``, by the seq of
        its first item; the very item objects, so nothing was masked or replaced), that message
        goes out as it came in, unconverted; so do placeholders. ``system`` is Anthropic's
        top-level system prompt (``None`` for the other formats).

        A prompt that starts with the previous call's (same ``originals`` mapping, only grown)
        reuses its messages up to the last message sent as given: O(new items) in Python.
        ``slot`` names which previous call to resume from (the prompt, the history).
        """
        originals = originals if originals is not None else {}
        source = sliceable(items)  # read below len(items) only
        n = len(items)
        resume = self._resumes.pop(slot, None)  # taken: a failed call leaves none behind
        if (
            resume is not None
            and resume.originals is originals
            and resume.skip == skip
            and resume.index <= n
            and starts_with(items, resume.items, resume.index)
        ):
            start, system, out = resume.index, resume.system, resume.out
            del out[resume.sent :]  # the previous call's list was copied before it was returned
            merged_before: list[Any] = resume.merged
            runs = resume.runs
            del runs[bisect_right(runs, resume.sent, key=OUT_END) :]
        else:
            start, system, out, merged_before, runs = skip, None, [], [], []
        resumed_at = len(out)
        mark = (start, len(out), system)
        run: list[Item] = []

        def flush() -> None:
            nonlocal system
            if not run:
                return
            key = tuple(map(id, run))
            cached = self._converted.get(key)
            if cached is not None and cached[0] == tuple(run):
                run_system, messages = cached[1], cached[2]
            else:
                run_system, messages = self._convert(run)
                if len(self._converted) >= _CONVERTED_LIMIT:
                    self._converted.clear()
                self._converted[key] = (tuple(run), run_system, messages)
            if run_system is not None:
                system = _join_system(system, run_system)
            runs.append((i - len(run), i, len(out), len(out) + len(messages)))
            out.extend(messages)
            run.clear()

        i = start
        get = originals.get
        while i < n:
            item = source[i]
            original = get(item.seq)  # type: ignore[arg-type]
            if original is not None:
                end = i + len(original) - 1
                # Identity, not equality: a masked or replaced item is a different object and
                # is converted instead (tuple comparison short-circuits on identity, in C).
                if item is original[1] and (
                    end == i + 1 or (end <= n and tuple(source[i + 1 : end]) == original[2:])
                ):
                    flush()
                    out.append(original[0])
                    i = end
                    mark = (i, len(out), system)  # nothing after can change what came before
                    continue
            key = passthrough_key(item)
            if key is None:
                run.append(item)
            else:
                flush()
                out.append(self._passed(item, key))
                mark = (i + 1, len(out), system)
            i += 1
        flush()
        index, sent, mark_system = mark
        merged: list[Any] = []
        result = out
        if self.format == "anthropic":
            # Turns merge left to right: keep the merge of the messages up to the mark (what
            # follows may still merge into its last turn) and fold the rest onto a copy.
            merged = list(merged_before)
            _fold_turns(merged, out[resumed_at:sent])
            result = list(merged)
            _fold_turns(result, out[sent:])
        else:
            result = list(out)  # ``out`` is kept for the next call
        self._resumes[slot] = Resume(
            items, skip, index, out, sent, mark_system, originals, merged, runs
        )
        return system, result

    def converted_like(
        self, items: Sequence[Item], originals: Mapping[int, Original], *, like: str, slot: str
    ) -> list[Any] | None:
        """``from_items(items, originals, slot=slot)[1]``, taken from the last call of slot
        ``like`` when it converted the same items under the same ``originals`` (the very
        objects, but for equal items without a seq, which convert alike: a summary message
        rendered again); ``None`` otherwise (convert them). Not for Anthropic (its turns merge
        by role, and its summary goes as a user turn). ``slot`` resumes from it as from its own.

        A compaction's prompt is often its whole new history, which the compactor converts
        twice (what to send, the history to return): O(window) once instead of twice.
        """
        resume = self._resumes.get(like)
        if self.format == "anthropic" or resume is None or resume.originals is not originals:
            return None
        differ = unlike(items, resume.items)
        if resume.skip or differ is None:
            return None
        out = list(resume.out)
        if differ:  # runs holding an equal copy are converted again, as a call of their own
            # would: their messages are new objects, not the ones ``like`` sent (a caller may
            # edit the one list in place and not the other)
            for first, stop, at, end in resume.runs:
                if differ[bisect_left(differ, first) : bisect_left(differ, stop)]:
                    out[at:end] = self._convert(list(items[first:stop]))[1]
        self._resumes[slot] = Resume(
            items,
            0,
            resume.index,
            list(out),
            resume.sent,
            resume.system,
            originals,
            [],
            list(resume.runs),
        )
        return out

    # -- helpers ---------------------------------------------------------------------------

    def _convert(self, run: list[Item]) -> tuple[Any, list[Any]]:
        if self.format == "anthropic":
            prompt = items_to_anthropic(run)
            system, messages = prompt.system, prompt.messages
        elif self.format == "chat":
            system, messages = None, items_to_chat(run)
        else:
            system, messages = None, items_to_responses(run)
        if self._renamed:  # the inner ids (in fields, and in a mask's text) go back as given
            text = json.dumps(messages, ensure_ascii=False)
            messages = json.loads(_INNER_SUFFIX.sub("", text))
        return system, messages

    def note_calls(self, call_ids: Iterable[str]) -> None:
        """Record calls read without this converter (``_cold.read_cold``), in order, as
        ``to_items`` would have: a later call reusing one of their ids is renamed as it would
        be. The caller made sure none of them reuses an id (no renaming was due)."""
        self._open_calls.clear()
        for call_id in call_ids:
            self._renamed.pop(call_id, None)
            self._seen_calls[call_id] = None

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
                output could say which of them it answers. Calls reusing the id of a call
                answered before (or left unanswered before a user message) are renamed.
        """
        seen, renames = self._seen_calls, self._renamed
        calls = self._open_calls
        for index, item in enumerate(items):  # (``items`` is the reader's new list: renamed
            cls = type(item)  # in place; a message, the usual item, is passed by its type)
            if cls is Message:
                if calls and item.role != "assistant":  # type: ignore[union-attr]
                    calls.clear()
                continue
            if cls is FunctionCall or (
                cls is not FunctionCallOutput and isinstance(item, FunctionCall)
            ):
                call_id = item.call_id  # type: ignore[union-attr]
                if call_id in calls:
                    raise _repeated_call(self._format, call_id, message, at, calls[call_id])
                calls[call_id] = at
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
                if item.call_id in renames:
                    items[index] = item.model_copy(update={"call_id": renames[item.call_id]})
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

    def _passed(self, item: Item, key: str) -> Any:
        if key in self._raw:
            return self._raw[key]  # the very object that came in
        assert isinstance(item, Message) and item.extra is not None
        return item.extra[PASSTHROUGH_RAW]  # read back from storage

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


def _repeated_call(
    format: MessageFormat, call_id: str, message: Any, at: int, first: int
) -> FormatError:
    """The error for a call sharing ``call_id`` with the open call of list item ``first``
    (``WireConverter._unique_ids``); ``message`` is list item ``at``."""
    why = (
        "the provider refuses a repeated id, and no output could say which of the calls it answers"
    )
    if format == "responses":
        return FormatError(
            f"input items {first} and {at}: two function_call items of one response share the "
            f"call_id {call_id!r}; give each call its own call_id ({why})"
        )
    if first != at:
        return FormatError(
            f"messages {first} and {at}: two tool calls share the id {call_id!r} and no tool "
            f"output comes between them; give each call its own id ({why})"
        )
    plain = to_plain(message)
    key = "tool_calls" if format == "chat" else "content"
    parts = plain.get(key) if isinstance(plain, Mapping) else None
    where = [
        f"{key}[{position}]"
        for position, part in enumerate(parts if isinstance(parts, list) else ())
        if isinstance(part, Mapping) and part.get("id") == call_id
    ]
    named = " and ".join(where[:2]) if len(where) >= 2 else "two tool calls"
    return FormatError(
        f"message {at}: {named} share the id {call_id!r}; give each call in one assistant "
        f"message its own id ({why})"
    )


def passthrough_key(item: Item) -> str | None:
    """The key of a placeholder item (``None`` for any other item)."""
    if not isinstance(item, Message) or not item.extra:
        return None
    key = item.extra.get(PASSTHROUGH_KEY)
    return key if isinstance(key, str) else None


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


def _fold_turns(out: list[Any], messages: Iterable[Any]) -> None:
    """Append ``messages`` to ``out``, merging turns: Anthropic turns alternate, so a message
    sent as given next to a converted one of the same role (the summary before the first user
    message) is merged into one (a new dict; the messages are never changed)."""
    for message in messages:
        plain = to_plain(message)
        previous = to_plain(out[-1]) if out else None
        if (
            isinstance(plain, Mapping)
            and isinstance(previous, Mapping)
            and plain.get("role") == previous.get("role")
        ):
            out[-1] = {
                "role": plain.get("role"),
                "content": [*_blocks(previous.get("content")), *_blocks(plain.get("content"))],
            }
        else:
            out.append(message)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def _join_system(first: Any, second: Any) -> Any:
    if first is None:
        return second
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}"
    blocks = [
        *([{"type": "text", "text": first}] if isinstance(first, str) else first),
        *([{"type": "text", "text": second}] if isinstance(second, str) else second),
    ]
    return blocks


_READERS: dict[MessageFormat, Callable[[list[Any]], list[Item]]] = {
    "chat": chat_to_items,
    "responses": responses_to_items,
    "anthropic": anthropic_to_items,
}
