"""Code the compaction-lease tests run in other processes (free of pytest so workers start fast):
compactors of one session — a governed step, a background compaction, or ``memory.compact()`` —
whose summarizer (a scripted fake) writes one line per call to a shared file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors.summary import SummaryCompressor
from compactkit.errors import SessionBusyError
from compactkit.governance.policy import CompactPolicy, tokens_over
from compactkit.governance.projector import ContextProjector
from compactkit.runtime.background import BackgroundCompaction
from compactkit.runtime.events import BackgroundCompactionEvent, Event
from compactkit.runtime.governor import Governor
from compactkit.testing import FunctionLLM

COUNTER = TiktokenCounter("o200k_base")
BUDGET, HARD, TARGET, SOFT = 20_000, 1_000, 400, 700  # ``fill`` writes about 1,400 tokens
SUMMARY = "## Goal\n- turn 0: plan the launch of topic 0\n## Notes\n- SUMMARY-MARK"


def open_memory(kind: str, where: str, prefix: str, session_id: str, **options: Any) -> Any:
    """The memory of ``session_id`` on ``kind`` (``sqlite``, ``postgresql``, ``redis``)."""
    if kind == "redis":
        from compactkit.redis import RedisMemory

        return RedisMemory(where, session_id, key_prefix=prefix, **options)
    from compactkit.sql import SQLMemory

    return SQLMemory(where, session_id, table_prefix=prefix, **options)


def fill(memory: Any, turns: int = 12) -> None:
    """Enough turns for the policy to fire (over ``HARD`` tokens)."""
    for n in range(turns):
        memory.add_user_input(f"turn {n}: plan the launch of topic {n}")
        memory.add_output_items([{"role": "assistant", "content": f"notes on topic {n} " * 20}])


def summarizer(calls: str, *, pause: float, fail: bool = False) -> SummaryCompressor:
    """A summary compressor whose fake LLM appends a line to ``calls``, thinks for ``pause``
    seconds, then answers (or raises, with ``fail``)."""

    def reply(_messages: list[dict[str, str]]) -> str:
        with open(calls, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
        time.sleep(pause)
        if fail:
            raise RuntimeError("the summarizer is down")
        return SUMMARY

    return SummaryCompressor(FunctionLLM(reply), keep_last_groups=1, counter=COUNTER)


def governor(compressor: SummaryCompressor, events: list[Event], background: bool) -> Governor:
    """Fires at ``HARD`` tokens in the step; with ``background``, starts at ``SOFT`` in the
    background (the hard threshold then out of reach)."""
    hard = 10 * HARD if background else HARD
    return Governor(
        ContextProjector(COUNTER, budget=BUDGET),
        policy=CompactPolicy(tokens_over(hard), target=TARGET, budget=BUDGET),
        compressor=compressor,
        on_event=events.append,
        background=BackgroundCompaction(soft=SOFT, compressor=compressor) if background else None,
    )


def compact(
    kind: str,
    where: str,
    prefix: str,
    session_id: str,
    mode: str,
    calls: str,
    report: str,
    start_at: float,
    wait: float,
) -> None:
    """Compact ``session_id`` once as ``mode`` (``step``, ``background``, ``compact``), starting
    at ``start_at`` (every worker at once); write the kinds of the events (and typed refusals)
    to ``report``."""
    memory = open_memory(kind, where, prefix, session_id, compaction_wait=wait)
    events: list[Event] = []
    refused: list[str] = []
    compressor = summarizer(calls, pause=1.5)
    time.sleep(max(0.0, start_at - time.time()))
    if mode == "compact":
        try:
            memory.compact(compressor)
        except SessionBusyError as exc:
            refused.append(f"SessionBusyError:{exc.holder}")
    else:
        gov = governor(compressor, events, background=mode == "background")
        gov.step(memory)
        if gov.background is not None:
            gov.background.join(memory, timeout=60)
            gov.step(memory)  # applies the finished result (or reports the skip)
    kinds = [
        e.status if isinstance(e, BackgroundCompactionEvent) else e.kind
        for e in events
        if e.kind != "projection"
    ]
    Path(report).write_text(json.dumps({"events": kinds, "refused": refused}), encoding="utf-8")


def hold_compaction(kind: str, where: str, prefix: str, session_id: str, ready: str) -> None:
    """Take the compaction lease as ``doomed`` (ttl 1 s), say so in ``ready``, and keep it
    (taking it again renews it) until killed: on a loaded machine the test's own compaction may
    come more than a ttl after ``ready``, and must still find the lease held."""
    memory = open_memory(kind, where, prefix, session_id, compaction_ttl=1.0)
    assert memory.take_compaction("doomed") == "doomed"
    Path(ready).write_text("held", encoding="utf-8")
    while True:
        time.sleep(0.2)
        memory.take_compaction("doomed")
