"""What every adapter shares: loss reporting, provider-field tagging, finding a sealed summary.

Provider fields compactkit does not model are kept in an item's ``extra``. Fields read from
Responses or Anthropic carry the key ``"__format__"`` naming their format (chat's carry none, for
compatibility with items stored before the other adapters existed), so that a writer emits only
the fields of its own format and treats the others as a loss. Keys starting with ``"__"`` are
compactkit's own markers and are never written out.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Callable, Mapping
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from compactkit.errors import ConfigError, FormatError
from compactkit.items import (
    ITEM_CLASSES,
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ProviderCompaction,
    RawPart,
    Reasoning,
    TextPart,
    Tool,
)
from compactkit.items.snapshot import SUMMARY_NAME, unseal_summary

WireFormat: TypeAlias = Literal["chat", "responses", "anthropic"]

FORMAT_KEY = "__format__"

# Fields that describe how the provider produced an item, not what the conversation says:
# dropping them on the way to another format loses nothing.
_BOOKKEEPING = frozenset({"status"})

SUMMARY_OPEN = f"<{SUMMARY_NAME} sig="

_TEXT_PART_TYPES = ("text", "input_text", "output_text")

T = TypeVar("T", Item, Tool)
M = TypeVar("M", bound=Mapping[str, Any])


def tag_extra(fields: Mapping[str, Any], format: WireFormat) -> dict[str, Any] | None:
    """``fields`` as an ``extra`` dict marked with the format they came from (``None`` if empty)."""
    if not fields:
        return None
    reserved_free(fields)
    if format == "chat":
        return dict(fields)
    return {FORMAT_KEY: format, **fields}


def reserved_free(fields: M) -> M:
    """``fields``, or a ``FormatError`` when a key starts with ``__`` (compactkit's own markers,
    which are never written out, so such a key could not come back)."""
    for key in fields:
        if isinstance(key, str) and key.startswith("__"):
            raise FormatError(
                f"the key {shown(key)} is reserved: keys starting with '__' are compactkit's own"
            )
    return fields


def extra_format(extra: Mapping[str, Any] | None) -> str:
    """The format an ``extra`` dict came from (untagged means chat)."""
    return str(extra.get(FORMAT_KEY, "chat")) if extra else "chat"


class Losses(Generic[T]):
    """What a target format cannot express: raised as ``FormatError``, or dropped and reported.

    Args:
        target: The format being written.
        lossy: Drop instead of raising.
        on_drop: Called with the item (or tool) concerned and what was dropped, when ``lossy``.
    """

    def __init__(
        self, target: WireFormat, lossy: bool, on_drop: Callable[[T, str], None] | None
    ) -> None:
        self.target = target
        self.lossy = lossy
        self.on_drop: Callable[[T, str], None] | None = on_drop

    def lose(self, subject: T, what: str) -> None:
        """Report that ``what`` (part of ``subject``) cannot be expressed in the target."""
        reason = f"{self.target} cannot express {what}"
        if not self.lossy:
            raise FormatError(
                f"{describe(subject)}: {reason}; pass lossy=True (CLI: --lossy) to drop it"
            )
        if self.on_drop is not None:
            self.on_drop(subject, reason)

    def native_extra(self, subject: T, extra: Mapping[str, Any] | None) -> dict[str, Any]:
        """The fields of ``extra`` the target can write; the others are reported as lost."""
        if not extra:
            return {}
        source = extra_format(extra)
        fields = {k: v for k, v in extra.items() if not k.startswith("__")}
        if source == self.target:
            return fields
        for key, value in fields.items():
            if key in _BOOKKEEPING or value in (None, "", [], {}):
                continue
            self.lose(subject, f"the {source} field {shown(key)} ({_short(value)})")
        return {}

    def foreign_part(self, subject: T, part: RawPart) -> TextPart | None:
        """A content part from another format: its text when ``lossy`` allows, else nothing."""
        data = part.data
        text = data.get("text")
        if data.get("type") in _TEXT_PART_TYPES and isinstance(text, str):
            dropped = sorted(k for k in data if k not in ("type", "text"))
            self.lose(subject, f"the fields {shown(dropped)} of a {part.format} text part")
            return TextPart(text=text)
        self.lose(subject, f"a {part.format} {shown(data.get('type', 'untyped'))} content part")
        return None


def check_tool_fields(
    index: int, description: Any, parameters: Any, *, schema_key: str = "parameters"
) -> None:
    """Raise ``FormatError`` unless a wire tool's description and schema have the types a
    ``Tool`` takes (a string, a JSON schema object), naming the tool and the field."""
    if description is not None and not isinstance(description, str):
        raise FormatError(
            f"tool {index}: 'description' must be a string, got {_short(description)}"
        )
    if parameters is not None and not isinstance(parameters, Mapping):
        raise FormatError(
            f"tool {index}: {shown(schema_key)} must be a JSON schema object, got {_short(parameters)}"
        )


def describe(subject: Item | Tool) -> str:
    """A short, unambiguous name for an item or tool, for error messages and drop reports."""
    if isinstance(subject, Tool):
        return f"tool {shown(subject.name)}"
    facts: list[str] = []
    if isinstance(subject, Message):
        facts.append(f"role={shown(subject.role)}")
        text = subject.text
        if text:
            facts.append(f"text={shown(text[:30] + '…' if len(text) > 30 else text)}")
    elif isinstance(subject, FunctionCall):
        facts += [f"call_id={shown(subject.call_id)}", f"name={shown(subject.name)}"]
    elif isinstance(subject, FunctionCallOutput):
        facts.append(f"call_id={shown(subject.call_id)}")
    elif isinstance(subject, (Reasoning, ProviderCompaction)):
        facts.append(f"from {shown(subject.format)}")
    if subject.id:
        facts.append(f"id={shown(subject.id)}")
    if subject.seq is not None:
        facts.append(f"seq={subject.seq}")
    return f"{subject.type} item ({', '.join(facts)})"


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # circular or too deep to write: its outline instead
        return shown(value, limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_REPR = reprlib.Repr()  # keyword arguments need Python 3.12
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 3, 60, 60, 4, 4


def shown(value: Any, limit: int = 80) -> str:
    """A short ``repr`` of any input for an error message: bounded in depth and length, so a
    huge or deeply nested value never makes the error itself fail (``repr`` recurses)."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the sealed summary inside a longer text (Anthropic's system string) ------------------------


def split_sealed_suffix(text: str) -> tuple[str, str] | None:
    """Split ``"<prefix>\\n\\n<sealed summary>"`` (or a bare sealed summary) into its parts.

    ``None`` unless the suffix's seal verifies: text that only looks like a summary stays text.
    """
    if unseal_summary(text) is not None:
        return "", text
    marker = "\n\n" + SUMMARY_OPEN
    at = text.find(marker)
    while at != -1:
        sealed = text[at + 2 :]
        if unseal_summary(sealed) is not None:
            return text[:at], sealed
        at = text.find(marker, at + 1)
    return None


def parts_text(content: str | tuple[ContentPart, ...]) -> str | None:
    """The text of content that is a string or a single text part; ``None`` otherwise."""
    if isinstance(content, str):
        return content
    if len(content) == 1 and isinstance(content[0], TextPart):
        return content[0].text
    return None


def compact_json(value: Any) -> str:
    """JSON the way OpenAI models write tool arguments: no spaces, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- argument checks at the boundary ---------------------------------------------------------


def wire_list(value: Any, caller: str, what: str, hint: str = "") -> list[Any]:
    """``value`` as a list when it is a list-like of wire entries; else a ``FormatError``.

    A dict (a whole request or transcript object), a string, bytes or ``None`` is the usual
    mistake, and iterating one would silently read its keys or characters.
    """
    if value is None or isinstance(value, (str, bytes, bytearray, Mapping)):
        got = "None" if value is None else type(value).__name__
        raise FormatError(f"{caller} takes a list of {what}, got {got}{hint}")
    try:
        return list(value)
    except TypeError:
        raise FormatError(
            f"{caller} takes a list of {what}, got {type(value).__name__}{hint}"
        ) from None


def item_list(value: Any, caller: str) -> list[Item]:
    """``value`` as a list of items; a ``FormatError`` naming ``caller`` and the fix otherwise."""
    hint = "; convert wire messages first (chat_to_items, responses_to_items, anthropic_to_items)"
    items = wire_list(value, caller, "compactkit items", hint)
    for index, item in enumerate(items):
        if not isinstance(item, ITEM_CLASSES):
            raise FormatError(
                f"{caller}: entry {index} is a {type(item).__name__}, not a compactkit item{hint}"
            )
    return items


def tool_list(value: Any, caller: str) -> list[Tool]:
    """``value`` as a list of ``Tool``; a ``FormatError`` saying how to convert wire tools."""
    hint = (
        "; convert provider tool definitions first: tools_from_chat, tools_from_responses or "
        "tools_from_anthropic"
    )
    tools = wire_list(value, caller, "compactkit Tools", hint)
    for index, tool in enumerate(tools):
        if not isinstance(tool, Tool):
            raise FormatError(
                f"{caller}: tool {index} is a {type(tool).__name__}, not a compactkit Tool{hint}"
            )
    return tools


def check_mode(mode: Any) -> None:
    """Raise ``ConfigError`` unless ``mode`` is a validator mode."""
    if mode not in ("raise", "repair"):
        raise ConfigError(f"mode must be 'raise' or 'repair', got {shown(mode)}")


def adjacent_order(items: list[Item], *, turns: bool = False) -> list[Item]:
    """``items`` reordered so that calls waiting for outputs are never separated from them.

    Responses lets anything sit between a call and its output; Chat Completions wants the tool
    messages right after the assistant message holding the calls, Anthropic wants the results in
    the very next user turn. So while calls wait for their outputs, a message (or an output of
    another call) waits until they are all in, and a new call or reasoning joins the waiting
    calls. With ``turns`` (Anthropic, where an assistant turn holds text and calls together),
    assistant text stays with the calls instead of waiting. Nothing is dropped; a history
    without such interleaving comes back unchanged. A call no later output answers (an agent
    stopped before running it) waits for nothing: it stays where it is, and what follows it
    keeps its order instead of gathering behind it to the end of the history.
    """
    answered_later = _answered_later(items)
    out: list[Item] = []
    pending: set[str] = set()
    deferred: list[Item] = []
    join_at = 0  # where the response's items go once some of its outputs are in
    answered = False  # some output of the waiting calls is already in ``out``
    for item in items:
        if isinstance(item, FunctionCallOutput) and item.call_id in pending:
            out.append(item)
            answered = True
            pending.discard(item.call_id)
            if not pending:
                out.extend(deferred)
                deferred.clear()
                answered = False
            continue
        with_calls = isinstance(item, (FunctionCall, Reasoning)) or (
            turns and isinstance(item, Message) and item.role == "assistant"
        )
        if pending and not with_calls:
            deferred.append(item)
            continue
        if pending and answered:
            out.insert(join_at, item)
            join_at += 1
        else:
            out.append(item)
            join_at = len(out)
        if isinstance(item, FunctionCall) and id(item) in answered_later:
            pending.add(item.call_id)
    out.extend(deferred)
    return out


def _answered_later(items: list[Item]) -> set[int]:
    """The ids (``id()``) of the calls some later output in ``items`` answers."""
    found: set[int] = set()
    outputs: set[str] = set()
    for item in reversed(items):
        if isinstance(item, FunctionCallOutput):
            outputs.add(item.call_id)
        elif isinstance(item, FunctionCall) and item.call_id in outputs:
            found.add(id(item))
    return found
