"""Contract row b on a real session: a newest output smaller than the budget is never cut.

docs/agent.md, row b: the newest group is sent verbatim; only "an output larger than the whole
budget is cut". inv19's sweep (session 19) governed the bundled real session (mini-SWE-agent,
``evals/benchmarks/data``) at ``budget=6000``: on four requests of the first 3,000 messages the
newest tool output (176 to 1,553 tokens) was cut with the marker, while a summary a few hundred
tokens smaller would have let it go verbatim (the projection's note: "cut the newest output(s)
... to fit the budget"). One ``compact_messages`` call on the prefix shows it, with no earlier
state. NOT LANDED: a failing test for the owners of the projection / compaction fit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from contract_support import real_prefix

from compactkit.budget import counter_for
from compactkit.formats.chat import chat_to_items
from compactkit.integrations import compact_messages
from compactkit.items.snapshot import is_summary_message

MODEL = "gpt-4o"
BUDGET = 6_000


def prefix(count: int) -> list[dict[str, Any]]:
    return real_prefix(count)


@pytest.mark.parametrize("count", [1316, 2670])  # newest outputs of 317 and 176 tokens
def test_a_small_newest_output_of_a_real_session_is_sent_verbatim(count: int) -> None:
    messages = prefix(count)
    newest = messages[-1]
    assert newest["role"] == "tool"
    counter = counter_for(MODEL)
    turn = compact_messages(messages, model=MODEL, budget=BUDGET)
    items = chat_to_items(turn.send)
    summary = [item for item in items if is_summary_message(item)]
    others = [item for item in items if not is_summary_message(item)]
    # Everything but the summary, with the newest output whole, leaves room for a summary.
    room = BUDGET - (
        counter.count(others).tokens
        - counter.count_text(str(turn.send[-1]["content"]))
        + counter.count_text(str(newest["content"]))
    )
    assert room > 1_000, room
    assert turn.tokens <= BUDGET
    assert summary, "the prefix was folded"
    assert turn.send[-1]["content"] == newest["content"], (
        f"the newest output ({counter.count_text(str(newest['content']))} tokens) was cut "
        f"with {room} tokens of room for the summary ({counter.count(summary).tokens} tokens)"
    )


REST = Path(__file__).resolve().parents[1] / "data" / "mswe-rest-2229.jsonl.xz"
"""The first 2,229 messages of /work/notes/data/mswe-rest.jsonl (later mini-SWE-agent runs)."""


@pytest.mark.parametrize("count", [917, 2227, 2229])
def test_a_real_session_whose_newest_group_fits_beside_a_smaller_summary_is_sent(
    count: int,
) -> None:
    """inv19's sweep: at budget=6000 these prefixes raise ``BudgetError`` ("newest group:
    3,023 tokens" / "latest user input: 2,757 tokens") whose own breakdown shows that
    everything but the summary fits (4,405 / 3,529 / 3,743 tokens): the summary (1,773 /
    2,559 tokens) is counted as irreducible instead of being fitted to the room left."""
    messages = real_prefix(count, REST)
    turn = compact_messages(messages, model=MODEL, budget=BUDGET)
    assert turn.tokens <= BUDGET
    assert turn.send[-1]["content"] == messages[-1]["content"]
