"""Round trips between the three wire formats, over random valid conversations.

chat <-> items <-> responses <-> items <-> anthropic give back the original wherever both formats
can express it; what one cannot express is refused, or dropped and reported when lossy.
"""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.errors import FormatError
from compactkit.formats.anthropic import anthropic_to_items, items_to_anthropic
from compactkit.formats.chat import chat_to_items, items_to_chat, validate_chat
from compactkit.formats.responses import items_to_responses, responses_to_items
from compactkit.formats.validate import validate_anthropic, validate_items, validate_responses
from compactkit.items import (
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    Reasoning,
    TextPart,
)
from compactkit.items.snapshot import MemorySnapshot, summary_message

TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
IMAGE = st.one_of(
    st.builds(lambda n: ImagePart(url=f"https://img.example/{n}.png"), st.integers(0, 99)),
    st.builds(
        lambda raw: ImagePart(url="data:image/png;base64," + base64.b64encode(raw).decode()),
        st.binary(min_size=1, max_size=8),
    ),
)
ARGUMENTS = st.dictionaries(
    st.text("abcxyz_", min_size=1, max_size=5),
    st.one_of(st.integers(-5, 5), st.booleans(), TEXT, st.lists(st.integers(0, 3), max_size=2)),
    max_size=3,
).map(lambda d: json.dumps(d, ensure_ascii=False, separators=(",", ":")))


@st.composite
def contents(draw: st.DrawFn, *, images: bool) -> str | tuple[ContentPart, ...]:
    """String content, or parts that no format reads back differently (not a lone text part)."""
    if not draw(st.booleans()):
        return draw(TEXT)
    part = (
        st.one_of(TEXT.map(lambda t: TextPart(text=t)), IMAGE)
        if images
        else TEXT.map(lambda t: TextPart(text=t))
    )
    parts = draw(st.lists(part, min_size=1, max_size=3))
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        parts.append(TextPart(text=draw(TEXT)))
    return tuple(parts)


@st.composite
def conversations(draw: st.DrawFn, *, reasoning: str | None = None) -> list[Item]:
    """A valid agent conversation: instructions, maybe a summary, then alternating turns with
    (parallel) calls answered in order; ``reasoning`` adds that format's reasoning items."""
    items: list[Item] = []
    if draw(st.booleans()):
        items.append(Message(role="system", content=draw(contents(images=False))))
    if draw(st.booleans()):
        items.append(summary_message(draw(TEXT), draw(st.sampled_from(["system", "user"]))))
    next_call = 0
    for _ in range(draw(st.integers(1, 4))):
        last = items[-1] if items else None
        if not (isinstance(last, Message) and last.role == "user" and last.name is None):
            items.append(Message(role="user", content=draw(contents(images=True))))
        for _ in range(draw(st.integers(1, 3))):
            if reasoning is not None and draw(st.booleans()):
                items.append(_reasoning(reasoning, draw(TEXT), draw(st.integers(0, 10**6))))
            text = draw(st.one_of(st.none(), TEXT))
            calls = draw(st.integers(0 if text else 1, 3))
            if text is not None:
                items.append(Message(role="assistant", content=text))
            ids = [f"call_{next_call + i}" for i in range(calls)]
            next_call += calls
            items += [
                FunctionCall(call_id=i, name=draw(st.sampled_from(["read", "grep"])), arguments=a)
                for i, a in zip(
                    ids, draw(st.lists(ARGUMENTS, min_size=calls, max_size=calls)), strict=True
                )
            ]
            items += [
                FunctionCallOutput(call_id=i, output=draw(contents(images=True))) for i in ids
            ]
            if not calls:
                break
            if draw(st.booleans()):  # the user speaks between the results and the next step
                items.append(Message(role="user", content=draw(contents(images=True))))
                break
    return items


def _reasoning(format: str, text: str, n: int) -> Reasoning:
    if format == "responses":
        payload: dict[str, Any] = {
            "type": "reasoning",
            "id": f"rs_{n}",
            "summary": [{"type": "summary_text", "text": text}],
            "encrypted_content": f"gAAAAB{n}",
        }
        return Reasoning(id=f"rs_{n}", format="responses", payload=payload)
    if n % 3 == 0:
        return Reasoning(format="anthropic", payload={"type": "redacted_thinking", "data": str(n)})
    payload = {"type": "thinking", "thinking": text, "signature": f"EqQB{n}"}
    return Reasoning(format="anthropic", payload=payload)


def _responses_round_trip(items: list[Item]) -> list[Item]:
    return responses_to_items(items_to_responses(items))


def _anthropic_round_trip(items: list[Item]) -> list[Item]:
    system, messages = items_to_anthropic(items)
    return anthropic_to_items(messages, system=system)


@settings(deadline=None, max_examples=150)
@given(conversations())
def test_every_format_gives_back_the_items(items: list[Item]) -> None:
    assert chat_to_items(items_to_chat(items)) == items
    assert _responses_round_trip(items) == items
    assert _anthropic_round_trip(items) == items


@settings(deadline=None, max_examples=150)
@given(conversations())
def test_chat_through_responses_and_anthropic_gives_back_the_chat(items: list[Item]) -> None:
    chat = items_to_chat(items)
    responses = items_to_responses(chat_to_items(chat))
    system, messages = items_to_anthropic(responses_to_items(responses))
    assert items_to_chat(anthropic_to_items(messages, system=system)) == chat


@settings(deadline=None, max_examples=100)
@given(conversations())
def test_converted_conversations_obey_each_format(items: list[Item]) -> None:
    assert validate_chat(items_to_chat(items))[1] == []
    assert validate_responses(items_to_responses(items))[1] == []
    messages = items_to_anthropic(items).messages
    assert validate_anthropic(messages)[1] == []
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in itertools.pairwise(roles))


@settings(deadline=None, max_examples=100)
@given(conversations())
def test_the_summary_is_recognised_after_any_format(items: list[Item]) -> None:
    expected = MemorySnapshot.from_items(items)
    for round_trip in (_responses_round_trip, _anthropic_round_trip):
        assert MemorySnapshot.from_items(round_trip(items)) == expected


@settings(deadline=None, max_examples=100)
@given(conversations(reasoning="responses"))
def test_responses_reasoning_survives_responses_and_nothing_else(items: list[Item]) -> None:
    assert _responses_round_trip(items) == items
    assert validate_items(items, format="responses")[1] == []
    reasoning = [i for i in items if isinstance(i, Reasoning)]
    if reasoning:
        with pytest.raises(FormatError, match="rs_"):
            items_to_anthropic(items)
    dropped: list[Item] = []
    system, messages = items_to_anthropic(items, lossy=True, on_drop=lambda i, _: dropped.append(i))
    assert dropped == reasoning
    without = [i for i in items if not isinstance(i, Reasoning)]
    assert anthropic_to_items(messages, system=system) == without


@settings(deadline=None, max_examples=100)
@given(conversations(reasoning="anthropic"))
def test_anthropic_thinking_survives_anthropic_and_nothing_else(items: list[Item]) -> None:
    assert _anthropic_round_trip(items) == items
    assert validate_items(items, format="anthropic")[1] == []
    thinking = [i for i in items if isinstance(i, Reasoning)]
    for convert in (items_to_chat, items_to_responses):
        if thinking:
            with pytest.raises(FormatError, match="anthropic"):
                convert(items)
        dropped: list[Item] = []
        convert(items, lossy=True, on_drop=_collect(dropped))
        assert dropped == thinking


def _collect(into: list[Item]) -> Callable[[Item, str], None]:
    return lambda item, _: into.append(item)


@st.composite
def damaged(draw: st.DrawFn) -> list[Item]:
    """A conversation with outputs lost, duplicated, moved or orphaned, and calls duplicated."""
    items = list(draw(conversations(reasoning=draw(st.sampled_from(["responses", "anthropic"])))))
    for _ in range(draw(st.integers(1, 4))):
        if not items:
            break
        at = draw(st.integers(0, len(items) - 1))
        action = draw(st.sampled_from(["drop", "duplicate", "move", "orphan"]))
        if action == "drop":
            del items[at]
        elif action == "duplicate":
            items.insert(draw(st.integers(0, len(items))), items[at])
        elif action == "move":
            items.insert(draw(st.integers(0, len(items) - 1)), items.pop(at))
        else:
            items.insert(at, FunctionCallOutput(call_id="ghost", output="?"))
    return items


@settings(deadline=None, max_examples=200)
@given(damaged(), st.sampled_from(["chat", "responses", "anthropic"]))
def test_repair_always_yields_a_prompt_the_format_accepts(items: list[Item], format: Any) -> None:
    repaired, problems = validate_items(items, format=format, mode="repair")
    assert validate_items(repaired, format=format)[1] == []
    assert validate_items(repaired, format=format, mode="repair")[0] == repaired
    if not problems:
        assert repaired == items
    kept = [i for i in items if i in repaired]
    assert len(repaired) <= len(items)
    assert all(item in kept for item in repaired)
    wire: Any
    if format == "chat":
        wire = items_to_chat(repaired, lossy=True)
        assert validate_chat(wire)[1] == []
    elif format == "responses":
        wire = items_to_responses(repaired, lossy=True)
        assert validate_responses(wire)[1] == []
    else:
        wire = items_to_anthropic(repaired, lossy=True).messages
        assert validate_anthropic(wire)[1] == []
