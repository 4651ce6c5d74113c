"""How what a memory is given becomes stored items: user input, output items in any supported
format, tool outputs, the call ids seen, and ``seq`` assignment (with the compact item copy
every stored item is).

The rules of apply, restore and lineage are in ``_rules``; both are shared by every backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, TypeAlias, TypeVar, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from compactkit.errors import ConfigError, FormatError
from compactkit.formats import describe, is_sdk_object, sdk_inputs, shown
from compactkit.formats.anthropic import anthropic_to_items
from compactkit.formats.chat import chat_to_items
from compactkit.formats.responses import responses_to_items
from compactkit.items import (
    ITEM_CLASSES,
    ITEMS_ADAPTER,
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    ProviderCompaction,
    RawPart,
    Reasoning,
    TextPart,
)
from compactkit.items.snapshot import (
    is_summary_message,
)

UserInput: TypeAlias = str | Message | Sequence[ContentPart]
"""What ``add_user_input`` accepts: text, a ready ``Message``, or content parts."""

OutputItem: TypeAlias = Item | Mapping[str, Any] | BaseModel
"""What ``add_output_items`` accepts: items, OpenAI chat message dicts, dumped items, or the SDK
objects as they come back (an OpenAI ``ChatCompletionMessage``, Responses output items,
Anthropic content blocks or an Anthropic ``Message``)."""

_FROM_FORMAT = {
    "chat": chat_to_items,
    "responses": responses_to_items,
    "anthropic": anthropic_to_items,
}

_ItemT = TypeVar(
    "_ItemT", bound="Message | FunctionCall | FunctionCallOutput | Reasoning | ProviderCompaction"
)
_EXACT_ITEM_TYPES = frozenset(ITEM_CLASSES)
_PART_TYPES = (TextPart, ImagePart, RawPart)


def user_input_item(value: object) -> Message:
    """The message ``add_user_input(value)`` stores."""
    if isinstance(value, Message):
        return _checked(value)
    if isinstance(value, str):
        return _checked(Message(role="user", content=value))
    if isinstance(value, Sequence) and all(isinstance(p, _PART_TYPES) for p in value):
        return _checked(Message(role="user", content=tuple(value)))
    raise ConfigError(
        f"add_user_input takes text, a Message or content parts, got {type(value).__name__}: "
        f"{shown(value)}"
    )


def output_items(values: Iterable[object], *, summaries_checked: bool = False) -> list[Item]:
    """The items ``add_output_items(values)`` stores (chat dicts and SDK objects converted, in
    order). ``summaries_checked``: the caller made sure that no value is an item holding a
    rendered summary (``MessageCompactor`` does), so a list of items is not checked for one
    again."""
    if type(values) is list and all(map(_EXACT_ITEM_TYPES.__contains__, map(type, values))):
        # Items only (what ``MessageCompactor`` hands its memory): no SDK object or dict to
        # convert, and an item never joins a run of Anthropic blocks, so ``_converted_outputs``
        # would hand back each one as it is. (Exact types: a subclass takes the general path;
        # an exact list passes the checks below, which cost more than this one.)
        if summaries_checked:
            return list(map(_storable, values))
        return [_checked(value) for value in values]
    if values is None or not isinstance(values, Iterable):
        raise ConfigError(
            f"add_output_items takes a list of items or chat messages, got {type(values).__name__}"
        )
    if isinstance(values, (Mapping, str, *ITEM_CLASSES)) or is_sdk_object(values):
        raise ConfigError(
            f"add_output_items takes a list of items or chat messages, got one "
            f"{type(values).__name__}; wrap it in a list"
        )
    return _converted_outputs(values)


def _converted_outputs(values: Iterable[object]) -> list[Item]:
    """``output_items`` of any accepted values: SDK objects and dicts converted, in order."""
    items: list[Item] = []
    for index, format, value in sdk_inputs(values):
        if format is not None:
            try:
                items.extend(_checked(i) for i in _FROM_FORMAT[format]([value]))
            except FormatError as exc:
                raise ConfigError(f"output item {index} ({format} SDK object): {exc}") from exc
        elif isinstance(value, ITEM_CLASSES):
            items.append(_checked(value))
        elif (
            isinstance(value, Mapping)
            and value.get("type") == "compaction"
            and "format" not in value
            and "encrypted_content" in value
        ):  # an OpenAI compaction item as a dict (``CompactedResponse.model_dump()["output"]``)
            try:
                items.extend(_checked(i) for i in responses_to_items([value]))
            except FormatError as exc:
                raise ConfigError(
                    f"output item {index} (a Responses compaction item): {exc}"
                ) from exc
        elif isinstance(value, Mapping) and "type" in value:
            try:
                items.extend(_checked(i) for i in ITEMS_ADAPTER.validate_python([value]))
            except ValidationError as exc:
                raise ConfigError(
                    f"output item {index} is neither a compactkit item nor a chat message "
                    f"({exc.error_count()} validation errors); convert Responses or Anthropic "
                    "dicts with compactkit.formats first"
                ) from exc
        elif isinstance(value, Mapping):
            items.extend(_checked(i) for i in chat_to_items([value]))
        else:
            raise ConfigError(
                f"output item {index} must be an item, a chat message dict or an OpenAI/"
                f"Anthropic SDK object, got {type(value).__name__}"
            )
    return items


def tool_output_item(
    call_id: object,
    output: str | Sequence[ContentPart],
    *,
    name: str | None = None,
    is_error: bool | None = None,
) -> FunctionCallOutput:
    """The item ``add_tool_output`` stores; a missing call id is an error, never a silent drop."""
    if not isinstance(call_id, str) or not call_id:
        raise ConfigError(
            f"a tool output needs the call id of the call it answers, got {shown(call_id)}; "
            "give calls without an id one (the runtime uses 'tool_step_<step>_<index>')"
        )
    if isinstance(output, str):
        content: str | tuple[ContentPart, ...] = output
    elif (
        isinstance(output, Sequence)
        and not isinstance(output, (bytes, bytearray))
        and all(isinstance(part, _PART_TYPES) for part in output)
    ):
        content = tuple(cast(Sequence[ContentPart], output))
    else:
        raise ConfigError(
            f"the output of call {call_id!r} must be text or content parts, got "
            f"{type(output).__name__}: {shown(output)}; serialise it first (json.dumps for data, "
            "'' for a tool that returned nothing)"
        )
    return _checked(
        FunctionCallOutput(call_id=call_id, output=content, name=name, is_error=is_error)
    )


def _checked(item: _ItemT) -> _ItemT:
    if is_summary_message(item):
        raise ConfigError(
            "a rendered summary message cannot be stored as an item (it would be summarised as "
            "conversation); to load a conversation read back from memory.items, use "
            "memory.restore(MemorySnapshot.from_items(items))"
        )
    return _storable(item)


def _storable(item: _ItemT) -> _ItemT:
    """``item`` as a memory stores it (without a seq), when every store can take it; else a
    ``ConfigError`` saying why (``_checked`` without its summary check)."""
    try:  # what every backend and provider must take: serialisable, valid Unicode
        _check_storable(item)
    except (PydanticSerializationError, ValueError, RecursionError) as exc:
        raise ConfigError(
            f"{describe(item)} cannot be stored: {str(exc)[:120]}; text must be valid Unicode "
            "(no lone surrogates: clean it with text.encode('utf-8', 'replace').decode()), "
            "numbers finite, and content not nested too deeply"
        ) from None
    if item.seq is not None:
        return cast(_ItemT, item.model_copy(update={"seq": None}))  # the memory assigns seqs
    return item


def _check_storable(item: Item) -> None:
    """Raise ``ValueError`` when ``item`` would not come back from a store as it went in: a lone
    surrogate (not valid Unicode), NaN or infinity in provider data (JSON writes ``null``), or
    data nested too deeply to serialise. Cheap on the append path: strings are only encoded."""
    fields = _PLAIN_TEXT.get(type(item))
    if fields is not None:
        texts = fields(item)  # (its extra first: ``None`` passes the loop's test)
        # Most items: no extra, and the content (the output, the arguments) is a string.
        if texts[0] is None and type(texts[-1]) is str:
            for text in texts:
                # UnicodeEncodeError (a ValueError) on a lone surrogate; an ASCII string holds
                # none (``isascii`` reads a flag of the string: O(1), where encoding copies it)
                if text is not None and not text.isascii():
                    text.encode("utf-8")
            return
    _check_storable_generally(item)


_PLAIN_TEXT: dict[type, Callable[[Any], tuple[Any, ...]]] = {
    Message: attrgetter("extra", "name", "content"),
    FunctionCall: attrgetter("extra", "call_id", "name", "arguments"),
    FunctionCallOutput: attrgetter("extra", "call_id", "name", "output"),
}
"""An item of each exact class's extra, then its text fields in the order the general check
reads them, its content (or output, or arguments) last: with no extra and a string content,
these are every text ``_check_storable_generally`` checks."""


def _check_storable_generally(item: Item) -> None:
    """``_check_storable`` of any item (the reference: content parts and provider data)."""
    if isinstance(item, (Reasoning, ProviderCompaction)):
        _check_data(item.payload)
        return
    if item.extra is not None:  # (most items carry none)
        _check_data(item.extra)
    texts: list[str | None] = []
    if isinstance(item, FunctionCall):
        texts += [item.call_id, item.name, item.arguments]
    else:
        content = item.content if isinstance(item, Message) else item.output
        texts += [item.call_id if isinstance(item, FunctionCallOutput) else None, item.name]
        for part in (content,) if isinstance(content, str) else content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, TextPart):
                texts.append(part.text)
            elif isinstance(part, ImagePart):
                texts.append(part.url)
            else:
                _check_data(part.data)
    for text in texts:
        # UnicodeEncodeError (a ValueError) on a lone surrogate; an ASCII string holds none
        # (``isascii`` reads a flag of the string: O(1), where encoding copies it)
        if text is not None and not text.isascii():
            text.encode("utf-8")


def _check_data(value: object, depth: int = 0) -> None:
    if depth > 200:
        raise ValueError("provider data nested more than 200 levels deep")
    if isinstance(value, str):
        if not value.isascii():  # (an ASCII string holds no lone surrogate)
            value.encode("utf-8")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value!r} in provider data is not a JSON number (it loads back as null)")
    elif isinstance(value, Mapping):
        for key, entry in value.items():
            _check_data(key, depth + 1)
            _check_data(entry, depth + 1)
    elif isinstance(value, (list, tuple)):
        for entry in value:
            _check_data(entry, depth + 1)


@dataclass
class CallIndex:
    """The call ids a memory has seen, to refuse outputs for unknown or answered calls."""

    calls: set[str] = field(default_factory=set)
    """Call ids of every stored function call (archived ones included)."""
    answered: set[str] = field(default_factory=set)
    """Call ids of every stored function call output."""

    @classmethod
    def of(cls, items: Iterable[Item]) -> CallIndex:
        """The index of ``items``."""
        index = cls()
        for item in items:
            index.add(item)
        return index

    def add(self, item: Item) -> None:
        """Record ``item``'s call id, if it has one."""
        if isinstance(item, FunctionCall):
            self.calls.add(item.call_id)
        elif isinstance(item, FunctionCallOutput):
            self.answered.add(item.call_id)

    def check(self, items: Sequence[Item], *, accept_unknown: bool) -> None:
        """Raise ``ConfigError`` unless ``items`` can be appended to a memory with this index
        (``check_batch``'s rules)."""
        check_batch(items, self.calls, self.answered.__contains__, accept_unknown=accept_unknown)


def check_batch(
    items: Sequence[Item],
    stored_calls: Container[str],
    is_answered: Callable[[str], bool],
    *,
    accept_unknown: bool,
) -> None:
    """Raise ``ConfigError`` unless ``items`` can be appended to a memory whose stored calls
    are ``stored_calls`` and whose answered calls ``is_answered`` tells.

    Refused: a second call with a call id already used, an output for a call never seen
    (unless ``accept_unknown``) and a second output for one call. Only the batch's own ids
    are collected: the stored ones are looked up, never copied, so a check costs O(batch),
    not O(every call id stored).
    """
    calls: set[str] = set()
    answered: set[str] = set()
    for item in items:
        if type(item) is Message:  # (by type: a failed isinstance against a pydantic class
            continue  # goes through ABCMeta, several times the cost)
        if isinstance(item, FunctionCall):
            if item.call_id in calls or item.call_id in stored_calls:
                raise ConfigError(
                    f"call id {item.call_id!r} is already used by a call in this memory; "
                    "call ids must be unique within a session"
                )
            calls.add(item.call_id)
        elif isinstance(item, FunctionCallOutput):
            if item.call_id in answered or is_answered(item.call_id):
                raise ConfigError(
                    f"call {item.call_id!r} already has an output; each call is answered "
                    "exactly once"
                )
            known = item.call_id in calls or item.call_id in stored_calls
            if not known and not accept_unknown:
                raise ConfigError(
                    f"tool output for unknown call id {item.call_id!r}: no function call "
                    "with this id was stored; store the call first (add_output_items) or "
                    "build the memory with accept_unknown_call_ids=True"
                )
            answered.add(item.call_id)


def assign_seqs(items: Iterable[Item], next_seq: int) -> tuple[list[Item], int]:
    """Give each item without a ``seq`` the next one; returns the items and the new counter."""
    out: list[Item] = []
    for item in items:
        if item.seq is None:
            item = with_seq(item, next_seq)
            next_seq += 1
        out.append(item)
    return out, next_seq


_FIELDS_SETS: dict[tuple[type, frozenset[str]], set[str]] = {}


def with_seq(item: Item, seq: int) -> Item:
    """``item.model_copy(update={"seq": seq})``, built to take less memory: a memory holds one
    copy per stored item for the whole session.

    Cost model: the same O(fields) as the plain version, about half the bytes per item.
    The plain version copies the item's ``__pydantic_fields_set__`` into a new set (216 bytes)
    and its ``__dict__`` into a new combined dict (~270 bytes for a message). Here one
    fields-set per item kind is shared by every stored item, and the instance dict is filled
    by attribute stores on the new object, so CPython gives it a key-sharing ("split") table:
    the keys are stored once per class, each item holds only its values (~100 bytes). The
    fields go in the item's own order, the order every item of a class has, which keeps the
    table shared (another order would only fall back to a combined dict: same values).

    Sharing the set is safe because items are frozen: pydantic only changes the set of a
    model being assigned to (refused) or of a copy it has just made (``model_copy`` copies the
    set before updating it). Property-tested against ``model_copy``
    (tests/memory/test_with_seq.py).
    """
    cls = type(item)
    fields = item.__pydantic_fields_set__
    key = (cls, frozenset(fields))
    shared = _FIELDS_SETS.get(key)
    if shared is None:
        shared = _FIELDS_SETS.setdefault(key, {*fields, "seq"})
    copied = cls.__new__(cls)
    store = object.__setattr__  # the generic store: BaseModel's own refuses (frozen)
    for name, value in item.__dict__.items():
        store(copied, name, seq if name == "seq" else value)
    store(copied, "__pydantic_extra__", None)  # extra="forbid": none
    store(copied, "__pydantic_fields_set__", shared)
    store(copied, "__pydantic_private__", None)  # items hold no private state
    return copied


def number_in_place(item: Item, seq: int) -> None:
    """``with_seq(item, seq)``'s item made of ``item`` itself, for an item its caller has just
    built and hands over (no one else holds it, so no one sees it change): its ``seq`` is
    stored and it takes the shared fields-set, as ``with_seq``'s copy would. An item built by
    attribute stores in its fields' order (``formats._chat_fast``) keeps the compact split
    dict ``with_seq`` gives; any other keeps its own (same values, only bigger). Property-
    tested against ``with_seq`` and ``model_copy`` (tests/memory/test_with_seq.py,
    test_read_items.py)."""
    fields = item.__pydantic_fields_set__
    known = _NUMBERED.get(id(fields))
    if known is not None and known[0] is fields and known[1] is type(item):
        shared = known[2]  # a fields set shared by a reader's items (``formats._chat_fast``)
    else:
        key = (type(item), frozenset(fields))
        found = _FIELDS_SETS.get(key)
        shared = found if found is not None else _FIELDS_SETS.setdefault(key, {*fields, "seq"})
        if len(_NUMBERED) >= _NUMBERED_LIMIT:
            _NUMBERED.clear()
        _NUMBERED[id(fields)] = (fields, type(item), shared)  # (the set kept: its id stays its)
    object.__setattr__(item, "seq", seq)  # the generic store: BaseModel's own refuses (frozen)
    _set_fields_set(item, shared)  # (a slot: its descriptor's store costs less)


_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__


_NUMBERED: dict[int, tuple[set[str], type, set[str]]] = {}
"""The shared fields set ``number_in_place`` gave the latest items, by the identity of the set
they had: a reader that builds its items with one shared set per kind (``formats._chat_fast``)
finds it here, without the frozenset key. Each entry holds its set, so an id found is that
set's; cleared when full (items built with sets of their own only pass through)."""
_NUMBERED_LIMIT = 64


def _share_item_keys() -> None:
    """Number one item of each kind at import, so each class's shared key table is laid out
    in its fields' order before anything else touches it (measured: left to the first stored
    item of a running session, the table was sometimes unusable and every stored item got a
    combined dict again; correct either way, only bigger)."""
    for item in (
        Message(role="user", content=""),
        FunctionCall(call_id="", name=""),
        FunctionCallOutput(call_id="", output=""),
        Reasoning(format="responses", payload={}),
        ProviderCompaction(format="responses", payload={}),
    ):
        with_seq(item, 0)


_share_item_keys()
