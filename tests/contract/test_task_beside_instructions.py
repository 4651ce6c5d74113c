"""Contract row d: the task stays (verbatim or as the summary's goal) when the instructions are
given apart from the messages.

docs/agent.md, row d: "the task (the first user request) is present, verbatim or as the
summary's goal"; row c: the goal and the constraints are never dropped to meet a target, only
when they alone outgrow the summary's ceiling or the room a request leaves it. inv21's sweep
(session 21) replayed SWE-agent's CTF trajectories (system prompts of 1,424-1,959 tokens, tasks
of 597-838) at ``budget=4000``: with the system prompt as the first message the task reached
the model on every request; given as ``instructions=`` — as every framework entry point gives it
(LangChain's ``system_prompt``, pydantic-ai's ``instructions``, the Agents SDK's
``instructions``) and as Anthropic's ``system=`` is — the task was sent neither verbatim nor
as the summary's goal on 41 of 56 requests, each 1,898-3,857 tokens of the 4,000 (the goal
trimmed, oldest first, with all but the newest 3-5 constraints; on some, a later observation,
"Decompilation Found!", became the goal). Cause: ``ladder_target``
(runtime/_governor_track.py) takes the instructions off the compaction target (2,000 - 1,959 =
41 tokens for the history), raised only to the newest group + half of that (191-779 tokens);
the digest's ceiling is 90 % of it (at least 300); the goal and rules (688-1,169 tokens) outgrow
it, so they are trimmed like the rest, to the room the target leaves (1 token here). Now the
history's target is at least the policy's share of what the instructions leave of the budget.
"""

from __future__ import annotations

from typing import Any

import pytest
from contract_support import swe_agent_sessions, text_of

from compactkit.formats.anthropic import anthropic_to_items, items_to_anthropic
from compactkit.formats.chat import chat_to_items
from compactkit.integrations import MessageCompactor

CTF = "trajectories/demonstrations/ctf/crypto/"


def words(text: str) -> str:
    return " ".join(text.split())


def task_sent(items: list[Any], task: str) -> bool:
    return words(task)[:60] in words("\n".join(text_of(item) for item in items))


@pytest.mark.parametrize("name", ["BabyEncryption", "BabyTimeCapsule", "eps", "katy"])
@pytest.mark.parametrize("given", ["as the first message", "as instructions="])
def test_the_task_of_a_ctf_run_reaches_the_model_beside_a_long_system_prompt(
    name: str, given: str
) -> None:
    messages = swe_agent_sessions()[f"{CTF}{name}.traj"]
    system, task = messages[0]["content"], messages[1]["content"]
    compactor = MessageCompactor("gpt-4o", budget=4000)
    missing = []
    for end in (n for n, message in enumerate(messages) if message["role"] == "assistant"):
        if given == "as the first message":
            turn = compactor(messages[:end])
        else:
            turn = compactor(messages[1:end], instructions=system)
        assert turn.tokens <= 4000
        if not task_sent(chat_to_items(turn.send), task):
            missing.append(f"request before message {end} ({turn.tokens:,} tokens)")
    assert not missing, f"the task is missing from {len(missing)} requests: {missing}"


def test_the_task_reaches_claude_beside_a_long_anthropic_system_prompt() -> None:
    """The same run in Anthropic's form (``system=``), claude-sonnet-4-5, budget 6,000: the
    summary keeps only 3 of 16 constraints and no goal while the request is 2,884 tokens."""
    messages = swe_agent_sessions()[f"{CTF}BabyTimeCapsule.traj"]
    prompt = items_to_anthropic(chat_to_items(messages))
    task = messages[1]["content"]
    compactor = MessageCompactor("claude-sonnet-4-5", format="anthropic", budget=6000)
    for end in (n for n, turn in enumerate(prompt.messages) if turn["role"] == "assistant"):
        turn = compactor(prompt.messages[:end], system=prompt.system)
        items = anthropic_to_items(turn.send, system=turn.system)
        assert task_sent(items, task), f"the task is missing ({turn.tokens:,} tokens sent)"
