"""The ``Governor``'s per-memory bookkeeping and the arithmetic of one step on it: the
counters kept for each memory it steps (``Track``, ``Tracks``), the calibration they feed (the
ratios of reported to projected tokens), whether a measured step is due, the counters' restart
after a compaction, the step's budget and projection (which record what a compaction request is
judged by) and the default ladder's sizing and reuse. They live apart from ``governor.py`` so
that module keeps the flow of a step (measure, compact, apply, project) and the public API,
while the numbers one memory's counters go through read in one place."""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from compactkit.budget import TokenCounter
from compactkit.compressors import LadderCompressor
from compactkit.governance.policy import CompactPolicy, PolicyState
from compactkit.governance.projector import ContextProjector, Projection
from compactkit.governance.status import BudgetStatus
from compactkit.items import Item, Message, Tool
from compactkit.items.groups import group_items
from compactkit.items.snapshot import CompactResult, MemorySnapshot
from compactkit.runtime._request import honoured
from compactkit.runtime.events import ProjectionEvent
from compactkit.runtime.scheduling import Instructions

_SMOOTHING = 0.3  # weight of the newest usage ratio in the calibration average
_RATIO_BOUNDS = (0.25, 4.0)  # a ratio outside this is a reporting glitch, not a counter error
_CEILING_MARGIN = 64  # tokens a raised compaction target leaves below the budget


class Track:
    """Per-memory counters: the same governor may serve many sessions."""

    __slots__ = (
        "base",
        "floor",
        "last_step",
        "last_usage",
        "measured",
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
        # The plain step's measure of a step it found due, for the generic step it hands the
        # step to (``prepare_step``): the trigger and the clock are asked once per step.
        self.measured: tuple[MemorySnapshot, PolicyState] | None = None


class Tracks:
    """Each memory's ``Track``, held weakly (a memory not weak-referenceable keeps its own)."""

    __slots__ = ("_strong", "_weak")

    def __init__(self) -> None:
        self._weak: weakref.WeakKeyDictionary[Any, Track] = weakref.WeakKeyDictionary()
        self._strong: dict[int, tuple[object, Track]] = {}

    def of(self, memory: object) -> Track:
        """``memory``'s track, made at its first step (the caller holds the governor's lock)."""
        try:
            track = self._weak.get(memory)
            if track is None:
                track = self._weak[memory] = Track()
            return track
        except TypeError:  # not weak-referenceable: keep it (and its counters) alive
            entry = self._strong.get(id(memory))
            if entry is None or entry[0] is not memory:
                entry = self._strong[id(memory)] = (memory, Track())
            return entry[1]


class LadderCache:
    """The last default ladder built, reused while a step's target and tools are the same."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: tuple[tuple[int, ...], int, LadderCompressor] | None = None

    def get(self, target: int, tools: Sequence[Tool], counter: TokenCounter) -> LadderCompressor:
        """The ladder for ``target`` and ``tools`` (the caller holds the governor's lock)."""
        key = tuple(id(tool) for tool in tools)
        cached = self._last
        if cached is not None and cached[0] == key and cached[1] == target:
            return cached[2]
        ladder = LadderCompressor(target_tokens=target, counter=counter, tools=tools, forget=False)
        self._last = (key, target, ladder)
        return ladder


def observed_usage(
    calibration: float, track: Track | None, prompt_tokens: int, projected: int
) -> float:
    """The calibration after the provider reported ``prompt_tokens`` for a prompt of
    ``projected`` tokens (made for ``track``'s memory, when known): the smoothed ratio of
    reported to projected tokens, bounded (outside the bounds it is a reporting glitch)."""
    if track is not None:
        track.last_usage = prompt_tokens
    if projected > 0 and prompt_tokens > 0:
        low, high = _RATIO_BOUNDS
        ratio = min(high, max(low, prompt_tokens / projected))
        calibration += _SMOOTHING * (ratio - calibration)
        if track is not None:
            track.ratio = ratio
    return calibration


def observed_overflow(
    calibration: float, track: Track | None, reported_tokens: int | None, projected: int
) -> float:
    """The calibration after the provider refused a prompt of ``projected`` tokens as too
    long: what it reported (with a margin), or 25% above the current one when it did not
    say."""
    current = max(1.0, calibration, track.ratio if track else 1.0)
    if reported_tokens and projected > 0:
        ratio = max(current, reported_tokens / projected * 1.02)
    else:
        ratio = current * 1.25
    ratio = min(_RATIO_BOUNDS[1], ratio)
    if track is not None:
        track.ratio = ratio
    return max(calibration, ratio)


def step_budget(budget: int | None, policy: CompactPolicy | None, factor: float) -> int | None:
    """The budget a step projects under: the projector's (else the policy's), tightened by the
    calibration ``factor`` when the local count runs low."""
    if budget is None and policy is not None:
        budget = policy.budget
    if budget is not None and factor > 1.0:
        budget = max(1, int(budget / factor))
    return budget


def measure_step(
    policy: CompactPolicy,
    snapshot: MemorySnapshot,
    counter: TokenCounter,
    track: Track,
    instructions: Instructions,
    tools: Sequence[Tool],
    force: bool,
    clock: Callable[[], float],
    factor_of: Callable[[Track], float],
) -> tuple[PolicyState, bool]:
    """The step's measure as the policy sees it, scaled by the calibration, and whether it is
    due: the policy fires and the memory grew past its rearm since a short compaction, or the
    agent asked and the request can make progress."""
    last_step = track.last_step
    state = policy.measure(
        snapshot,
        counter,
        instructions=instructions,
        tools=tools,
        turn=track.turn,
        turns_since_compaction=track.since,
        last_usage=track.last_usage,
        forced=force,
        idle_seconds=None if last_step is None else clock() - last_step,
    )
    factor = factor_of(track)
    if factor > 1.0:
        state = dataclasses.replace(state, tokens=int(state.tokens * factor))
    if track.base is None:
        track.base = (state.tokens, track.turn)
    due = policy.should_compact(state)
    if due and not force and track.rearm is not None and state.tokens < track.rearm:
        due = False  # no progress since a compaction that could not reach the target
    if track.requested and not due:  # the agent asked (request_compaction)
        due = honoured(policy, state.tokens, track.rearm, track.floor)
    return state, due


def compacted(
    track: Track,
    policy: CompactPolicy | None,
    counter: TokenCounter,
    snapshot: MemorySnapshot,
    result: CompactResult,
    instructions: Instructions,
    tools: Sequence[Tool],
    factor_of: Callable[[Track], float],
) -> None:
    """A compaction was applied: the counters restart; the policy's rearm and the size a
    compaction request is judged from (its floor) are taken."""
    track.since = 0
    track.last_usage = None  # it described the prompt before the compaction
    if policy is None:
        return
    after = result.stats.tokens_after
    if after is not None:
        track.rearm = policy.rearm_tokens(after)
    floor = policy.measure(snapshot, counter, instructions=instructions, tools=tools)
    track.floor = int(floor.tokens * factor_of(track))
    track.base = (track.floor, track.turn)


def project_step(
    projector: ContextProjector,
    status: BudgetStatus | None,
    counter: TokenCounter,
    snapshot: MemorySnapshot,
    instructions: Instructions,
    tools: Sequence[Tool],
    budget: int | None,
    measured: int | None,
    track: Track,
    factor: float,
) -> Projection:
    """The prompt under ``budget``, with the budget status line when it is on; records the
    tokens a compaction request is judged by (``measured``, or the status line's)."""
    track.used = measured
    if status is None or budget is None:
        return projector.project(snapshot, instructions=instructions, tools=tools, budget=budget)

    def project(room: int) -> Projection:
        return projector.project(snapshot, instructions=instructions, tools=tools, budget=room)

    def used(projection: Projection, line: int) -> int:
        measured = status.used(
            snapshot,
            counter,
            instructions=instructions,
            tools=tools,
            projected=projection.tokens + line,
        )
        track.used = int(measured * factor)  # as the policy's step measures it
        return measured

    return status.project(project, budget, counter, used)


def projection_event(projection: Projection) -> ProjectionEvent:
    """The event reporting ``projection``: its size, budget and what it kept, masked, omitted."""
    report = projection.report
    return ProjectionEvent(
        tokens=projection.tokens,
        budget=projection.budget,
        items=len(projection.items),
        kept=report.kept,
        masked=report.masked,
        omitted=report.omitted,
        notes=report.notes,
        cached_prefix_tokens=report.cached_prefix_tokens,
    )


def ladder_target(
    policy: CompactPolicy,
    budget: int | None,
    counter: TokenCounter,
    instructions: Instructions,
    snapshot: MemorySnapshot | None,
    factor: float,
) -> int:
    """The default ladder's target for a step: the instructions and tool schemas are sent
    beside the memory, so the memory's target is what the policy's target leaves them."""
    target = int(policy.target_tokens() / factor)
    if isinstance(instructions, str):
        instructions = [Message(role="system", content=instructions)] if instructions else []
    head = sum(counter.count_item(message) for message in instructions or ())
    target -= head
    if head and budget:
        # The policy's share of what the instructions leave of the budget, not what they
        # leave of the target (a long system prompt would leave the history nothing).
        share = policy.target_tokens() / budget
        target = max(target, int((budget / factor - head) * share))
    # The newest group and the latest user input are never folded: when they alone fill
    # most of the target, the summary would have no room left for the user's goal and
    # rules. Aim higher then, up to what the projection can send whole.
    if snapshot is not None and budget:
        ceiling = int(budget / factor) - head - _CEILING_MARGIN
        kept = newest_tokens(snapshot.items, counter) + target // 2
        target = max(target, min(kept, ceiling))
    return max(1, target)


def growth(track: Track, tokens: int) -> float | None:
    """Request tokens gained per step since the last compaction (or the first step)."""
    if track.base is None:
        return None
    base_tokens, base_turn = track.base
    steps = track.turn - base_turn
    return (tokens - base_tokens) / steps if steps > 0 else None


def newest_tokens(items: Sequence[Item], counter: TokenCounter) -> int:
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
