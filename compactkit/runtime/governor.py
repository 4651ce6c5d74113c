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

import inspect
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from compactkit.budget import ProfileRegistry, TokenCounter
from compactkit.compressors import LadderCompressor, MemoryCompressor
from compactkit.compressors.base import CompressorLike
from compactkit.errors import ConfigError
from compactkit.governance.policy import (
    CompactPolicy,
    TriggerLike,
)
from compactkit.governance.projector import ContextProjector, Projection, checked_tools
from compactkit.governance.status import BudgetStatus
from compactkit.items import Tool
from compactkit.items.snapshot import CompactResult, MemorySnapshot, SummaryRole
from compactkit.memory.base import AgentMemory
from compactkit.runtime._governor_plain import plain_step, remember_seam
from compactkit.runtime._governor_setup import (
    _check_parts,
    _check_prompt_tokens,
    _checked_init,
    _for_model_parts,
)
from compactkit.runtime._governor_setup import (
    default_policy as default_policy,  # its home since the split; imported from here by others
)
from compactkit.runtime._governor_step import finish_step, prepare_step
from compactkit.runtime._governor_track import (
    LadderCache,
    Track,
    Tracks,
    ladder_target,
    observed_overflow,
    observed_usage,
)
from compactkit.runtime._owners import ProjectionOwners
from compactkit.runtime._request import answer_request
from compactkit.runtime.events import (
    CompactionRequest,
    Event,
    EventHandler,
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
    from compactkit.runtime.background import BackgroundCompaction  # (asyncio: with its use)

__all__ = ["GovernedStep", "Governor"]


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

    _plain_steps = True
    """Whether a step that compacts nothing takes ``_governor_plain.plain_step`` (the same
    result in one pass; ``False`` sends every step through the scheduler: the reference)."""

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
        compressor = _checked_init(projector, policy, compressor, on_event, before_compaction)
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
        self._tracks = Tracks()
        # Which memory's track each recent prompt was made for (held weakly: see _owners.py).
        self._owners: ProjectionOwners[Track] = ProjectionOwners()
        self._ladders = LadderCache()

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
        projector, policy = _for_model_parts(
            model,
            compaction=compaction,
            budget=budget,
            shaped=(trigger, target),
            registry=registry,
            projector=projector,
            policy=policy,
            compressor=compressor,
            summary_role=summary_role,
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
        _check_prompt_tokens(prompt_tokens)
        with self._lock:
            track = self._owners.owner_of(projection)
            self._calibration = observed_usage(
                self._calibration, track, prompt_tokens, projection.tokens
            )

    def observe_overflow(self, projection: Projection, reported_tokens: int | None = None) -> None:
        """Record that the provider refused ``projection`` as too long.

        The calibration jumps to what the provider reported (or 25% above the current one when
        it did not say), so the next, forced step compacts and projects to a smaller prompt.
        """
        with self._lock:
            track = self._owners.owner_of(projection)
            self._calibration = observed_overflow(
                self._calibration, track, reported_tokens, projection.tokens
            )

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
        # A step that compacts nothing, in one pass (_governor_plain.py); a subclass may
        # override the seam, so its steps take the scheduler.
        if not force and self._plain_steps and type(self) is Governor:
            step = plain_step(self, memory, instructions, tools, usage)
            if step is not None:
                return step
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
        return prepare_step(self, memory, instructions, tools, usage, force)

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
        return finish_step(self, memory, plan, result, instructions, tools)

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

    def _track(self, memory: AgentMemory) -> Track:
        with self._lock:
            return self._tracks.of(memory)

    def _factor(self, track: Track) -> float:
        # The smoothed ratio covers memories not observed yet; a memory's own latest ratio is
        # the best guess for its next prompt (same content, same tokenizer gap).
        return max(1.0, self._calibration, track.ratio)

    def _compressor_for(
        self,
        instructions: Instructions,
        tools: Sequence[Tool],
        track: Track,
        snapshot: MemorySnapshot | None = None,
    ) -> MemoryCompressor | None:
        """The default ladder, sized for this step: the instructions and tool schemas are sent
        beside the memory, so the memory's target is what the policy's target leaves them."""
        if not self._default_compressor or self.policy is None:
            return self.compressor
        budget = self.projector.budget or self.policy.budget
        target = ladder_target(
            self.policy, budget, self.counter, instructions, snapshot, self._factor(track)
        )
        with self._lock:
            return self._ladders.get(target, tools, self.counter)


remember_seam(Governor)
