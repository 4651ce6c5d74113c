"""The machinery of background compaction: jobs, per-memory slots, the worker thread.

``background.BackgroundCompaction`` decides when to start, apply, discard and wait; this module
runs the compressor off the step (a daemon thread, or a task under ``astep``) and turns what a
compressor raised into a failed result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable

from compactkit.compressors.base import MemoryCompressor
from compactkit.governance.policy import CompactPolicy, Trigger, ratio_over, tokens_over, usage_over
from compactkit.items.snapshot import CompactResult, MemorySnapshot
from compactkit.runtime._compaction import _failed
from compactkit.runtime.events import CompactionRequest, Event

__all__ = [
    "Job",
    "Slot",
    "acompress",
    "in_thread",
    "token_thresholds",
]

_HEAD_START_S = 0.01  # the worker's head start to the step (see in_thread)


class Job:
    """One background compaction of one memory."""

    def __init__(
        self,
        snapshot: MemorySnapshot,
        compressor: MemoryCompressor,
        request: CompactionRequest,
        emit: Callable[[Event], Event],
    ) -> None:
        self.snapshot = snapshot
        self.compressor = compressor
        self.name = str(getattr(compressor, "name", type(compressor).__name__))
        self.request = request
        self.emit = emit
        self.future: concurrent.futures.Future[CompactResult] | None = None
        self.task: asyncio.Task[CompactResult] | None = None
        self.cancelled = False

    def done(self) -> bool:
        waitable = self.future if self.future is not None else self.task
        return waitable is not None and waitable.done()

    def outcome(self) -> CompactResult | BaseException:
        """The result, or what was raised (the job is done)."""
        waitable = self.future if self.future is not None else self.task
        assert waitable is not None
        try:
            return waitable.result()
        except BaseException as exc:  # a CancelledError too: reported, never re-raised here
            return exc


class Slot:
    __slots__ = ("cooldown", "job")

    def __init__(self) -> None:
        self.job: Job | None = None
        self.cooldown = 0  # steps to skip before the next attempt (after a failure)


def token_thresholds(policy: CompactPolicy) -> list[int]:
    trigger = policy.trigger
    if not isinstance(trigger, Trigger):
        return []
    values = []
    for leaf in trigger.leaves():
        if isinstance(leaf, tokens_over | usage_over):
            values.append(leaf.value)
        elif isinstance(leaf, ratio_over) and policy.budget is not None:
            values.append(int(leaf.ratio * policy.budget))
    return values


class _Workers:
    """Daemon threads that run compressions, reused from one job to the next.

    Starting a thread costs a step up to several milliseconds on a busy machine, so a thread is
    started only when none is idle; daemon threads never keep the process from exiting (a hung
    summarizer included).
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._queue.put(task)
        if start:
            threading.Thread(target=self._serve, name="compactkit-background", daemon=True).start()

    def _serve(self) -> None:
        while True:
            task = self._queue.get()
            task()
            with self._lock:
                self._idle += 1


_WORKERS = _Workers()


def in_thread(
    compressor: MemoryCompressor, snapshot: MemorySnapshot
) -> concurrent.futures.Future[CompactResult]:
    """Run ``compressor.compress(snapshot)`` on a background daemon thread."""
    future: concurrent.futures.Future[CompactResult] = concurrent.futures.Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        # Let the step that started us return first: a CPU-bound thread that takes the GIL at
        # once holds the step up for the interpreter's switch interval (5 ms) or more.
        time.sleep(_HEAD_START_S)
        try:
            future.set_result(compressor.compress(snapshot))
        except BaseException as exc:  # reported at the next step, never lost in the thread
            future.set_exception(exc)

    _WORKERS.submit(run)
    return future


async def acompress(compressor: MemoryCompressor, snapshot: MemorySnapshot) -> CompactResult:
    acompress = getattr(compressor, "acompress", None)
    try:
        if callable(acompress):
            result: CompactResult = await acompress(snapshot)
            return result
        return await asyncio.to_thread(compressor.compress, snapshot)
    except Exception as exc:
        return _failed(compressor, snapshot, exc)
