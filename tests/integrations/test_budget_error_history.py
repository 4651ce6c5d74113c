"""A call that compacted the history and then raised ``BudgetError`` (the latest input alone
over the budget) changed the compactor's memory: the next call, on a list that extends the
refused one, returns the history rendered from that memory (the summary it sends and the kept
messages), not the list given, whose prompt would carry a summary the list has not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from compactkit.errors import BudgetError
from compactkit.integrations import CompactedMessages, MessageCompactor, compact_messages

MODEL = "gpt-4"
BUDGET = 3000


def is_summary(message: Any) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.startswith("<compactkit_summary")


def session() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the bug."},
    ]
    for n in range(12):
        function = {"name": "read", "arguments": "{}"}
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{n}", "type": "function", "function": function}],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"file {n}: " + "code\n" * 40},
        ]
    return messages


@pytest.mark.parametrize("stateless", [False, True], ids=["stateful", "stateless"])
def test_the_call_after_a_budget_error_that_compacted_returns_the_summary_it_sends(
    stateless: bool,
) -> None:
    compactor = MessageCompactor(MODEL, budget=BUDGET)
    govern: Callable[[list[Any]], CompactedMessages] = (
        (lambda messages: compact_messages(messages, model=MODEL, budget=BUDGET))
        if stateless
        else compactor
    )
    mine = session()
    assert not govern(mine).compacted
    pasted = {"role": "user", "content": "paste " * 4000}  # alone over the budget
    with pytest.raises(BudgetError, match="latest user input"):
        govern([*mine, pasted])  # (it compacted first: the summary folds the session)
    # The caller keeps its own list: the refused message stays, answered, then a new input.
    mine = [*mine, pasted, {"role": "assistant", "content": "Too long for me."}]
    mine.append({"role": "user", "content": "Just fix it."})
    turn = govern(mine)
    sent = [message for message in turn.send if is_summary(message)]
    assert sent, "the refused call's compaction is in the prompt"
    assert sent == [message for message in turn.history if is_summary(message)]
    assert turn.history[-2:] == mine[-2:]
    assert len(turn.history) < len(mine)  # (before: the list given, 29 messages, no summary)
    # The next call goes on from that history, as after any compaction.
    follow = [*turn.history, {"role": "assistant", "content": "Fixed."}]
    follow.append({"role": "user", "content": "Thanks."})
    after = govern(follow)
    assert after.history is follow and after.tokens <= BUDGET
