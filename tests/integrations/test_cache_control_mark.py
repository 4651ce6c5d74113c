"""Anthropic's prompt-caching recipe marks the last block of the request before sending it
(``cache_control``): ``turn.send`` holds the caller's own message dicts, so the mark lands on a
recent message the compactor read. The mark adds no token to what the model reads; it is not an
edit: the conversation is not read again and compacts as often as without it (review21, F5: a
whole re-read on every call, and with the caller's own list kept and an LLM summary, 471 compactions and 2,642
summarizer calls instead of 37 over 499 calls of the bundled real session)."""

from __future__ import annotations

from typing import Any

import pytest

from compactkit.integrations import MessageCompactor

MODEL = "claude-sonnet-4-5"
BUDGET = 3_000
SYSTEM = "You are a coding agent."


def turns(count: int) -> list[list[dict[str, Any]]]:
    out = []
    for n in range(count):
        output = "\n".join(
            f"src/mod_{n}.py:{line}: value_{line} = {line * n}" for line in range(12)
        )
        use = {"type": "tool_use", "id": f"toolu_{n}", "name": "cat", "input": {"path": f"m{n}"}}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": output}
        out.append(
            [
                {"role": "user", "content": f"Step {n}: check module {n}."},
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": [result]},
            ]
        )
    return out


def run(*, mark: bool, keep: str) -> list[int]:
    compactor = MessageCompactor(MODEL, budget=BUDGET)
    messages: list[Any] = []
    compacted = []
    for n, added in enumerate(turns(60)):
        messages = [*messages, *added]
        turn = compactor(messages, system=SYSTEM)
        assert turn.tokens <= turn.budget
        if turn.compacted:
            compacted.append(n)
        if mark:  # the recipe: the last block of the request marked for caching
            last = turn.send[-1]
            assert last is messages[-1]  # (the caller's own dict)
            last["content"][-1]["cache_control"] = {"type": "ephemeral"}
        if keep == "history":
            messages = turn.history
    return compacted


@pytest.mark.parametrize("keep", ["history", "own"])
def test_a_cache_control_mark_on_the_sent_request_is_not_an_edit(keep: str) -> None:
    plain = run(mark=False, keep=keep)
    assert plain, "the loop compacts"
    assert run(mark=True, keep=keep) == plain
