"""Contract rows b, c, d / docs/projector.md rule 6: what gives way when a newest output must be cut.

Found by inv20 re-running inv19's sweep on a first version of the summary fit: the later
mini-SWE-agent runs in Anthropic form, budget 6,000, claude-sonnet-4-5, request 1,482: the run's
task (3,007 tokens) and its newest output (3,032 tokens) cannot both be sent whole even with no
summary, so the output has to be cut. The first version cut the output as if the summary stayed
whole and then let the summary take the room back (a 59-token marker beside a 2,643-token summary
of every kind of fact); a second sent the summary at its shortest, without the task or any rule,
to keep a few more tokens of an output cut anyway (review20: 146 such requests). What holds now:
every fact but the user's goal and rules gives way before the output is cut; the goal and rules
give way only as far as even the output's marker needs; the output keeps all the room they leave.
"""

from __future__ import annotations

import json
from typing import Any

from compactkit.budget import counter_for
from compactkit.compressors.sections import SummaryDocument
from compactkit.formats.chat import chat_to_items
from compactkit.integrations import compact_messages
from compactkit.items import FunctionCallOutput
from compactkit.items.snapshot import is_summary_message, unseal_summary

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


def test_a_newest_output_cut_anyway_keeps_the_room_the_users_goal_and_rules_leave() -> None:
    for rules in (100, 20):  # a summary of ~2,600 tokens of rules; one of ~600
        messages = session(rules)
        newest = messages[-1]["content"]
        assert COUNTER.count_text(newest) <= BUDGET // 2
        turn = compact_messages(messages, model=MODEL, budget=BUDGET)
        items = chat_to_items(turn.send)
        assert turn.tokens <= BUDGET
        last = items[-1]
        assert isinstance(last, FunctionCallOutput) and last.call_id == "z"
        summary = [i for i in items if is_summary_message(i)]
        assert len(summary) == 1
        kept = SummaryDocument.parse(unseal_summary(summary[0].text))
        # The task and the user's rules stay (the newest of them when not all fit) ...
        assert kept.entries("goal")
        assert len(kept.entries("constraints")) >= rules * 9 // 10
        assert "src/module_{0}/handler_{0}.py".format(rules - 1) in summary[0].text
        # ... every other fact gave way before the output was cut ...
        assert set(kept.sections) <= {"goal", "constraints"}
        # ... and the output keeps the whole room they leave.
        assert turn.tokens >= BUDGET - 60, f"{rules} rules: {turn.tokens} of {BUDGET} sent"
