"""``compact_messages(..., dry_run=True)`` (issue 29): a preview of the compaction, no summarizer
call, and the conversations ``compact_messages`` remembers stay as they were."""

from __future__ import annotations

from typing import Any

from compactkit.budget import counter_for
from compactkit.compressors import LadderCompressor
from compactkit.compressors.preview import CompactionPreview
from compactkit.compressors.summary import SummaryCompressor
from compactkit.governance.policy import CompactPolicy, tokens_over
from compactkit.integrations import compact_messages
from compactkit.testing import ScriptedLLM

MODEL = "gpt-4o"


def _conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You fix tests."}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"step {n}: fix test_{n}"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{n}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": f'{{"n": {n}}}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "x = 1\n" * 300})
        messages.append({"role": "assistant", "content": f"fixed test_{n}"})
    return messages


def test_a_dry_run_calls_no_summarizer_and_changes_no_list() -> None:
    messages = _conversation(12)
    copy = [dict(message) for message in messages]
    llm = ScriptedLLM([])  # a call would fail: there is no reply
    summary = SummaryCompressor(llm, target_tokens=2_000, counter=counter_for(MODEL))

    preview = compact_messages(messages, model=MODEL, compressor=summary, dry_run=True)

    assert isinstance(preview, CompactionPreview)
    assert llm.calls == []
    assert messages == copy
    assert preview.changed and preview.estimated and preview.summarizer_calls >= 1
    assert preview.folded and preview.kept
    assert max(preview.folded) < max(preview.kept)  # the oldest fold, the newest stay


def test_a_deterministic_dry_run_predicts_the_call() -> None:
    messages = _conversation(12)
    ladder = LadderCompressor(3_000, counter=counter_for(MODEL), keep_last_groups=2)
    policy = CompactPolicy(tokens_over(10_000), target=3_000)  # fires on this conversation
    preview = compact_messages(
        messages, model=MODEL, compressor=ladder, policy=policy, dry_run=True
    )
    assert preview.summarizer_calls == 0 and not preview.estimated
    turn = compact_messages(messages, model=MODEL, compressor=ladder, policy=policy)
    assert turn.compacted and turn.compaction is not None
    assert turn.compaction.stats.tokens_before == preview.tokens_before
    assert turn.compaction.stats.tokens_after == preview.tokens_after
    assert turn.compaction.stats.compressor == preview.compressor
    assert len(turn.compaction.folded) == len(preview.folded) + len(preview.masked)
