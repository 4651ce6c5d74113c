"""``SummaryCompressor(on_progress=...)`` reports (chunks done, total) as a long fold runs, in
both drivers, and a fold that fails stops reporting where it failed."""

from __future__ import annotations

import asyncio

from compactkit.compressors.summary import SummaryCompressor
from compactkit.items import FunctionCall, FunctionCallOutput, Item, MemorySnapshot, Message
from compactkit.testing import FunctionLLM

ANSWER = "## Goal\n- Port the billing service.\n"


def _history(turns: int) -> list[Item]:
    items: list[Item] = [Message(role="system", content="You port services.")]
    for n in range(turns):
        output = " ".join(f"module_{n}_line_{i} ported ok" for i in range(300))
        items += [
            Message(role="user", content=f"port module {n}"),
            FunctionCall(call_id=f"c{n}", name="port", arguments=f'{{"module": {n}}}'),
            FunctionCallOutput(call_id=f"c{n}", output=output),
            Message(role="assistant", content=f"module {n} ported"),
        ]
    return items


def _compressor(seen: list[tuple[int, int]], answer: str = ANSWER) -> SummaryCompressor:
    llm = FunctionLLM(lambda messages: answer)
    return SummaryCompressor(
        llm,
        keep_last_groups=2,
        summarizer_window_tokens=8_000,
        on_progress=lambda d, t: seen.append((d, t)),
    )


def test_progress_counts_every_chunk_sync_and_async() -> None:
    snapshot = MemorySnapshot.from_items(_history(30))
    for run in ("sync", "async"):
        seen: list[tuple[int, int]] = []
        compressor = _compressor(seen)
        if run == "sync":
            result = compressor.compress(snapshot)
        else:
            result = asyncio.run(compressor.acompress(snapshot))
        chunks = result.stats.details["chunks"]
        assert result.outcome == "compacted" and chunks >= 2
        assert seen == [(done, chunks) for done in range(chunks + 1)]


def test_a_failed_fold_stops_reporting_where_it_failed() -> None:
    seen: list[tuple[int, int]] = []
    result = _compressor(seen, answer="").compress(MemorySnapshot.from_items(_history(30)))
    assert result.outcome == "failed"
    assert seen and seen[-1][0] < seen[-1][1]  # never reported as done
