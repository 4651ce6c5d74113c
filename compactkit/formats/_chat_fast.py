"""The items of a plain Chat Completions message, built without pydantic's validation.

A message compactor reads every new message of a conversation (``WireConverter.to_items``);
most are plain dicts of strings (a user or assistant text, an assistant's function calls, a
tool result). For those, validation only checks what the shape test here already checked (exact
``str`` values, the roles compactkit models, no fields it does not), so the items are built
directly: about a third of the cost. Anything else (content parts, extra fields, a value of
another type, an SDK object) gets ``None`` and takes ``chat_to_items``, which also names what is
wrong. Property-tested against ``chat_to_items`` (tests/formats/test_chat_fast.py): same items,
fields in the same order, the same fields set.
"""

from __future__ import annotations

from typing import Any, TypeVar

from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

__all__ = ["CHAT_MESSAGE_KEYS", "plain_call_id", "plain_chat_message_items"]

_TEXT_ROLES = frozenset({"system", "developer", "user"})
CHAT_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
"""The keys ``chat_to_items`` models: any other one is kept in ``extra`` (the general path)."""
_CALL_KEYS = frozenset({"id", "type", "function"})

_T = TypeVar("_T", Message, FunctionCall, FunctionCallOutput)


def _defaults(cls: type[Any]) -> dict[str, Any]:
    """Every field of ``cls`` in its order, with its default (``None`` for a required one:
    the builder sets those)."""
    fields = cls.model_fields
    return {name: None if info.is_required() else info.default for name, info in fields.items()}


_MESSAGE = _defaults(Message)
_CALL = _defaults(FunctionCall)
_OUTPUT = _defaults(FunctionCallOutput)


def _built(cls: type[_T], defaults: dict[str, Any], values: dict[str, Any]) -> _T:
    """``cls(**values)`` without validation: the values are of the exact types it takes.

    The instance holds what pydantic's constructor gives it: every field in the class's
    order (the defaults, then ``values``), the names passed as its fields set, no extra and
    no private state (items have neither). The fields are stored one by one, in that order,
    as ``memory._inputs.with_seq`` stores a stored item's: CPython then gives the instance a
    key-sharing ("split") dict, so a memory that takes the item as it is (numbering it in
    place: ``InMemoryMemory.add_read_items(fresh=True)``) holds the compact layout without
    copying it."""
    item = cls.__new__(cls)
    store = object.__setattr__  # the generic store: BaseModel's own refuses (frozen)
    get = values.get
    for name, default in defaults.items():
        store(item, name, get(name, default))
    store(item, "__pydantic_extra__", None)
    store(item, "__pydantic_fields_set__", set(values))
    store(item, "__pydantic_private__", None)
    return item


def plain_chat_message_items(message: Any) -> list[Item] | None:
    """``chat_to_items([message])`` for a plain chat dict (``None`` for any other message:
    the caller takes the general path, which may also raise)."""
    if type(message) is not dict or not message.keys() <= CHAT_MESSAGE_KEYS:
        return None
    role = message.get("role")
    name = message.get("name")
    content = message.get("content")
    if type(role) is not str or (name is not None and type(name) is not str):
        return None
    if role in _TEXT_ROLES:
        if type(content) is not str:
            return None
        values = {"role": role, "content": content, "name": name, "extra": None}
        return [_built(Message, _MESSAGE, values)]
    if role == "tool":
        call_id = message.get("tool_call_id")
        if type(call_id) is not str or not call_id:
            return None
        if content is None:
            content = ""
        elif type(content) is not str:
            return None
        values = {"call_id": call_id, "output": content, "name": name}
        return [_built(FunctionCallOutput, _OUTPUT, values)]
    if role == "assistant":
        return _assistant_items(message, content, name)
    return None


def _assistant_items(message: dict[str, Any], content: Any, name: str | None) -> list[Item] | None:
    if content is not None and type(content) is not str:
        return None
    calls = message.get("tool_calls") or []
    if type(calls) is not list:
        return None
    items: list[Item] = []
    if content is not None or not calls or name is not None:
        text = content if content is not None else ""
        values = {"role": "assistant", "content": text, "name": name, "extra": None}
        items.append(_built(Message, _MESSAGE, values))
    for call in calls:
        call_id = plain_call_id(call)
        if call_id is None:
            return None
        function = call["function"]
        values = {
            "call_id": call_id,
            "name": function["name"],
            "arguments": function.get("arguments", "{}"),
        }
        items.append(_built(FunctionCall, _CALL, values))
    return items


def plain_call_id(call: Any) -> str | None:
    """The id of a plain chat tool call (a dict of the keys ``chat_to_items`` models, a
    function with a string name and string arguments, a non-empty string id); ``None`` for any
    other call."""
    if type(call) is not dict or not call.keys() <= _CALL_KEYS:
        return None
    if call.get("type", "function") != "function":
        return None
    function = call.get("function")
    if type(function) is not dict or type(function.get("name")) is not str:
        return None
    if type(function.get("arguments", "{}")) is not str:
        return None
    call_id = call.get("id")
    return call_id if type(call_id) is str and call_id else None
