"""Anthropic cache_control breakpoints on the stable prefix (add_cache_breakpoints)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from compactkit.errors import ConfigError
from compactkit.formats.anthropic import items_to_anthropic, tools_to_anthropic
from compactkit.formats.anthropic_cache import add_cache_breakpoints
from compactkit.formats.validate import validate_anthropic
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Reasoning, Tool
from compactkit.items.snapshot import summary_message, unseal_summary

TOOLS = tools_to_anthropic(
    [Tool(name="read_file", description="Read a file.", parameters={"type": "object"})]
)


def conversation(rounds: int) -> list[Item]:
    items: list[Item] = [
        Message(role="system", content="You are a coding agent."),
        summary_message("The user wants the parser fixed."),
        Message(role="user", content="go on"),
    ]
    for n in range(rounds):
        items.append(FunctionCall(call_id=f"c{n}", name="read_file", arguments='{"path": "a"}'))
        items.append(FunctionCallOutput(call_id=f"c{n}", output=f"contents {n}"))
    return items


def marked(request: Any) -> list[dict[str, Any]]:
    """Every block or tool that carries a breakpoint."""
    blocks = [b for b in request.system or [] if isinstance(request.system, list)]
    for message in request.messages:
        blocks += [b for b in message["content"] if isinstance(b, dict)]
    return [b for b in [*blocks, *request.tools] if "cache_control" in b]


def test_breakpoints_go_on_the_end_the_system_prompt_and_the_summary() -> None:
    prompt = items_to_anthropic(conversation(3))
    before = copy.deepcopy(prompt)
    request = add_cache_breakpoints(prompt, tools=TOOLS)
    assert request.breakpoints == ("end", "system", "summary")
    assert prompt == before  # the input is not modified
    assert request.messages[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert isinstance(request.system, list) and "cache_control" in request.system[-1]
    summary = [b for b in marked(request) if unseal_summary(b.get("text", "")) is not None]
    assert len(summary) == 1
    validate_anthropic(request.messages)  # still a valid request


def test_the_part_shared_with_the_previous_request_is_marked_too() -> None:
    first = add_cache_breakpoints(items_to_anthropic(conversation(2)), tools=TOOLS)
    grown = items_to_anthropic([*conversation(2), Message(role="assistant", content="done")])
    request = add_cache_breakpoints(grown, tools=TOOLS, previous=first.messages)
    shared = len(first.messages)  # the new request appends one assistant message
    assert request.breakpoints[-1] == f"shared prefix (message {shared})"
    assert "cache_control" in request.messages[shared - 1]["content"][-1]
    assert len(marked(request)) == 4


@pytest.mark.parametrize("limit", [1, 2, 3, 4])
def test_never_more_than_the_limit_counting_breakpoints_already_there(limit: int) -> None:
    prompt = items_to_anthropic(conversation(2))
    system = [{"type": "text", "text": "pre-marked", "cache_control": {"type": "ephemeral"}}]
    prompt = prompt._replace(system=system)
    request = add_cache_breakpoints(prompt, tools=TOOLS, max_breakpoints=limit)
    # three places to mark (the end, the system prompt, the summary); the system is marked already
    assert len(marked(request)) == min(limit, 3)
    if limit == 1:
        assert request.breakpoints == ()  # the one allowed is already used


def test_no_system_prompt_marks_the_tools_and_thinking_is_never_marked() -> None:
    thinking = Reasoning(
        format="anthropic", payload={"type": "thinking", "thinking": "hmm", "signature": "s"}
    )
    items: list[Item] = [
        Message(role="user", content="hi"),
        Message(role="assistant", content="let me think"),
        thinking,
    ]
    request = add_cache_breakpoints(items_to_anthropic(items), tools=TOOLS, ttl="1h")
    assert request.breakpoints == ("end", "tools")
    last = request.messages[-1]["content"]
    assert "cache_control" not in last[-1] and last[-1]["type"] == "thinking"
    assert last[0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert "cache_control" in request.tools[-1]


def test_bad_options_are_config_errors() -> None:
    prompt = items_to_anthropic(conversation(1))
    with pytest.raises(ConfigError, match="max_breakpoints"):
        add_cache_breakpoints(prompt, max_breakpoints=5)
    with pytest.raises(ConfigError, match="ttl"):
        add_cache_breakpoints(prompt, ttl="2h")  # type: ignore[arg-type]
