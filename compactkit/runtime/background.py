"""Background (double-buffered) compaction: the summary is written while the agent goes on.

An LLM summary takes seconds; without this the agent waits for it at the step where the policy
fires. With ``Governor.for_model(model, background=BackgroundCompaction())``:

* **Soft threshold.** When a step's request reaches ``soft`` tokens (default: midway between the
  policy's target and its trigger), the governor asks the ``before_compaction`` hook and starts
  compacting that step's snapshot in the background — a daemon thread under ``step``, a task
  under ``astep`` — and returns at once. The agent goes on appending.
* **Applied when done.** At the first step after it finishes, the result is applied with
  ``memory.apply``, which rebases it over the items appended meanwhile. When the span it folded
  is no longer what the memory holds (another worker compacted it, a restore, a pin), ``apply``
  refuses: the result is discarded and counted, and the memory is untouched.
* **Hard threshold.** When the policy fires while a compaction is running, the step waits for it
  (counted, with the time waited) and compacts in the foreground only when none was running or
  its result was discarded or failed.
* **One compactor per session across processes.** A memory shared between processes
  (``SQLMemory``, ``RedisMemory``) has a compaction lease (``compactkit.memory.lease``): the
  background job takes it before its compressor runs and gives it back once the result was
  applied, discarded or cancelled. When another compactor holds it (or applied since the step
  read the memory), the compressor is not called: a ``skipped`` event, counted in
  ``stats.skipped``.
* **Nothing is ever half-applied.** A compressor that fails or raises in the background,
  ``cancel(memory)`` and ``close()`` leave the memory exactly as it was, each reported as a
  ``BackgroundCompactionEvent``. After a failure the next attempt waits ``retry_after`` steps.

Events are emitted from the thread that runs the step, never from a worker thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import threading
import time
import weakref
from collections.abc import Awaitable, Sequence
from typing import Any

from compactkit.compressors.base import CompressorLike
from compactkit.compressors.function import as_memory_compressor
from compactkit.errors import ConcurrencyError, ConfigError
from compactkit.governance.policy import CompactPolicy
from compactkit.items import Tool
from compactkit.items.snapshot import CompactResult
from compactkit.memory.base import AgentMemory
from compactkit.runtime._background_parts import (
    BackgroundStats,
    Status,
    StepArgs,
    applied_events,
    discarded_event,
)
from compactkit.runtime._compaction import _safe_acompress, _safe_compress
from compactkit.runtime._jobs import (
    CompactionBusy,
    Job,
    LeasedCompressor,
    Slot,
    in_thread,
    token_thresholds,
)
from compactkit.runtime.events import (
    BackgroundCompactionEvent,
    CompactionRequest,
    CompactionVetoed,
    Event,
)
from compactkit.runtime.scheduling import (
    GovernedStep,
    Instructions,
    StepPlan,
    StepSeam,
    hold_for_compaction,
)

__all__ = ["BackgroundCompaction", "BackgroundStats"]


class BackgroundCompaction:
    """Compacts in the background between a soft and the policy's hard threshold.

    Pass it to ``Governor(..., background=...)`` or ``Governor.for_model(model, background=...)``;
    one instance serves every memory of its governor (see the module docstring).

    Args:
        soft: When to start: tokens (an ``int``) or a share of the policy's budget (a ``float``
            in (0, 1)). Default: midway between the policy's target and its lowest token
            threshold. It must be above the target, or each compaction would start the next.
        compressor: What runs in the background (default: the governor's compressor, such as
            a ``SummaryCompressor`` or the ladder).
        retry_after: Steps to wait after a background failure before trying again.

    Raises:
        ConfigError: a bad option (checked here, and against the policy at the first step).
    """

    def __init__(
        self,
        *,
        soft: int | float | None = None,
        compressor: CompressorLike | None = None,
        retry_after: int = 8,
    ) -> None:
        if soft is not None:
            if isinstance(soft, bool) or not isinstance(soft, int | float) or soft <= 0:
                raise ConfigError(
                    f"soft must be tokens (int > 0) or a share of the budget (float in (0, 1)), "
                    f"got {soft!r}"
                )
            if isinstance(soft, float) and soft >= 1:
                raise ConfigError(f"a soft share of the budget must be below 1, got {soft!r}")
        if compressor is not None:  # a plain function is a FunctionCompressor
            compressor = as_memory_compressor(compressor)
        if isinstance(retry_after, bool) or not isinstance(retry_after, int) or retry_after < 0:
            raise ConfigError(f"retry_after must be a number of steps >= 0, got {retry_after!r}")
        self.soft = soft
        self.compressor = compressor
        self.retry_after = retry_after
        self.stats = BackgroundStats()
        self._closed = False
        self._lock = threading.Lock()
        self._slots: weakref.WeakKeyDictionary[Any, Slot] = weakref.WeakKeyDictionary()
        self._strong: dict[int, tuple[object, Slot]] = {}

    # -- the public controls -----------------------------------------------------------------

    def running(self, memory: AgentMemory) -> bool:
        """Whether a background compaction of ``memory`` is under way (or done, not applied)."""
        slot = self._slot(memory, create=False)
        return slot is not None and slot.job is not None

    def soft_tokens(self, policy: CompactPolicy) -> int:
        """The soft threshold in tokens for ``policy``.

        Raises:
            ConfigError: it is not above the policy's target, or a share without a budget.
        """
        target = policy.target_tokens()
        if isinstance(self.soft, int):
            soft = self.soft
        elif isinstance(self.soft, float):
            if policy.budget is None:
                raise ConfigError(
                    f"soft={self.soft!r} is a share of the budget, but the policy has none: "
                    "give soft= in tokens or a policy with budget="
                )
            soft = int(self.soft * policy.budget)
        else:
            hard = min(token_thresholds(policy), default=None)
            if hard is None:
                base = policy.budget if policy.budget is not None else 2 * target
                hard = max(target + 2, int(0.8 * base))
            soft = (target + hard) // 2
        if soft <= target:
            raise ConfigError(
                f"the soft threshold ({soft:,} tokens) must be above the policy's target "
                f"({target:,}): each compaction would start the next one; raise soft="
            )
        return soft

    def cancel(self, memory: AgentMemory | None = None) -> list[BackgroundCompactionEvent]:
        """Stop the background compaction of ``memory`` (of every memory when ``None``): its
        result is never applied, and the next one starts ``retry_after`` steps later at the
        earliest. A thread cannot be interrupted: it finishes on its own and its result is
        dropped; a task is cancelled. Returns the events (also emitted)."""
        with self._lock:
            slots = [self._slot(memory, create=False)] if memory is not None else self._all()
            jobs = []
            for slot in slots:
                if slot is not None and slot.job is not None:
                    jobs.append(slot.job)
                    slot.job = None
                    slot.cooldown = self.retry_after  # not again at once: it was stopped
        events = []
        for job in jobs:
            job.cancelled = True
            if job.task is not None:
                job.task.cancel()
            job.release()
            self.stats.cancelled += 1
            event = BackgroundCompactionEvent(
                "cancelled",
                job.name,
                started_version=job.snapshot.version,
                error="cancelled before it was applied; the memory is unchanged",
            )
            job.emit(event)
            events.append(event)
        return events

    def join(self, memory: AgentMemory | None = None, timeout: float | None = None) -> bool:
        """Wait until the background compaction of ``memory`` (of every memory when ``None``)
        has finished running, without applying it: the next step applies it. Returns whether
        none is still running (``False`` after ``timeout`` seconds)."""
        with self._lock:
            slots = [self._slot(memory, create=False)] if memory is not None else self._all()
            jobs = [slot.job for slot in slots if slot is not None and slot.job is not None]
        futures = [job.future for job in jobs if job.future is not None]
        if not futures:
            return all(job.done() for job in jobs)
        _, pending = concurrent.futures.wait(futures, timeout=timeout)
        return not pending and all(job.done() for job in jobs)

    def close(self) -> list[BackgroundCompactionEvent]:
        """Cancel every running background compaction and start no more (shutdown)."""
        self._closed = True
        return self.cancel()

    def __enter__(self) -> BackgroundCompaction:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the governed step (called by Governor.step / astep) -----------------------------------

    def step(
        self,
        governor: StepSeam,
        memory: AgentMemory,
        *,
        instructions: Instructions,
        tools: Sequence[Tool],
        usage: int | None,
        force: bool,
    ) -> GovernedStep:
        """``Governor.step`` with background compaction (see the module docstring)."""
        parts = StepArgs(instructions, tools, usage, force)
        events = self._settle(governor, memory)
        plan = parts.prepare(governor, memory)
        if plan.request is not None and not force and self._waitable(memory, threads_only=True):
            events += self._wait(governor, memory)
            plan = parts.prepare(governor, memory)
        plan, hold = hold_for_compaction(
            governor, memory, plan, lambda: parts.prepare(governor, memory)
        )
        try:
            result: CompactResult | None = None
            if plan.request is not None:
                compressor = governor.compressor_for(plan, instructions=instructions, tools=tools)
                assert compressor is not None
                result = _safe_compress(compressor, plan.snapshot)
            plan.events[:0] = events
            step = governor.finish(memory, plan, result, instructions=instructions, tools=tools)
        finally:
            if hold is not None:
                hold.release()
        started = self._maybe_start(governor, memory, plan, step, instructions, tools, None)
        return dataclasses.replace(step, events=(*step.events, *started)) if started else step

    async def astep(
        self,
        governor: StepSeam,
        memory: AgentMemory,
        *,
        instructions: Instructions,
        tools: Sequence[Tool],
        usage: int | None,
        force: bool,
    ) -> GovernedStep:
        """``Governor.astep`` with background compaction: a task instead of a thread, the
        waits awaited, storage and counting off the event loop."""
        parts = StepArgs(instructions, tools, usage, force)
        events = await asyncio.to_thread(self._settle, governor, memory)
        plan = await asyncio.to_thread(parts.prepare, governor, memory)
        if plan.request is not None and not force and self._waitable(memory, threads_only=False):
            events += await self._await(governor, memory)
            plan = await asyncio.to_thread(parts.prepare, governor, memory)
        plan, hold = await asyncio.to_thread(
            hold_for_compaction, governor, memory, plan, lambda: parts.prepare(governor, memory)
        )
        try:
            result: CompactResult | None = None
            if plan.request is not None:
                compressor = governor.compressor_for(plan, instructions=instructions, tools=tools)
                assert compressor is not None
                result = await _safe_acompress(compressor, plan.snapshot)
            plan.events[:0] = events
            step = await asyncio.to_thread(parts.finish, governor, memory, plan, result)
        finally:
            if hold is not None:
                await asyncio.to_thread(hold.release)
        loop = asyncio.get_running_loop()
        started = self._maybe_start(governor, memory, plan, step, instructions, tools, loop)
        return dataclasses.replace(step, events=(*step.events, *started)) if started else step

    # -- internals -------------------------------------------------------------------------------

    def _slot(self, memory: AgentMemory, *, create: bool = True) -> Slot | None:
        try:
            slot = self._slots.get(memory)
            if slot is None and create:
                slot = self._slots[memory] = Slot()
            return slot
        except TypeError:  # not weak-referenceable: keep it alive with its slot
            entry = self._strong.get(id(memory))
            if entry is None or entry[0] is not memory:
                if not create:
                    return None
                entry = self._strong[id(memory)] = (memory, Slot())
            return entry[1]

    def _all(self) -> list[Slot]:
        return [*self._slots.values(), *(slot for _, slot in self._strong.values())]

    def _take_done(self, memory: AgentMemory) -> Job | None:
        with self._lock:
            slot = self._slot(memory, create=False)
            if slot is None or slot.job is None or not slot.job.done():
                return None
            job, slot.job = slot.job, None
            return job

    def _waitable(self, memory: AgentMemory, *, threads_only: bool) -> bool:
        with self._lock:
            slot = self._slot(memory, create=False)
            job = slot.job if slot is not None else None
        if job is None:
            return False
        return job.future is not None or (not threads_only and job.task is not None)

    def _settle(
        self, governor: StepSeam, memory: AgentMemory, waited: float | None = None
    ) -> list[Event]:
        """Apply a finished background result, or report why it was not applied."""
        job = self._take_done(memory)
        if job is None:
            return []
        try:
            return self._settle_job(governor, memory, job, waited)
        finally:
            job.release()  # applied, discarded or failed: the next compactor may go

    def _settle_job(
        self, governor: StepSeam, memory: AgentMemory, job: Job, waited: float | None
    ) -> list[Event]:
        outcome = job.outcome()
        if isinstance(outcome, CompactionBusy):
            self.stats.skipped += 1
            event = BackgroundCompactionEvent(
                "skipped",
                job.name,
                started_version=job.snapshot.version,
                waited_s=waited,
                error=f"{outcome.reason}: the compressor was not called; the memory is unchanged",
            )
            return [governor.emit(event)]
        if isinstance(outcome, BaseException):
            cancelled = isinstance(outcome, asyncio.CancelledError)
            status: Status = "cancelled" if cancelled else "failed"
            error = f"{job.name} raised {type(outcome).__name__}: {outcome}"
            events = self._report(governor, memory, job, status, error, None, waited)
            if isinstance(outcome, ConfigError):
                raise outcome  # reported, then raised: the user's to fix (see runtime._compaction)
            return events
        result = outcome
        if result.outcome == "failed":
            return self._report(governor, memory, job, "failed", result.error, result, waited)
        if not result.changed:
            self.stats.unchanged += 1
            self._cool(memory)
            event = BackgroundCompactionEvent(
                "unchanged",
                job.name,
                started_version=job.snapshot.version,
                waited_s=waited,
                error="the compressor changed nothing (nothing was foldable)",
                result=result,
            )
            return [governor.emit(event)]
        try:
            applied = memory.apply(result)
        except (ConcurrencyError, ConfigError) as exc:
            self.stats.discarded += 1
            return [governor.emit(discarded_event(job, result, waited, exc))]
        if not applied:
            return []
        self.stats.applied += 1
        governor.record_compaction(memory)
        registry = governor.policy.registry if governor.policy is not None else None
        return [governor.emit(event) for event in applied_events(job, result, waited, registry)]

    def _report(
        self,
        governor: StepSeam,
        memory: AgentMemory,
        job: Job,
        status: Status,
        error: str | None,
        result: CompactResult | None,
        waited: float | None,
    ) -> list[Event]:
        if status == "cancelled":
            self.stats.cancelled += 1
        else:
            self.stats.failed += 1
            self._cool(memory)
        event = BackgroundCompactionEvent(
            status,
            job.name,
            started_version=job.snapshot.version,
            waited_s=waited,
            error=f"{error}; the memory is unchanged",
            result=result,
        )
        return [governor.emit(event)]

    def _cool(self, memory: AgentMemory) -> None:
        with self._lock:
            slot = self._slot(memory)
            assert slot is not None
            slot.cooldown = self.retry_after

    def _wait(self, governor: StepSeam, memory: AgentMemory) -> list[Event]:
        """Block until the running (thread) compaction ends, then settle it."""
        with self._lock:
            slot = self._slot(memory, create=False)
            job = slot.job if slot is not None else None
        if job is None or job.future is None:
            return []
        start = time.perf_counter()
        concurrent.futures.wait([job.future])
        return self._waited(governor, memory, time.perf_counter() - start)

    async def _await(self, governor: StepSeam, memory: AgentMemory) -> list[Event]:
        with self._lock:
            slot = self._slot(memory, create=False)
            job = slot.job if slot is not None else None
        if job is None:
            return []
        start = time.perf_counter()
        waitable: Awaitable[Any] = (
            asyncio.wrap_future(job.future) if job.future is not None else job.task  # type: ignore[assignment]
        )
        await asyncio.wait([asyncio.ensure_future(waitable)])
        return await asyncio.to_thread(self._waited, governor, memory, time.perf_counter() - start)

    def _waited(self, governor: StepSeam, memory: AgentMemory, seconds: float) -> list[Event]:
        self.stats.hard_waits += 1
        self.stats.waited_s += seconds
        return self._settle(governor, memory, waited=seconds)

    def _maybe_start(
        self,
        governor: StepSeam,
        memory: AgentMemory,
        plan: StepPlan,
        step: GovernedStep,
        instructions: Instructions,
        tools: Sequence[Tool],
        loop: asyncio.AbstractEventLoop | None,
    ) -> list[Event]:
        """Start a background compaction when the step's request is over the soft threshold."""
        policy, state = governor.policy, plan.state
        if self._closed or policy is None or state is None or step.compacted:
            return []
        with self._lock:
            slot = self._slot(memory)
            assert slot is not None
            if slot.job is not None:
                return []
            if slot.cooldown > 0:
                slot.cooldown -= 1
                return []
        if state.tokens <= self.soft_tokens(policy):
            return []
        compressor = self.compressor or governor.compressor_for(
            plan, instructions=instructions, tools=tools
        )
        if compressor is None:
            return []
        snapshot = plan.snapshot
        request = CompactionRequest(
            snapshot=snapshot, state=state, forced=False, model=policy.model
        )
        hook = governor.before_compaction
        if hook is not None and not hook(request):
            self._cool(memory)
            return [governor.emit(CompactionVetoed(request))]
        job = Job(snapshot, compressor, request, governor.emit)
        leased = LeasedCompressor(compressor, memory, job)
        if loop is not None and callable(getattr(compressor, "acompress", None)):
            job.task = loop.create_task(leased.acompress(snapshot))
        else:
            job.future = in_thread(leased, snapshot)
        with self._lock:
            slot.job = job
        self.stats.started += 1
        event = BackgroundCompactionEvent("started", job.name, started_version=snapshot.version)
        return [governor.emit(event)]
