"""The governor's plain step: a step that does not compact, in one pass.

Most steps of a session compact nothing: about 130 between two compactions of a long agent
session (4,960 of the 4,999 calls of the real 10,000-message session in
``bench_real_sessions.py``). The generic step runs them through the scheduling seam
(``scheduling.ForegroundCompaction`` → ``Governor.prepare`` → ``prepare_step`` /
``measure_step`` → ``Governor.finish`` → ``finish_step`` / ``project_step``), which builds a
``StepPlan``, takes the compaction lease's fast exit and checks the arguments again at each
layer. ``plain_step`` does the same work in one function: it measures, and when nothing is due
it projects and records the step exactly as ``finish_step`` does; when anything it does not
handle is configured it returns ``None`` having changed nothing, and the caller takes the
generic step. When a compaction is due it returns ``None`` too, leaving its measure on the
memory's track for the generic step's ``prepare_step``: a trigger that keeps state (a cooldown)
and the clock are asked once per step, as on the generic path.

What it leaves to the generic step: a background scheduler or any scheduler but the default
one, the budget status line, a governor subclass or a governor whose seam methods were
replaced (on it, on its class, on the scheduler or its class), ``force``, and every step the policy (or an agent's request) makes due.
Cost model: the same counting, tally and projection calls as the generic step (so the same
caches are kept), minus a few hundred nanoseconds of layers and re-checks per step.
``tests/runtime/test_plain_step.py`` holds it to the generic step over random sessions.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from operator import attrgetter, is_
from typing import TYPE_CHECKING, Protocol

from compactkit.governance.projector import ContextProjector
from compactkit.items import Tool
from compactkit.memory.base import AgentMemory
from compactkit.runtime._governor_setup import _require_memory
from compactkit.runtime._governor_step import StepParts
from compactkit.runtime._governor_track import measure_step, projection_event, step_budget
from compactkit.runtime.events import logger
from compactkit.runtime.scheduling import (
    CompactionScheduler,
    ForegroundCompaction,
    GovernedStep,
    Instructions,
)

if TYPE_CHECKING:
    from compactkit.governance.policy import PolicyState
    from compactkit.items.snapshot import MemorySnapshot
    from compactkit.runtime._governor_track import Track
    from compactkit.runtime.events import EventHandler

__all__ = ["plain_step", "remember_seam"]


class PlainParts(StepParts, Protocol):
    """What the one-pass step reads of its ``Governor`` (a protocol: governor.py imports this
    module): the generic step's parts, its scheduler and its event handler."""

    scheduler: CompactionScheduler
    on_event: EventHandler | None


_SEAM = ("prepare", "finish", "compressor_for", "emit", "_track", "_factor")
"""Methods of the governor a replaced (or overridden) one of sends to the generic step."""
_SEAM_OF = attrgetter(*_SEAM)


def plain_step(
    governor: PlainParts,
    memory: AgentMemory,
    instructions: Instructions,
    tools: Sequence[Tool],
    usage: int | None,
) -> GovernedStep | None:
    """``governor.step(memory, ...)`` when it compacts nothing; ``None`` (nothing changed)
    when the generic step must run: a compaction is due, or the governor is not one this path
    knows (see the module docstring; the caller sends a subclass's steps to the generic
    step itself)."""
    if (
        type(governor.scheduler) is not ForegroundCompaction
        or governor.status is not None
        or _custom(governor)
    ):
        return None
    # The generic step's checks, in its order (a wrong argument is named the same way).
    _require_memory(memory)
    projector = governor.projector
    tools = projector.check_tools(tools)
    projector.check_instructions(instructions)
    track = governor._track(memory)
    if usage is not None:
        track.last_usage = usage  # (the generic step sets it again: the same value)
    snapshot = memory.snapshot()
    policy = governor.policy
    factor = governor._factor(track)
    state, due = _measured(governor, track, snapshot, instructions, tools)
    if due:
        if state is not None:  # the generic step decides on this measure, not a second one
            track.measured = (snapshot, state)
        return None
    track.requested = False  # a request is for one step: it never repeats itself
    # ``finish_step`` without a result: project under the calibrated budget and record it.
    track.used = state.tokens if state is not None else None
    budget = step_budget(projector.budget, policy, factor)
    # (checked above: ``project``'s checks would pass; a projector subclass keeps its own)
    if type(projector) is ContextProjector:
        projection = projector.project_checked(snapshot, instructions, tools, budget)
    else:
        projection = projector.project(
            snapshot, instructions=instructions, tools=tools, budget=budget
        )
    track.turn += 1
    track.since += 1
    track.last_step = governor.clock()
    event = projection_event(projection)
    if governor.on_event is not None or logger.isEnabledFor(logging.DEBUG):
        governor.emit(event)  # (a projection is logged at DEBUG: else emitting does nothing)
    with governor._lock:
        governor._owners.remember(projection, track)
    return GovernedStep(projection, None, (event,), state)


def _measured(
    governor: PlainParts,
    track: Track,
    snapshot: MemorySnapshot,
    instructions: Instructions,
    tools: Sequence[Tool],
) -> tuple[PolicyState | None, bool]:
    """The generic step's measure and decision (``measure_step``; without a policy, whether
    the agent asked)."""
    policy = governor.policy
    if policy is None:
        return None, track.requested
    return measure_step(
        policy,
        snapshot,
        governor.counter,
        track,
        instructions,
        tools,
        False,
        governor.clock,
        governor._factor,
    )


_ORIGINALS: list[object] = []
"""The governor class's own seam functions (in ``_SEAM``'s order), as ``remember_seam`` found
them at import."""
_FOREGROUND_STEP = ForegroundCompaction.__dict__["step"]


def remember_seam(cls: type) -> None:
    """Keep ``cls``'s seam functions (``governor.py`` calls it once, after defining
    ``Governor``): one patched on the class later (``mock.patch.object(Governor, "finish")``)
    sends every step to the generic path."""
    _ORIGINALS[:] = [cls.__dict__[name] for name in _SEAM]


def _custom(governor: PlainParts) -> bool:
    """Whether a seam method was replaced: on the governor itself, on its class (the caller
    checked that it is no subclass), on the default scheduler's class or on the scheduler."""
    if not vars(governor).keys().isdisjoint(_SEAM):
        return True
    try:  # (the class's own functions: the caller checked that it is no subclass)
        found = _SEAM_OF(type(governor))  # (one tuple, in C; the type's attribute cache)
    except AttributeError:  # one deleted from the class
        return True
    if not all(map(is_, found, _ORIGINALS)):  # (by identity, in C)
        return True
    scheduler = governor.scheduler
    return ForegroundCompaction.__dict__["step"] is not _FOREGROUND_STEP or "step" in getattr(
        scheduler, "__dict__", ()
    )
