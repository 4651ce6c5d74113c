"""Cache-aware projection: each prompt is the previous one plus what was appended.

Providers cache prompt prefixes: OpenAI the longest prefix it has seen (from 1,024 tokens, in
128-token steps), Anthropic up to the ``cache_control`` breakpoints of a request. Only a
byte-identical prefix hits. A projector that slides its window one group per turn, or masks one
more old output per turn, changes the prefix on every call and pays full price for the whole
prompt each time.

``StablePrefix`` is the cache-aware mode of ``ContextProjector`` (``cache_aware=True``, the
default of ``ContextProjector.for_model`` where the model's profile says the provider caches):

* between compactions a prompt is the previous prompt of the session followed by the items
  appended since: the window start, the masked outputs, the summary and the pinned prefix stay
  exactly as they were;
* compaction (by the governor) fires later and aims lower than by default
  (``cache_hysteresis``), because each one is a cache miss for everything after the
  instructions;
* when the extension no longer fits the budget (or the history changed other than by appending:
  a compaction, a pin, new instructions or tools), the prompt is planned afresh in one large
  step: the whole memory when it fits, else a window filled only to ``refill`` of the budget, so
  that many turns can be appended before the next re-plan.

``PrefixTracker`` (``_prefix.py``) measures, for every projection, the tokens that are a
byte-identical prefix of the previous prompt of the session: what a provider's prefix cache can
serve (``ProjectionReport.cached_prefix_tokens``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from compactkit.budget.profile import Budget
from compactkit.budget.tokens import TokenCounter
from compactkit.errors import BudgetError, ConfigError
from compactkit.governance._fast import extended
from compactkit.governance._incremental import sum_counts
from compactkit.governance._prefix import PrefixTracker, extends, same_tools
from compactkit.governance._prompt import Projection, ProjectionReport
from compactkit.items import FunctionCallOutput, Item, Message, Tool
from compactkit.items.groups import Group, group_items, group_slice
from compactkit.items.snapshot import MemorySnapshot, is_summary_message, unseal_summary
from compactkit.items.view import ItemsView, same_history

__all__ = [
    "CACHE_TARGET",
    "CACHE_TRIGGER",
    "DEFAULT_REFILL",
    "StablePrefix",
    "cache_hysteresis",
    "check_refill",
]

DEFAULT_REFILL = 0.75
"""A re-planned window fills at most this share of the budget; the rest is room to grow."""

CACHE_TRIGGER, CACHE_TARGET = 0.85, 0.4
"""Cache-aware compaction fires at 85 % of the usable input and aims for 40 % (the defaults are
80 % and 50 %): every compaction rewrites the summary, so everything after the instructions
misses the cache once; a wider hysteresis makes that rarer (bench_cache.py measures it)."""


def cache_hysteresis(budget: Budget) -> tuple[int, int]:
    """The (trigger, target) tokens of cache-aware governance for ``budget``.

    A trigger or target the user set in the budget policy is kept as it is; only the defaults
    are widened to ``CACHE_TRIGGER`` / ``CACHE_TARGET`` of the usable input.
    """
    chosen = budget.policy.model_fields_set
    usable = budget.usable_input
    trigger = budget.trigger_tokens
    if "trigger" not in chosen:
        trigger = max(trigger, int(CACHE_TRIGGER * usable))
    target = budget.target_tokens
    if "target" not in chosen:
        target = min(target, int(CACHE_TARGET * usable))
    return trigger, min(target, trigger - 1)


Instructions = str | Sequence[Message] | None
Plain = Callable[..., Projection]
"""The projector's own (not cache-aware) projection: ``(snapshot, *, instructions, tools,
budget) -> Projection``."""


def check_refill(refill: float) -> float:
    """``refill`` when it is a share of the budget in (0, 1]; else a ``ConfigError``."""
    if isinstance(refill, bool) or not isinstance(refill, int | float) or not 0 < refill <= 1:
        raise ConfigError(
            f"cache_refill must be a share of the budget in (0, 1], got {refill!r}; "
            f"the default {DEFAULT_REFILL} leaves a quarter of the budget to grow into"
        )
    return float(refill)


@dataclass(slots=True, eq=False)  # (never changed once built; not frozen: a frozen init
# costs more; found by identity, never compared)
class _Plan:
    """The last prompt of one session and what it was built from."""

    items: Sequence[Item]  # the snapshot's items
    summary: str
    instructions: Instructions
    tools: tuple[Tool, ...]
    prompt: Projection
    tail_start: int  # where the snapshot's last group starts
    sent: list[Item] | None = None
    """The list ``prompt.items`` is a view of (``None`` for a fresh plan's tuple): an extended
    prompt is this list with the new items appended, so extending costs O(new items)."""
    closed: bool = False
    """The snapshot's last group can no longer grow (known to ``extend_front``): whatever is
    appended starts a group of its own, so the next extension groups only the new items."""


class StablePrefix:
    """The cache-aware planner of one projector (see the module docstring).

    Args:
        counter: The projector's counter (counts the appended items).
        refill: A re-planned window fills at most this share of the budget.
        size: Sessions remembered (least recently used dropped first).
    """

    def __init__(self, counter: TokenCounter, refill: float = DEFAULT_REFILL, size: int = 16):
        self._counter = counter
        self._refill = check_refill(refill)
        self._size = size
        self._plans: list[_Plan] = []
        self._lock = threading.Lock()

    def project(
        self,
        plain: Plain,
        snapshot: MemorySnapshot,
        instructions: Instructions,
        tools: Sequence[Tool],
        budget: int,
    ) -> Projection:
        """The prompt for ``snapshot``: the previous prompt extended, or a fresh plan.

        ``plain(snapshot, instructions=, tools=, budget=)`` is the projector's own projection.
        """
        tools = tuple(tools)
        with self._lock:
            _position, plan, same = self._find(snapshot, instructions, tools)
        extended = self._extend(plan, snapshot, budget) if plan is not None and same else None
        sent: list[Item] | None = None
        if extended is not None:
            prompt, tail_start, sent = extended
        else:
            prompt = self._replan(plain, snapshot, instructions, tools, budget)
            tail_start = _tail_start(snapshot.items)
        new = _Plan(snapshot.items, snapshot.summary, instructions, tools, prompt, tail_start, sent)
        with self._lock:
            plans = self._plans
            if plan is not None and plan in plans:  # (by identity: wherever another thread
                plans.remove(plan)  # may have moved it meanwhile)
            # A prompt that sent the summary trimmed (the newest group left it no room) is not
            # extended: the next turn re-plans, and sends it whole once there is room again.
            if extended is not None or not _summary_trimmed(prompt, snapshot.summary):
                plans.insert(0, new)
            del plans[self._size :]
        return prompt

    def extend_front(
        self,
        snapshot: MemorySnapshot,
        instructions: Instructions,
        tools: tuple[Tool, ...],
        budget: int,
        prefixes: PrefixTracker,
    ) -> Projection | None:
        """``project`` followed by ``prefixes.observe`` and ``with_cached_prefix`` (what a
        cache-aware projection returns), in one pass, for the usual turn of a session: its plan
        is the front one, ``snapshot``'s items are a view of that plan's history grown by
        appends (O(1) to know), the rest of the request is the same and the extension fits.
        ``None``, with nothing changed, otherwise: the caller takes ``project``.

        It skips the plan search, the second ``Projection`` build and the tracker's search
        (``PrefixTracker.observe_extension``); the plans, the prompt's list and the tracker end
        as ``project`` leaves them (``tests/governance/test_extension.py``)."""
        plan = self._front(snapshot, instructions, tools)
        if plan is None:
            return None
        old, items = plan.items, snapshot.items
        prompt = plan.prompt
        if not _ends_with(prompt.items, _last(old)):
            return None
        new = items[len(old) :]
        # (a closed last group: the new items start groups of their own, grouped as they are)
        last = _appended_groups(
            group_slice(new, len(old)) if plan.closed else group_items(items, plan.tail_start)
        )
        if not last:
            return None
        tokens = prompt.tokens + sum_counts(self._counter, new)  # (counted: a loop in C)
        if tokens > budget:
            return None
        report = prompt.report
        notes = _notes(report, last)
        sent, grown = self._grown(plan, new)
        shared = prefixes.observe_extension(self._counter, grown, tools, tokens, prompt.items)
        counts = (report.kept + len(new), report.masked, report.omitted)
        projection = Projection(
            grown, tokens, budget, ProjectionReport(*counts, notes, report.masked_call_ids, shared)
        )
        new_plan = _Plan(
            items,
            snapshot.summary,
            instructions,
            tools,
            projection,
            last.start,
            sent,
            _closed(last),
        )
        with self._lock:
            plans = self._plans
            if plans and plans[0] is plan:
                plans[0] = new_plan
            else:  # another thread planned meanwhile: as ``project`` keeps its plans
                for position, kept in enumerate(plans):
                    if kept is plan:
                        del plans[position]
                        break
                plans.insert(0, new_plan)
                del plans[self._size :]
        return projection

    def _front(
        self, snapshot: MemorySnapshot, instructions: Instructions, tools: tuple[Tool, ...]
    ) -> _Plan | None:
        """The front plan, when ``snapshot`` is its history grown by appends (O(1) to know:
        views of one list) and the rest of the request is the same; else ``None``."""
        with self._lock:
            plan = self._plans[0] if self._plans else None
        if plan is None:
            return None
        old, items = plan.items, snapshot.items
        if (
            not old
            or len(items) == len(old)
            or not same_history(items, old)
            or plan.summary != snapshot.summary
            or not _same(plan.instructions, instructions)
            or not same_tools(plan.tools, tools)
        ):
            return None
        return plan

    def _find(
        self, snapshot: MemorySnapshot, instructions: Instructions, tools: tuple[Tool, ...]
    ) -> tuple[int | None, _Plan | None, bool]:
        """The session's last plan (the one whose items ``snapshot`` extends), and whether the
        rest of the request (summary, instructions, tools) is the same."""
        items = snapshot.items
        for position, plan in enumerate(self._plans):
            if not extends(items, plan.items):
                continue
            same = (
                plan.summary == snapshot.summary
                and _same(plan.instructions, instructions)
                and same_tools(plan.tools, tools)
            )
            return position, plan, same
        return None, None, False

    def _extend(
        self, plan: _Plan, snapshot: MemorySnapshot, budget: int
    ) -> tuple[Projection, int, list[Item] | None] | None:
        """The previous prompt plus the appended items, when that is a valid prompt that fits."""
        old, items = plan.items, snapshot.items
        prompt = plan.prompt
        if old and not _ends_with(prompt.items, old[-1]):
            return None  # the last prompt did not reach the end of the history: re-plan
        new = items[len(old) :]
        last = _appended(items, plan.tail_start) if items else None
        if last is False:
            return None  # an abandoned call or a stray output: the projector repairs it
        count = self._counter.count_item
        tokens = prompt.tokens + sum(map(count, new))
        if tokens > budget:
            return None
        if not new:
            return replace(prompt, budget=budget), plan.tail_start, plan.sent
        notes = _notes(prompt.report, last)
        sent, items = self._grown(plan, new)
        grown = extended(prompt, items, tokens, budget, len(new), notes)
        return grown, last.start if last is not None else plan.tail_start, sent

    def _grown(self, plan: _Plan, new: Sequence[Item]) -> tuple[list[Item], ItemsView]:
        """``plan``'s prompt list with ``new`` appended, and a view of it."""
        prompt = plan.prompt
        with self._lock:  # the prompt's list grows in place unless another prompt grew it
            sent = plan.sent
            if sent is None or len(sent) != len(prompt.items):
                sent = list(prompt.items)
            sent.extend(new)
            return sent, ItemsView(sent, len(sent))

    def _replan(
        self,
        plain: Plain,
        snapshot: MemorySnapshot,
        instructions: Instructions,
        tools: tuple[Tool, ...],
        budget: int,
    ) -> Projection:
        """A fresh prompt: the whole memory when it fits, else a window with room to grow."""
        full = plain(snapshot, instructions=instructions, tools=tools, budget=budget)
        if not full.report.omitted and not full.report.masked:
            return full
        low = int(budget * self._refill)
        if low >= budget or low <= 0:
            return full
        try:
            step = plain(
                snapshot, instructions=instructions, tools=tools, budget=low, fit_summary=False
            )
        except BudgetError:  # (with the summary whole: the lower fill never trims it)
            return full  # the parts never dropped need more than the refill share
        newest = len(snapshot.items) - _tail_start(snapshot.items)
        if newest and step.items[-newest:] != full.items[-newest:]:
            return full  # the lower fill would drop or mask the newest group: keep the full plan
        # The projection is judged against the real budget; only its fill was lower.
        return replace(step, budget=budget)


def _summary_trimmed(prompt: Projection, summary: str) -> bool:
    """Whether ``prompt`` sent ``summary`` trimmed to fit its budget (its summary message comes
    after the instructions and the leading system messages)."""
    if not summary:
        return False
    for item in prompt.items:
        if is_summary_message(item):
            return unseal_summary(item.text) != summary  # type: ignore[union-attr]
        if not (isinstance(item, Message) and item.role in ("system", "developer")):
            return False
    return False


def _appended(items: Sequence[Item], tail_start: int) -> Group | Literal[False] | None:
    """The last group of ``items`` (grouped from ``tail_start``, where the prompt's last group
    started), or ``False`` when the groups from there cannot extend a prompt as they are: a
    closed group with a call never answered, or an output answering no call (the projector
    repairs both); ``None`` when there is no group."""
    return _appended_groups(group_items(items, tail_start))


def _appended_groups(groups: list[Group]) -> Group | Literal[False] | None:
    """``_appended`` of the groups from the prompt's last group on."""
    for group in groups[:-1]:
        if group.pending or group.kind == "orphan":
            return False
    if groups and groups[-1].kind == "orphan":
        return False
    return groups[-1] if groups else None


def _closed(group: Group) -> bool:
    """Whether ``group``, the last of a history, can no longer grow: a message of its own or
    an orphan output (one item each), or a response with calls that all have their outputs
    (``group_items`` then starts a new group at whatever follows: a message, a response, an
    output of no call of it). A response without calls may still receive them."""
    if group.kind == "assistant":
        return bool(group.call_ids) and not group.pending
    return True


def _notes(report: ProjectionReport, last: Group | None) -> tuple[str, ...]:
    """The extended prompt's notes: ``report``'s, with the pending-call note of ``last``."""
    notes = report.notes
    if notes:  # (usually none: a generator per turn costs more than the filter)
        notes = tuple(note for note in notes if "pending call" not in note)
    if last is not None and last.pending:
        ids = ", ".join(repr(call_id) for call_id in last.pending)
        notes += (f"pending call(s) {ids} kept without output; send their outputs first",)
    return notes


def _same(a: Instructions, b: Instructions) -> bool:
    if a is b:
        return True
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return a == b
    return tuple(a) == tuple(b)


def _last(items: Sequence[Item]) -> Item:
    """``items[-1]`` of a non-empty sequence (a view's: read from its list, without the
    view's indexing, a Python call)."""
    if type(items) is ItemsView:
        return items._source[items._stop - 1]
    return items[-1]


def _ends_with(prompt: Sequence[Item], last: Item) -> bool:
    """Whether ``prompt`` ends with ``last`` as sent (itself, or its masked placeholder)."""
    if not prompt:
        return False
    end = _last(prompt)
    if end is last:
        return True
    return (
        isinstance(end, FunctionCallOutput)
        and isinstance(last, FunctionCallOutput)
        and end.call_id == last.call_id
    )


def _tail_start(items: Sequence[Item]) -> int:
    """Where the last group of ``items`` starts (it is regrouped as items are appended)."""
    start = len(items) - 1
    while start > 0:
        item = items[start]
        if isinstance(item, Message) and item.role != "assistant":
            break
        start -= 1
    groups = group_items(items, max(start, 0))
    return groups[-1].start if groups else len(items)
