"""Writing folded items out for the summarizer: calls with their arguments, huge outputs cut."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from compactkit.budget.tokens import TokenCounter
from compactkit.items import (
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    Reasoning,
    TextPart,
)

_ARGUMENT_CHARS = 400


def _original(item: Item, originals: Mapping[str, FunctionCallOutput]) -> Item:
    if isinstance(item, FunctionCallOutput):
        return originals.get(item.call_id, item)
    return item


def _describe(
    item: Item, names: Mapping[str, str], cap: int, counter: TokenCounter
) -> tuple[str, int]:
    """One item as a transcript line — who, what (tool calls with name and arguments), the
    content cut in the middle when over ``cap`` tokens — and about how many tokens it holds."""
    content: str | tuple[Any, ...] | None = None
    if isinstance(item, Message):
        head, body, content = f"[{item.role}]", item.text, item.content
    elif isinstance(item, FunctionCall):
        head, body = f"[assistant called {item.name} (call {item.call_id})]", _arguments(item)
    elif isinstance(item, FunctionCallOutput):
        name = item.name or names.get(item.call_id, "a tool")
        failed = " (error)" if item.is_error else ""
        head, body, content = (
            f"[{name} returned{failed} (call {item.call_id})]",
            item.text,
            item.output,
        )
    else:
        head = "[assistant reasoning]"
        body = item.text if isinstance(item, Reasoning) and item.text else "(opaque)"
    # A plain-text item's count is cached by the counter: no need to encode it again.
    tokens = counter.count_item(item) if isinstance(content, str) else counter.count_text(body)
    body = body.replace("</conversation-part", "<\\/conversation-part")
    if tokens > cap:
        body = _cut(body, cap, tokens)
        tokens = cap + 32
    if content is not None:
        body += _attachments(content)
    return f"{head} {body}", tokens + counter.count_text(head) + 1


def _attachments(content: str | tuple[Any, ...]) -> str:
    if isinstance(content, str):
        return ""
    images = sum(1 for part in content if isinstance(part, ImagePart))
    other = sum(1 for part in content if not isinstance(part, ImagePart | TextPart))
    notes = [f"{images} image(s)"] * bool(images) + [f"{other} other part(s)"] * bool(other)
    return f" [attached: {', '.join(notes)}]" if notes else ""


def _arguments(call: FunctionCall) -> str:
    """``key=value`` pairs of a call's arguments, long values shortened with a note."""
    parsed = call.parsed_arguments()
    if not parsed:
        raw = call.arguments.strip()
        return "(no arguments)" if raw in ("", "{}") else _shorten(raw, _ARGUMENT_CHARS * 2)
    pairs = []
    for key, value in parsed.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        pairs.append(f"{key}={_shorten(text, _ARGUMENT_CHARS)!s}")
    return ", ".join(pairs)


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [+{len(text) - limit:,} chars]"


def _cut(text: str, cap: int, tokens: int) -> str:
    """``text`` (``tokens`` long) within about ``cap`` tokens: head and tail kept, the middle
    replaced by a note."""
    keep = max(16, cap - 40)
    chars_per_token = len(text) / max(tokens, 1)
    head = int(keep * 2 / 3 * chars_per_token)
    tail = int(keep / 3 * chars_per_token)
    omitted = tokens - keep
    return (
        f"{text[:head]}\n[… {omitted:,} of {tokens:,} tokens cut here; the exact facts of the "
        f"whole output are in <exact-facts> …]\n{text[len(text) - tail :]}"
    )
