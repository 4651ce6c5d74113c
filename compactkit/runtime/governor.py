"""``Governor``: the one governance step every loop and integration shares.

Per model call, ``step(memory, instructions=..., tools=...)``:

1. measure the memory as the policy sees it (``CompactPolicy.measure``; the provider's last
   reported ``prompt_tokens`` feeds ``usage_over``, and tokens are scaled by the calibration);
2. when the policy fires (or ``force=True``), ask the ``before_compaction`` hook, run the
   compressor and swap its result in atomically with ``memory.apply``. A failed compressor or a
   ``ConcurrencyError`` loses nothing: the step goes on with the memory as it is and reports
   the failure as a ``CompactionEvent``. A ``ConfigError`` from the compressor (the user's to
   fix: no retry or fallback can) is raised instead, with the memory unchanged;
3. project the prompt (``ContextProjector.project``) under the (calibrated) budget.

``observe_usage(prompt_tokens, projection)`` after the call calibrates: the smoothed ratio of
reported to projected tokens tightens the budget and the compaction target when the local count
runs low (it never loosens them past the profile's numbers).
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from compactkit.budget import ProfileRegistry, TokenCounter
from compactkit.compressors import LadderCompressor, MemoryCompressor, as_memory_compressor
from compactkit.compressors.base import CompressorLike
from compactkit.errors import ConcurrencyError, ConfigError
from compactkit.governance.policy import (
    CompactPolicy,
    PolicyState,
    TriggerLike,
    model_thresholds,
)
from compactkit.governance.projector import ContextProjector, Projection, checked_tools
from compactkit.governance.status import BudgetStatus
from compactkit.items import Item, Message, Tool
from compactkit.items.groups import group_items
from compactkit.items.snapshot import CompactResult, MemorySnapshot, SummaryRole
from compactkit.memory.base import AgentMemory
from compactkit.runtime._compaction import _compaction_event, _off_event
from compactkit.runtime._governor_setup import (
    _check_for_model,
    _check_parts,
    _default_projector,
    _require_memory,
)
from compactkit.runtime._governor_setup import (
    default_policy as default_policy,  # its home since the split; imported from here by others
)
from compactkit.runtime._owners import ProjectionOwners
from compactkit.runtime._request import answer_request, honoured
from compactkit.runtime.background import BackgroundCompaction
from compactkit.runtime.events import (
    CompactionRequest,
    CompactionVetoed,
    Event,
    EventHandler,
    ProjectionEvent,
    emit,
)
from compactkit.runtime.scheduling import (
    CompactionScheduler,
    ForegroundCompaction,
    GovernedStep,
    Instructions,
    StepPlan,
)

if TYPE_CHECKING:  # the preview loads with its first use (it pulls in the summarizer)
    from compactkit.compressors.preview import CompactionPreview

__all__ = ["GovernedStep", "Governor"]

_SMOOTHING = 0.3  # weight of the newest usage ratio in the calibration average
_RATIO_BOUNDS = (0.25, 4.0)  # a ratio outside this is a reporting glitch, not a counter error
_CEILING_MARGIN = 64  # tokens a raised compaction target leaves below the budget


class _Track:
    """Per-memory counters: the same governor may serve many sessions."""

    __slots__ = (
        "base",
        "floor",
        "last_step",
        "last_usage",
        "ratio",
        "rearm",
        "requested",
        "since",
        "turn",
        "used",
    )

    def __init__(self) -> None:
        self.floor: int | None = None  # the tokens measured right after the last compaction
        self.base: tuple[int, int] | None = None  # (tokens, turn) the growth is measured from
        self.requested = False  # the agent asked for a compaction at the next step
        self.used: int | None = None  # the tokens the last step measured (after compacting)
        self.last_step: float | None = None  # the clock when this memory's last step ended
        self.rearm: int | None = None  # tokens to reach before the trigger counts again
        self.turn = 0
        self.since = 0
        self.last_usage: int | None = None
        self.ratio = 1.0  # reported/projected at this memory's last observed call


class Governor:
    """Per-model governance: measure → compact when the policy fires → apply → project.

    Build it with ``Governor.for_model(model)`` for the model's defaults, or pass the parts.

    Args:
        projector: Builds each prompt under the budget.
        policy: When to compact and down to what; ``None`` turns compaction off (a
            ``compressor`` then runs only on ``force=True``).
        compressor: What compacts; default a ``LadderCompressor`` sized from ``policy`` (its
            target leaves room for the instructions and tool schemas of each step).
        counter: Counts tokens (default: the projector's counter).
        on_event: Called with every event, as it happens.
        before_compaction: Asked before every compaction; returning ``False`` vetoes it.
        background: Compact in the background from a soft threshold on, waiting only at the
            policy's trigger (docs/background.md). Without it, a compaction runs inside the
            step that requests it (``ForegroundCompaction``); either way the scheduler drives
            the step through the governor's public seam (``compactkit.runtime.scheduling``).
        clock: Seconds, for the idle time ``cache_cold`` reads (default ``time.monotonic``).
        status: Append the budget status line to every prompt (``BudgetStatus``; opt-in, see
            docs/control.md); ``request_compaction`` is honoured either way.

    One governor may serve many memories and threads; its per-memory counters (steps since the
    last compaction, the last reported usage) are kept per memory object.
    """

    def __init__(
        self,
        projector: ContextProjector,
        *,
        policy: CompactPolicy | None = None,
        compressor: CompressorLike | None = None,
        counter: TokenCounter | None = None,
        on_event: EventHandler | None = None,
        before_compaction: Callable[[CompactionRequest], bool] | None = None,
        background: BackgroundCompaction | None = None,
        clock: Callable[[], float] = time.monotonic,
        status: BudgetStatus | None = None,
    ) -> None:
        if not isinstance(projector, ContextProjector):
            raise ConfigError(
                f"projector must be a ContextProjector, got {type(projector).__name__}; build "
                "one with ContextProjector.for_model(model)"
            )
        if policy is not None and not isinstance(policy, CompactPolicy):
            raise ConfigError(f"policy must be a CompactPolicy or None, got {policy!r:.80}")
        if compressor is not None:  # a plain function is a FunctionCompressor
            compressor = as_memory_compressor(compressor)
        for name, hook in (("on_event", on_event), ("before_compaction", before_compaction)):
            if hook is not None and not callable(hook):
                raise ConfigError(f"{name} must be callable, got {hook!r:.80}")
        _check_parts(background, policy, status)
        self.status = status
        self.projector = projector
        self.policy = policy
        self.counter: TokenCounter = counter or projector.counter
        self._default_compressor = compressor is None and policy is not None
        self.compressor: MemoryCompressor | None = (
            LadderCompressor(
                target_tokens=policy.target_tokens(), counter=self.counter, forget=False
            )
            if compressor is None and policy is not None
            else compressor
        )
        self.on_event = on_event
        self.before_compaction = before_compaction
        self.background = background
        # Where a requested compaction runs: in the step, or off it (runtime/scheduling.py).
        self.scheduler: CompactionScheduler = (
            background if background is not None else ForegroundCompaction()
        )
        self.clock = clock
        self._calibration = 1.0
        self._lock = threading.Lock()
        self._tracks: weakref.WeakKeyDictionary[Any, _Track] = weakref.WeakKeyDictionary()
        self._strong_tracks: dict[int, tuple[object, _Track]] = {}
        # Which memory's track each recent prompt was made for (held weakly: see _owners.py).
        self._owners: ProjectionOwners[_Track] = ProjectionOwners()
        self._ladder: tuple[tuple[int, ...], int, LadderCompressor] | None = None

    @classmethod
    def for_model(
        cls,
        model: str,
        *,
        budget: int | None = None,
        trigger: TriggerLike | int | float | None = None,
        target: int | float | None = None,
        registry: ProfileRegistry | None = None,
        projector: ContextProjector | None = None,
        policy: CompactPolicy | None = None,
        compressor: CompressorLike | None = None,
        compaction: bool = True,
        summary_role: SummaryRole | None = None,
        on_event: EventHandler | None = None,
        before_compaction: Callable[[CompactionRequest], bool] | None = None,
        background: BackgroundCompaction | None = None,
        clock: Callable[[], float] = time.monotonic,
        budget_visible: bool = False,
        **unknown: object,
    ) -> Governor:
        """The model's defaults, from its profile: its counter and usable input budget, a policy
        firing over its trigger tokens (local count or provider-reported usage) and aiming for
        its target tokens, and the ladder. Any part may be given instead.

        Args:
            model: The model name as sent to the provider.
            budget: The usable input budget in tokens (default: the profile's). It sizes the
                projection and the policy alike: the default trigger and target keep their
                shares of it (80 % and 50 %), so compaction happens before the prompt has to
                drop or mask history.
            trigger: When to compact (tokens, a share of the budget, or a trigger); see
                ``CompactPolicy.for_model``.
            target: Down to what (tokens or a share); without it a ``trigger`` gets one below it.
            registry: Where to look the model up (default: the process-wide registry).
            projector: Replaces the default projector.
            policy: Replaces the default policy.
            compressor: Replaces the default ladder.
            compaction: ``False`` turns compaction off (no policy, no compressor): the prompt
                is only projected. Passing ``policy``/``compressor`` with it is a ``ConfigError``.
            summary_role: The role of the summary message in the default projector.
            on_event: Called with every event.
            before_compaction: Asked before every compaction; ``False`` vetoes it.
            background: Compact in the background from a soft threshold (docs/background.md).
            clock: Seconds, for the idle time ``cache_cold`` reads (default ``time.monotonic``).
            budget_visible: Append the one-line budget status to every prompt
                (``BudgetStatus``; docs/control.md).

        Raises:
            ConfigError: the model is unknown, or the options contradict each other.
        """
        if unknown:
            known = inspect.signature(cls.for_model).parameters
            raise ConfigError.unknown_options(
                "Governor.for_model", unknown, [n for n in known if n not in ("model", "unknown")]
            )
        _check_for_model(
            model,
            compaction=compaction,
            budget=budget,
            shaped=(trigger, target),
            projector=projector,
            policy=policy,
            compressor=compressor,
            summary_role=summary_role,
        )
        usable, _, _ = model_thresholds(model, budget, registry)
        if projector is None:
            projector = _default_projector(model, usable, registry, summary_role)
        if compaction and policy is None:
            policy = default_policy(
                model,
                budget=budget,
                trigger=trigger,
                target=target,
                registry=registry,
                cache_aware=projector.cache_aware,
            )
        return cls(
            projector,
            policy=policy if compaction else None,
            compressor=compressor,
            on_event=on_event,
            before_compaction=before_compaction,
            background=background,
            clock=clock,
            status=BudgetStatus(policy if compaction else None) if budget_visible else None,
        )

    # -- calibration ---------------------------------------------------------------------------

    @property
    def calibration(self) -> float:
        """Smoothed ratio of provider-reported to locally counted prompt tokens (1.0 until a
        usage is observed). Above 1 it tightens the budget and the target; below 1 it is
        recorded but never loosens them."""
        return self._calibration

    def observe_usage(self, prompt_tokens: int, projection: Projection) -> None:
        """Record the provider's ``prompt_tokens`` for the call that sent ``projection``.

        It calibrates the counter (smoothed ratio reported/projected) and feeds the policy's
        ``usage_over`` trigger at the next step of the memory the projection came from.

        Raises:
            ConfigError: ``prompt_tokens`` is not a count >= 0.
        """
        if isinstance(prompt_tokens, bool) or not isinstance(prompt_tokens, int):
            raise ConfigError(f"prompt_tokens must be an int, got {prompt_tokens!r}")
        if prompt_tokens < 0:
            raise ConfigError(f"prompt_tokens must be >= 0, got {prompt_tokens!r}")
        with self._lock:
            track = self._owners.owner_of(projection)
            if track is not None:
                track.last_usage = prompt_tokens
            if projection.tokens > 0 and prompt_tokens > 0:
                low, high = _RATIO_BOUNDS
                ratio = min(high, max(low, prompt_tokens / projection.tokens))
                self._calibration += _SMOOTHING * (ratio - self._calibration)
                if track is not None:
                    track.ratio = ratio

    def observe_overflow(self, projection: Projection, reported_tokens: int | None = None) -> None:
        """Record that the provider refused ``projection`` as too long.

        The calibration jumps to what the provider reported (or 25% above the current one when
        it did not say), so the next, forced step compacts and projects to a smaller prompt.
        """
        with self._lock:
            track = self._owners.owner_of(projection)
            current = max(1.0, self._calibration, track.ratio if track else 1.0)
            if reported_tokens and projection.tokens > 0:
                ratio = max(current, reported_tokens / projection.tokens * 1.02)
            else:
                ratio = current * 1.25
            ratio = min(_RATIO_BOUNDS[1], ratio)
            self._calibration = max(self._calibration, ratio)
            if track is not None:
                track.ratio = ratio

    # -- the step ------------------------------------------------------------------------------

    def step(
        self,
        memory: AgentMemory,
        *,
        instructions: Instructions = None,
        tools: Sequence[Tool] = (),
        usage: int | None = None,
        force: bool = False,
    ) -> GovernedStep:
        """Measure, compact when due (or ``force``), apply atomically and project.

        Args:
            memory: The session's memory; a compaction is applied to it.
            instructions: The system instructions sent first.
            tools: The tool schemas sent with the request (they count).
            usage: The provider's ``prompt_tokens`` of the previous call, when the caller did
                not report it with ``observe_usage``.
            force: Compact even when the policy does not fire (overflow recovery).

        Raises:
            BudgetError: what may never be dropped does not fit the budget.
            ConfigError: bad arguments.
        """
        return self.scheduler.step(
            self, memory, instructions=instructions, tools=tools, usage=usage, force=force
        )

    async def astep(
        self,
        memory: AgentMemory,
        *,
        instructions: Instructions = None,
        tools: Sequence[Tool] = (),
        usage: int | None = None,
        force: bool = False,
    ) -> GovernedStep:
        """``step`` for async code: the compressor's ``acompress`` when it has one; counting,
        storage and a sync compressor run in a worker thread, off the event loop."""
        return await self.scheduler.astep(
            self, memory, instructions=instructions, tools=tools, usage=usage, force=force
        )

    def request_compaction(self, memory: AgentMemory) -> str:
        """The agent asks for a compaction of ``memory`` at its next step (between subtasks,
        say): the plain answer to give it.

        It is honoured when it can make progress: the next step compacts down to the policy's
        target, through the usual compressor (its breaker and fallback included). It is
        declined, and the answer says why, when compaction is off, the context is already at
        or under the target, or the last compaction could not reach the target and the
        context has not grown enough since (``CompactPolicy.rearm_tokens``). One request runs
        at most one compaction.

        Raises:
            ConfigError: ``memory`` is not a memory (for a ``MessageCompactor``, pass
                ``compactor.governed_memory()``).
        """
        if not isinstance(memory, AgentMemory):
            raise ConfigError(
                f"request_compaction takes the memory this governor steps, got "
                f"{type(memory).__name__}; for a MessageCompactor pass "
                "compactor.governed_memory() (called)"
            )
        track = self._track(memory)
        with self._lock:
            answer = answer_request(
                self.policy,
                compressor=self.compressor is not None,
                used=track.used,
                rearm=track.rearm,
                floor=track.floor,
                pending=track.requested,
            )
            track.requested = answer.accepted
        return answer.text

    def preview(
        self,
        memory: AgentMemory,
        *,
        instructions: Instructions = None,
        tools: Sequence[Tool] = (),
    ) -> CompactionPreview:
        """What a compaction of ``memory`` would do now, without doing it or writing anything:
        the items kept, masked and folded, the tokens before and after, the summarizer calls
        (an LLM summarizer is never called: its calls are planned and their tokens estimated).

        It previews the compaction ``step(force=True)`` would run, whether or not the policy
        would fire (``step`` reports that in ``state``).

        Raises:
            ConfigError: compaction is off, or the compressor is of a kind a preview cannot
                run without calling a model.
        """
        tools = checked_tools(tools)
        self.projector.check_instructions(instructions)
        compressor = self._compressor_for(instructions, tools, self._track(memory))
        if compressor is None:
            raise ConfigError(
                "this governor has no compressor (compaction is off): nothing to preview"
            )
        from compactkit.compressors.preview import preview_compaction  # (loads the summarizer)

        return preview_compaction(compressor, memory.snapshot(), counter=self.counter, tools=tools)

    # -- the scheduling seam (StepSeam: what ForegroundCompaction and BackgroundCompaction use) --

    def prepare(
        self,
        memory: AgentMemory,
        *,
        instructions: Instructions,
        tools: Sequence[Tool],
        usage: int | None,
        force: bool,
    ) -> StepPlan:
        """Measure ``memory`` and decide whether to compact it now (a scheduler's first part)."""
        return self._prepare(memory, instructions, tools, usage, force)

    def compressor_for(
        self, plan: StepPlan, *, instructions: Instructions, tools: Sequence[Tool]
    ) -> MemoryCompressor | None:
        """The compressor for ``plan``'s step (the default ladder, sized for the step)."""
        return self._compressor_for(instructions, tools, plan.track, plan.snapshot)

    def finish(
        self,
        memory: AgentMemory,
        plan: StepPlan,
        result: CompactResult | None,
        *,
        instructions: Instructions,
        tools: Sequence[Tool],
    ) -> GovernedStep:
        """Apply ``result`` (if any) atomically and project the prompt (a scheduler's last part)."""
        return self._finish(memory, plan, result, instructions, tools)

    def record_compaction(self, memory: AgentMemory) -> None:
        """A compaction was applied to ``memory`` outside a step (in the background): the
        counters restart, and the last reported usage no longer describes the prompt."""
        track = self._track(memory)
        track.since = 0
        track.last_usage = None

    def emit(self, event: Event) -> Event:
        """Log ``event`` under the ``compactkit`` logger and hand it to ``on_event``."""
        return emit(event, self.on_event)

    # -- internals -----------------------------------------------------------------------------

    def _track(self, memory: AgentMemory) -> _Track:
        with self._lock:
            try:
                track = self._tracks.get(memory)
                if track is None:
                    track = self._tracks[memory] = _Track()
                return track
            except TypeError:  # not weak-referenceable: keep it (and its counters) alive
                entry = self._strong_tracks.get(id(memory))
                if entry is None or entry[0] is not memory:
                    entry = self._strong_tracks[id(memory)] = (memory, _Track())
                return entry[1]

    def _factor(self, track: _Track) -> float:
        # The smoothed ratio covers memories not observed yet; a memory's own latest ratio is
        # the best guess for its next prompt (same content, same tokenizer gap).
        return max(1.0, self._calibration, track.ratio)

    def _prepare(
        self,
        memory: AgentMemory,
        instructions: Instructions,
        tools: Sequence[Tool],
        usage: int | None,
        force: bool,
    ) -> StepPlan:
        _require_memory(memory)
        # Arguments are checked here, before the policy counts them, so a wrong one is named.
        tools = checked_tools(tools)
        self.projector.check_instructions(instructions)
        track = self._track(memory)
        if usage is not None:
            track.last_usage = usage
        snapshot = memory.snapshot()
        events: list[Event] = []
        policy = self.policy
        state: PolicyState | None = None
        if policy is not None:
            state = policy.measure(
                snapshot,
                self.counter,
                instructions=instructions,
                tools=tools,
                turn=track.turn,
                turns_since_compaction=track.since,
                last_usage=track.last_usage,
                forced=force,
                idle_seconds=None if track.last_step is None else self.clock() - track.last_step,
            )
            factor = self._factor(track)
            if factor > 1.0:
                state = dataclasses.replace(state, tokens=int(state.tokens * factor))
            if track.base is None:
                track.base = (state.tokens, track.turn)
            due = policy.should_compact(state)
            if due and not force and track.rearm is not None and state.tokens < track.rearm:
                due = False  # no progress since a compaction that could not reach the target
            if track.requested and not due:  # the agent asked (request_compaction)
                due = honoured(policy, state.tokens, track.rearm, track.floor)
        else:
            due = force or track.requested
        track.requested = False  # a request is for one step: it never repeats itself
        request = None
        if due:
            if state is None:
                state = PolicyState(tokens=0, items=len(snapshot.items), forced=True)
            request = CompactionRequest(
                snapshot=snapshot, state=state, forced=force, model=policy.model if policy else None
            )
            if self.compressor is None:
                events.append(self.emit(_off_event()))
                request = None
            elif self.before_compaction is not None and not self.before_compaction(request):
                events.append(self.emit(CompactionVetoed(request)))
                request = None
        return StepPlan(snapshot, state, track, request, events)

    def _finish(
        self,
        memory: AgentMemory,
        plan: StepPlan,
        result: CompactResult | None,
        instructions: Instructions,
        tools: Sequence[Tool],
    ) -> GovernedStep:
        snapshot, track, events = plan.snapshot, plan.track, plan.events
        applied = False
        if result is not None:
            applied, error = False, result.error
            if result.changed:
                try:
                    applied = memory.apply(result)
                except ConcurrencyError as exc:
                    error = f"not applied, the memory changed while compacting: {exc}"
            if applied:
                self.projector.forget(snapshot)  # the compacted history is not projected again
                snapshot = memory.snapshot()
            assert plan.request is not None
            growth = _growth(track, plan.request.state.tokens)
            if applied:
                self._compacted(track, snapshot, result, instructions, tools)
            event = _compaction_event(result, applied, plan.request, error, self.policy, growth)
            events.append(self.emit(event))
            if not applied:
                snapshot = memory.snapshot()  # a concurrent write may have landed
        budget = self.projector.budget
        if budget is None and self.policy is not None:
            budget = self.policy.budget
        factor = self._factor(track)
        if budget is not None and factor > 1.0:
            budget = max(1, int(budget / factor))
        # What a compaction request is judged by: this step's measure, unless it compacted.
        measured = track.floor if applied else plan.state.tokens if plan.state else None
        projection = self._project(snapshot, instructions, tools, budget, measured, track)
        track.turn += 1
        track.since += 1
        track.last_step = self.clock()
        report = projection.report
        events.append(
            self.emit(
                ProjectionEvent(
                    tokens=projection.tokens,
                    budget=projection.budget,
                    items=len(projection.items),
                    kept=report.kept,
                    masked=report.masked,
                    omitted=report.omitted,
                    notes=report.notes,
                    cached_prefix_tokens=report.cached_prefix_tokens,
                )
            )
        )
        with self._lock:
            self._owners.remember(projection, track)
        return GovernedStep(projection, result, tuple(events), plan.state)

    def _compacted(
        self,
        track: _Track,
        snapshot: MemorySnapshot,
        result: CompactResult,
        instructions: Instructions,
        tools: Sequence[Tool],
    ) -> None:
        """A compaction was applied: the counters restart; the policy's rearm and the size a
        compaction request is judged from (its floor) are taken."""
        track.since = 0
        track.last_usage = None  # it described the prompt before the compaction
        policy = self.policy
        if policy is None:
            return
        after = result.stats.tokens_after
        if after is not None:
            track.rearm = policy.rearm_tokens(after)
        floor = policy.measure(snapshot, self.counter, instructions=instructions, tools=tools)
        track.floor = int(floor.tokens * self._factor(track))
        track.base = (track.floor, track.turn)

    def _project(
        self,
        snapshot: MemorySnapshot,
        instructions: Instructions,
        tools: Sequence[Tool],
        budget: int | None,
        measured: int | None,
        track: _Track,
    ) -> Projection:
        """The prompt under ``budget``, with the budget status line when it is on; records the
        tokens a compaction request is judged by (``measured``, or the status line's)."""
        status = self.status
        track.used = measured
        if status is None or budget is None:
            return self.projector.project(
                snapshot, instructions=instructions, tools=tools, budget=budget
            )
        factor = self._factor(track)

        def project(room: int) -> Projection:
            return self.projector.project(
                snapshot, instructions=instructions, tools=tools, budget=room
            )

        def used(projection: Projection, line: int) -> int:
            measured = status.used(
                snapshot,
                self.counter,
                instructions=instructions,
                tools=tools,
                projected=projection.tokens + line,
            )
            track.used = int(measured * factor)  # as the policy's step measures it
            return measured

        return status.project(project, budget, self.counter, used)

    def _compressor_for(
        self,
        instructions: Instructions,
        tools: Sequence[Tool],
        track: _Track,
        snapshot: MemorySnapshot | None = None,
    ) -> MemoryCompressor | None:
        """The default ladder, sized for this step: the instructions and tool schemas are sent
        beside the memory, so the memory's target is what the policy's target leaves them."""
        if not self._default_compressor or self.policy is None:
            return self.compressor
        target = int(self.policy.target_tokens() / self._factor(track))
        if isinstance(instructions, str):
            instructions = [Message(role="system", content=instructions)] if instructions else []
        head = sum(self.counter.count_item(message) for message in instructions or ())
        target -= head
        # The newest group and the latest user input are never folded: when they alone fill
        # most of the target, the summary would have no room left for the user's goal and
        # rules. Aim higher then, up to what the projection can send whole.
        budget = self.projector.budget or self.policy.budget
        if snapshot is not None and budget:
            ceiling = int(budget / self._factor(track)) - head - _CEILING_MARGIN
            kept = _newest_tokens(snapshot.items, self.counter) + target // 2
            target = max(target, min(kept, ceiling))
        target = max(1, target)
        key = tuple(id(tool) for tool in tools)
        with self._lock:
            cached = self._ladder
            if cached is not None and cached[0] == key and cached[1] == target:
                return cached[2]
            ladder = LadderCompressor(
                target_tokens=target, counter=self.counter, tools=tools, forget=False
            )
            self._ladder = (key, target, ladder)
            return ladder


def _growth(track: _Track, tokens: int) -> float | None:
    """Request tokens gained per step since the last compaction (or the first step)."""
    if track.base is None:
        return None
    base_tokens, base_turn = track.base
    steps = track.turn - base_turn
    return (tokens - base_tokens) / steps if steps > 0 else None


def _newest_tokens(items: Sequence[Item], counter: TokenCounter) -> int:
    """Tokens of what no compaction folds at the end of a history: the latest user input and
    the newest group (the last assistant turn with its calls and outputs)."""
    last_user = next(
        (
            index
            for index in range(len(items) - 1, -1, -1)
            if isinstance(items[index], Message) and items[index].role == "user"  # type: ignore[union-attr]
        ),
        None,
    )
    if last_user is None:
        return 0
    groups = group_items(items, last_user)  # a user message always starts a group
    newest = groups[-1]
    tokens = counter.count_item(items[last_user])
    if newest.start != last_user:
        tokens += sum(counter.count_item(item) for item in items[newest.start : newest.stop])
    return tokens
