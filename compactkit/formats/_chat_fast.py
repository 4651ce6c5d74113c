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

from pydantic import BaseModel

from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message

__all__ = ["CHAT_MESSAGE_KEYS", "plain_call_id", "plain_chat_message_items"]

_TEXT_ROLES = frozenset({"system", "developer", "user"})
CHAT_MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_call_id"})
"""The keys ``chat_to_items`` models: any other one is kept in ``extra`` (the general path)."""
_CALL_KEYS = frozenset({"id", "type", "function"})

_T = TypeVar("_T", Message, FunctionCall, FunctionCallOutput)


def _layout(cls: type[Any], given: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """Every field of ``cls`` in its order, and the defaults of the fields before ``given``
    (the fields a builder sets, which must be the class's last ones, in its order)."""
    names = tuple(cls.model_fields)
    assert names[len(names) - len(given) :] == given, (cls, given)
    head = names[: len(names) - len(given)]
    return names, tuple(cls.model_fields[name].default for name in head)


_MESSAGE_GIVEN = ("role", "content", "name", "extra")
_CALL_GIVEN = ("call_id", "name", "arguments", "extra")
_OUTPUT_GIVEN = ("call_id", "output", "name", "is_error", "extra")
_MESSAGE, _MESSAGE_HEAD = _layout(Message, _MESSAGE_GIVEN)
_CALL, _CALL_HEAD = _layout(FunctionCall, _CALL_GIVEN)
_OUTPUT, _OUTPUT_HEAD = _layout(FunctionCallOutput, _OUTPUT_GIVEN)
# The fields set of each kind of item built here, one set shared by all of them (as
# ``memory._inputs.with_seq`` shares one among stored items): a frozen model's set is never
# changed in place (pydantic only adds to the set of a model being assigned to, which a frozen
# one refuses, or of a copy it has just made). The memory numbering them in place finds the
# shared set it gives them by this set's identity (``number_in_place``).
_MESSAGE_SET = {"role", "content", "name", "extra"}
_CALL_SET = {"call_id", "name", "arguments"}
_OUTPUT_SET = {"call_id", "output", "name"}


def _built(cls: type[_T], names: tuple[str, ...], values: tuple[Any, ...], given: set[str]) -> _T:
    """``cls(**dict(zip(names, values)))`` of the fields named ``given`` without validation:
    ``values`` holds every field in ``names``' (the class's) order, the defaults of the fields
    not given, and the given ones are of the exact types the class takes.

    The instance holds what pydantic's constructor gives it: every field in the class's
    order, the names passed as its fields set (``given``: a set shared by the items of a
    kind), no extra and no private state (items have
    neither). The fields are stored one by one, in that order, as ``memory._inputs.with_seq``
    stores a stored item's: CPython then gives the instance a key-sharing ("split") dict, so
    a memory that takes the item as it is (numbering it in place:
    ``InMemoryMemory.add_read_items(fresh=True)``) holds the compact layout without copying
    it."""
    item = _new(cls)
    store = _store  # (a local in the loop: measured a quarter faster than the global)
    for name, value in zip(names, values, strict=False):  # (equal lengths: the layouts')
        store(item, name, value)
    _set_extra(item, None)
    _set_fields_set(item, given)
    _set_private(item, None)
    return item


_new = object.__new__  # (the item classes define no ``__new__``: checked at import below)
_store = object.__setattr__  # the generic store: BaseModel's own refuses (frozen)
assert all(cls.__new__ is _new for cls in (Message, FunctionCall, FunctionCallOutput))

# BaseModel's slots, stored through their descriptors (about half the cost of
# ``object.__setattr__``'s generic look-up: three per item read).
_set_extra, _set_fields_set, _set_private = (
    BaseModel.__dict__[name].__set__
    for name in ("__pydantic_extra__", "__pydantic_fields_set__", "__pydantic_private__")
)


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
        values = (*_MESSAGE_HEAD, role, content, name, None)
        return [_built(Message, _MESSAGE, values, _MESSAGE_SET)]
    if role == "tool":
        call_id = message.get("tool_call_id")
        if type(call_id) is not str or not call_id:
            return None
        if content is None:
            content = ""
        elif type(content) is not str:
            return None
        values = (*_OUTPUT_HEAD, call_id, content, name, None, None)
        return [_built(FunctionCallOutput, _OUTPUT, values, _OUTPUT_SET)]
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
        values = (*_MESSAGE_HEAD, "assistant", text, name, None)
        items.append(_built(Message, _MESSAGE, values, _MESSAGE_SET))
    for call in calls:
        read = _plain_call(call)
        if read is None:
            return None
        values = (*_CALL_HEAD, *read, None)
        items.append(_built(FunctionCall, _CALL, values, _CALL_SET))
    return items


def _plain_call(call: Any) -> tuple[str, str, str] | None:
    """``(id, name, arguments)`` of a plain chat tool call (``plain_call_id``'s rules);
    ``None`` for any other call."""
    if type(call) is not dict or not call.keys() <= _CALL_KEYS:
        return None
    if call.get("type", "function") != "function":
        return None
    function = call.get("function")
    if type(function) is not dict:
        return None
    name, arguments = function.get("name"), function.get("arguments", "{}")
    if type(name) is not str or type(arguments) is not str:
        return None
    call_id = call.get("id")
    return (call_id, name, arguments) if type(call_id) is str and call_id else None


def plain_call_id(call: Any) -> str | None:
    """The id of a plain chat tool call (a dict of the keys ``chat_to_items`` models, a
    function with a string name and string arguments, a non-empty string id); ``None`` for any
    other call."""
    read = _plain_call(call)
    return read[0] if read is not None else None
