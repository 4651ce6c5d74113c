"""Contract row b / docs/projector.md rule 6: the summary gives way before the newest output.

Found by inv20 re-running inv19's sweep on a first version of the summary fit: the later
mini-SWE-agent runs in Anthropic form, budget 6,000, claude-sonnet-4-5, request 1,482: the run's
task (3,007 tokens) and its newest output (3,032 tokens) cannot both be sent whole even with no
summary, so an output has to be cut; the output was cut to its marker (all 3,032 tokens left
out) while the summary was sent with 2,757 tokens (its "Constraints and instructions" section
kept). Before the fit the same request raised ``BudgetError``. The same shape, built here: rules
folded into the summary, a long new task, a newest output smaller than the budget; the output
must keep the room the shortest summary leaves.
"""

from __future__ import annotations

import json
from typing import Any

from compactkit.budget import counter_for
from compactkit.formats.chat import chat_to_items
from compactkit.integrations import compact_messages
from compactkit.items import FunctionCallOutput
from compactkit.items.snapshot import is_summary_message

MODEL = "gpt-4o"
BUDGET = 6_000
COUNTER = counter_for(MODEL)


def session(rules: int) -> list[dict[str, Any]]:
    listed = "\n".join(
        f"- You must never modify the file src/module_{k}/handler_{k}.py or its tests in "
        f"tests/test_{k}.py."
        for k in range(rules)
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the parser bug.\nRules:\n" + listed},
    ]
    for n in range(30):
        call = {"name": "bash", "arguments": json.dumps({"command": f"cat f{n}"})}
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": f"c{n}", "type": "function", "function": call}],
            }
        )
        output = "\n".join(f"line {n}.{k}: value = compute({k}, {n})" for k in range(60))
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": output})
    task = " ".join(
        f"The widget number {k} renders its label twice when resized." for k in range(270)
    )
    call = {"name": "bash", "arguments": '{"command": "cat widget.py"}'}
    messages += [
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Now the second task. " + task},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "z", "type": "function", "function": call}],
        },
        {
            "role": "tool",
            "tool_call_id": "z",
            "content": "\n".join(f"def widget_{k}(): return render({k})" for k in range(300)),
        },
    ]
    return messages


def test_a_newest_output_that_must_be_cut_keeps_the_room_a_shorter_summary_leaves() -> None:
    for rules in (100, 20):  # a summary of ~2,600 tokens of rules; one of ~600
        messages = session(rules)
        newest = messages[-1]["content"]
        assert COUNTER.count_text(newest) <= BUDGET // 2
        turn = compact_messages(messages, model=MODEL, budget=BUDGET)
        items = chat_to_items(turn.send)
        assert turn.tokens <= BUDGET
        others = [i for i in items if not is_summary_message(i)]
        last = items[-1]
        assert isinstance(last, FunctionCallOutput) and last.call_id == "z"
        # What the request holds besides the summary and the newest output leaves this much room:
        room = BUDGET - COUNTER.count(others[:-1]).tokens - 3  # (reply priming)
        summary = [i for i in items if is_summary_message(i)]
        sent = COUNTER.count_text(last.text)
        assert sent >= room - 500, (
            f"{rules} rules: the newest output ({COUNTER.count_text(newest)} tokens) was sent as "
            f"{sent} tokens while the summary was sent with "
            f"{COUNTER.count(summary).tokens} tokens ({room} tokens of room without it)"
        )
