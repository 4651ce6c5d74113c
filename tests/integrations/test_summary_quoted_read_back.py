"""A summary read back as quoted text (not at a summary's place) keeps its own place in the
request: the reader's map from each message to the items it became stays aligned.

After a compaction the history is [system, summary, ...]; a caller that then puts a user
message first (replacing the system message, or turning it into a user message in place) moves
the summary away from a summary's place, and it is read back as the quoted text of a user
message. The map of messages to items counted every summary message as folded into the
memory's summary, so it was one item off: the request sent the first message twice (once in
the summary's place) and no summary."""

from __future__ import annotations

from typing import Any

import pytest

from compactkit.integrations import CompactedMessages, MessageCompactor, compact_messages

MODEL = "gpt-4"
BUDGET = 2_000


def turns(count: int) -> list[list[dict[str, Any]]]:
    out = []
    for n in range(count):
        output = "\n".join(
            f"src/mod_{n}.py:{line}: value_{line} = {line * n}" for line in range(12)
        )
        call = {"id": f"call_{n}", "type": "function"}
        call["function"] = {"name": "cat", "arguments": f'{{"path": "src/mod_{n}.py"}}'}
        out.append(
            [
                {"role": "user", "content": f"Step {n}: check module {n}."},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"call_{n}", "content": output},
            ]
        )
    return out


@pytest.mark.parametrize("change", ["replaced", "in place"])
@pytest.mark.parametrize("stateless", [False, True])
def test_a_summary_read_back_as_quoted_text_is_sent_once_in_its_place(
    stateless: bool, change: str
) -> None:
    compactor = MessageCompactor(MODEL, budget=BUDGET)

    def govern(messages: list[Any]) -> CompactedMessages:
        if stateless:
            return compact_messages(messages, model=MODEL, budget=BUDGET)
        return compactor(messages)

    messages: list[Any] = [{"role": "system", "content": "You are a coding agent."}]
    for added in turns(60):
        turn = govern([*messages, *added])
        messages = turn.history
        if turn.compacted:
            break
    assert turn.compacted
    assert "compactkit_summary" in messages[1]["content"]
    first = {"role": "user", "content": "Start again from the summary."}
    if change == "replaced":
        messages = [first, *messages[1:]]
    else:
        messages[0].clear()
        messages[0].update(first)
    turn = govern(messages)
    assert [m["content"] for m in turn.send] == [m["content"] for m in messages]
    assert turn.tokens <= turn.budget
