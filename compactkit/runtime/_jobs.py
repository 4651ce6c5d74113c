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
from compactkit.memory.base import AgentMemory
from compactkit.memory.lease import CompactionHold, hold_compaction
from compactkit.runtime._compaction import _safe_acompress
from compactkit.runtime.events import CompactionRequest, Event

__all__ = [
    "CompactionBusy",
    "Job",
    "LeasedCompressor",
    "Slot",
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
        self.hold: CompactionHold | None = None  # the compaction lease, while it runs

    def release(self) -> None:
        """Give the compaction lease back (once the result was applied or dropped)."""
        hold = self.hold
        if hold is not None:
            hold.release()

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


class CompactionBusy(Exception):
    """A job's outcome when another compactor held the compaction lease (nothing was run)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LeasedCompressor:
    """Runs a job's compressor only under the memory's compaction lease (taken in the worker,
    off the step; given back by the step that settles the job)."""

    def __init__(self, compressor: MemoryCompressor, memory: AgentMemory, job: Job) -> None:
        self.compressor, self.memory, self.job = compressor, memory, job
        self.name = job.name

    def _take(self, snapshot: MemorySnapshot) -> MemorySnapshot:
        """Take the lease; the snapshot to compress (read again under the lease, as another
        compactor may have applied since the step read it)."""
        hold = hold_compaction(self.memory)
        if not hold.taken:
            raise CompactionBusy(f"{hold.other!r} holds the session's compaction lease")
        self.job.hold = hold
        if self.job.cancelled:  # cancelled while the lease was being taken
            hold.release()
        if hold.holder is None:
            return snapshot
        fresh = self.memory.snapshot()
        if fresh.summary != snapshot.summary:  # compacted meanwhile: no second summary now
            hold.release()
            raise CompactionBusy("another compactor compacted the session since this step read it")
        self.job.snapshot = fresh
        return fresh

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        return self.compressor.compress(self._take(snapshot))

    async def acompress(self, snapshot: MemorySnapshot) -> CompactResult:
        return await _safe_acompress(self.compressor, await asyncio.to_thread(self._take, snapshot))


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
