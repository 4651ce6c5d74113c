"""Provider messages where items are expected: a ``FormatError``/``ConfigError`` naming the
converter, never pydantic's "Unable to extract tag" or a silently wrong grouping."""

from __future__ import annotations

import pytest

from compactkit import ConfigError, chat_to_items
from compactkit.errors import FormatError
from compactkit.items import group_items, load_items

CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def test_load_items_names_the_converter_for_chat_messages() -> None:
    with pytest.raises(FormatError, match=r"item 0 has no 'type'.*chat_to_items"):
        load_items(CHAT)


def test_load_items_refuses_json_text_with_the_fix() -> None:
    with pytest.raises(FormatError, match=r"json\.loads"):
        load_items('[{"type": "message", "role": "user", "content": "hi"}]')


def test_load_items_names_the_bad_field_and_index() -> None:
    good = {"type": "message", "role": "user", "content": "hi"}
    with pytest.raises(FormatError, match=r"item 1 is not an item.*role"):
        load_items([good, {**good, "role": "tool"}])


def test_group_items_refuses_dicts_instead_of_grouping_them() -> None:
    with pytest.raises(ConfigError, match=r"got dict at index 1.*chat_to_items"):
        group_items([*chat_to_items(CHAT[:1]), CHAT[1]])  # type: ignore[list-item]
    assert [g.kind for g in group_items(chat_to_items(CHAT))] == ["user", "assistant"]
