"""What a counter accepts: the checks that turn a wrong argument (a provider dict, a string, an
SDK object, one tool instead of a list) into a ``ConfigError`` saying how to convert it. They
run only once pricing has failed or at a public entry, and are kept apart from ``tokens.py`` so
that module holds the counting rules themselves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from compactkit.errors import ConfigError
from compactkit.items import (
    ITEM_CLASSES,
    Tool,
)

ITEM_TYPES = ITEM_CLASSES


def check_item(item: object) -> None:
    """Raise ``ConfigError`` saying how to convert ``item`` unless it is a compactkit item."""
    if isinstance(item, ITEM_TYPES):
        return
    kind = type(item).__name__
    raise ConfigError(
        f"counters count compactkit items, got {kind}: {_shown(item)}; convert provider "
        "messages first (chat_to_items, responses_to_items, anthropic_to_items, or "
        "load_transcript for any of the three)"
    )


def check_text(text: object) -> None:
    if not isinstance(text, str):
        raise ConfigError(
            f"count_text takes a string, got {type(text).__name__}: {_shown(text)}; "
            "count items with count(items)"
        )


def check_tools(tools: Sequence[object]) -> None:
    if isinstance(tools, (str, bytes, Mapping, Tool)):
        raise ConfigError(f"tools must be a list of Tools, got one {type(tools).__name__}")
    for tool in tools:
        if not isinstance(tool, Tool):
            raise ConfigError(
                f"tools must be compactkit Tools, got {type(tool).__name__}: {_shown(tool)}; "
                "convert provider schemas with tools_from_chat, tools_from_responses or "
                "tools_from_anthropic"
            )


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."
