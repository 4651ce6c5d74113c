"""The per-turn view: what a model sees of a memory snapshot, under a token budget.

``ContextProjector.project`` is pure: it reads a ``MemorySnapshot`` and returns a ``Projection``;
the snapshot (and the memory behind it) is never changed. The rules (docs/projector.md):

1. Always kept, or ``BudgetError`` naming the part that does not fit: the system instructions
   (``instructions=`` and the snapshot's leading system/developer messages), the summary (as its
   own marked message right after them), the latest user input, pinned items (with their whole
   group) and pending calls (the last group, when it has calls without output). Tool schemas and
   reply priming count too: the budget is a ceiling on the whole request.
2. Then whole groups, newest first, while they fit. Before any group is dropped, tool outputs
   over ``mask_threshold`` tokens are replaced by a short placeholder that keeps ``call_id`` and
   ``seq``; the oldest are masked first, and only as many as the budget needs.
3. Shape: a pinned prefix (instructions, summary, pinned groups and the latest user input that
   lie before the window, in order) followed by one contiguous suffix of whole groups.

Per-turn cost is O(new items + window): group boundaries, pinned groups and the latest user
input are indexed incrementally as the history grows, counts are cached per item by the counter,
and the fill stops at the first group that does not fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field, fields
from typing import Any

from compactkit.budget.profiles import ProfileRegistry, budget_for
from compactkit.budget.tokens import TokenCounter, counter_for
from compactkit.errors import ConfigError
from compactkit.governance._cache import DEFAULT_REFILL
from compactkit.governance._fast import with_cached_prefix
from compactkit.governance._memo import ProjectionMemo
from compactkit.governance._memo import checked_tools as checked_tools  # (the governor uses it)
from compactkit.governance._pieces import unreachable_from
from compactkit.governance._plan import Rules, plan
from compactkit.governance._prompt import Projection, ProjectionReport, ValidateMode
from compactkit.governance._render import render
from compactkit.governance._select import select
from compactkit.items import Item, Message, Tool
from compactkit.items.snapshot import (
    DEFAULT_SUMMARY_ROLE,
    MemorySnapshot,
    SummaryRole,
    require_snapshot,
)

__all__ = ["ContextProjector", "Projection", "ProjectionReport"]


@dataclass(frozen=True)
class ContextProjector:
    """Builds each turn's prompt from a memory snapshot under a token budget.

    Args:
        counter: Counts tokens the way the model's API bills them.
        budget: The default budget in tokens (the model's usable input budget); ``project``
            may override it per call.
        mask_threshold: Tool outputs over this many tokens may be masked to a placeholder.
        summary_role: The role of the summary message (default ``user``: a summary of
            untrusted user text and tool output gains no system authority; ``system`` as in
            the reference SDK is an explicit choice, see docs/security.md).
        validate: How to treat a history that breaks the tool-call rules (see ``ValidateMode``).
        cache_aware: Keep each prompt the previous prompt of the session plus what was appended,
            re-planning in large steps only when that no longer fits (docs/projector.md,
            cache-aware mode). ``for_model`` turns it on where the profile says the provider
            caches prompt prefixes.
        cache_refill: In cache-aware mode, a re-planned window fills at most this share of the
            budget, leaving the rest to grow into.

    One projector may serve many sessions and threads; it remembers the structure of the last
    few histories it projected so that each turn only indexes what was appended.
    """

    counter: TokenCounter
    _: KW_ONLY
    budget: int | None = None
    mask_threshold: int = 500
    summary_role: SummaryRole = DEFAULT_SUMMARY_ROLE
    validate: ValidateMode = "repair"
    cache_aware: bool = False
    cache_refill: float = DEFAULT_REFILL
    _memo: ProjectionMemo = field(init=False, repr=False, compare=False)
    """What this projector remembers between calls (both paths ask it: ``_memo.py``)."""
    _rules: Rules = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not callable(getattr(self.counter, "count_item", None)):
            raise ConfigError(
                f"counter must be a TokenCounter, got {type(self.counter).__name__}; use "
                "counter_for(model) or ContextProjector.for_model(model)"
            )
        if self.budget is not None:
            object.__setattr__(self, "budget", _tokens(self.budget, "budget"))
        _tokens(self.mask_threshold, "mask_threshold", minimum=0)
        if self.summary_role not in ("system", "developer", "user"):
            raise ConfigError(
                f"summary_role must be 'system', 'developer' or 'user', got {self.summary_role!r}"
            )
        if self.validate not in ("repair", "raise", None):
            raise ConfigError(f"validate must be 'repair', 'raise' or None, got {self.validate!r}")
        if not isinstance(self.cache_aware, bool):
            raise ConfigError(f"cache_aware must be True or False, got {self.cache_aware!r}")
        object.__setattr__(self, "_memo", ProjectionMemo(self.counter, self.cache_refill))
        rules = Rules(self.counter, self.mask_threshold, self.summary_role, self.validate)
        object.__setattr__(self, "_rules", rules)

    @classmethod
    def for_model(
        cls, model: str, *, registry: ProfileRegistry | None = None, **options: Any
    ) -> ContextProjector:
        """A projector with the model's counter and usable input budget (from its profile).

        ``options`` are passed to the constructor (``mask_threshold``, ``summary_role``, …) and
        may override ``counter`` or ``budget``; ``registry`` looks the model up there instead of
        the default registry.

        Raises:
            ConfigError: the model is unknown, or an option is not one of the constructor's
                (the message names the closest one).
        """
        known = [f.name for f in fields(cls) if f.init]
        unknown = [name for name in options if name not in known]
        if unknown:
            raise ConfigError.unknown_options("ContextProjector.for_model", unknown, known)
        if "budget" not in options or "cache_aware" not in options:
            found = budget_for(model, registry=registry)
            options.setdefault("budget", found.usable_input)
            options.setdefault("cache_aware", found.profile.prompt_cache is not None)
        if "counter" not in options:
            options["counter"] = counter_for(model, registry=registry)
        return cls(**options)

    def project(
        self,
        snapshot: MemorySnapshot,
        *,
        instructions: str | Sequence[Message] | None = None,
        tools: Sequence[Tool] = (),
        budget: int | None = None,
    ) -> Projection:
        """The prompt to send this turn.

        Args:
            snapshot: The memory's summary and items; never modified.
            instructions: The agent's system instructions, sent first (before the snapshot's
                own leading system/developer messages). A string becomes a system message.
            tools: The tools offered to the model; their schemas count against the budget.
            budget: This call's budget in tokens (default: the projector's).

        Raises:
            BudgetError: the parts that are never dropped do not fit the budget.
            FormatError: with ``validate="raise"``, the history breaks the tool-call rules.
            ConfigError: no budget was given, or ``snapshot`` is not a ``MemorySnapshot`` (pass
                ``memory.snapshot()``, not the memory or ``memory.items``).
        """
        if budget is not None:  # checked here: the cache-aware path compares it first
            budget = _tokens(budget, "budget")
        if instructions is not None and not isinstance(instructions, str):
            self._memo.instructions(instructions)  # (refuses what is not a list of Messages)
        limit = budget if budget is not None else self.budget
        tools = self._memo.tools(tools)
        if not self.cache_aware or limit is None or limit <= 0:
            return self._project(
                snapshot, instructions=instructions, tools=tools, budget=budget, observe=True
            )
        snapshot = require_snapshot(snapshot, "project()")
        projection = self._memo.extend_previous(self._project, snapshot, instructions, tools, limit)
        shared = self._memo.cached_prefix(projection.items, tools, projection.tokens)
        return with_cached_prefix(projection, shared)

    def project_checked(
        self,
        snapshot: MemorySnapshot,
        instructions: str | Sequence[Message] | None,
        tools: Sequence[Tool],
        budget: int | None,
    ) -> Projection:
        """``project`` for a caller that has checked its arguments: ``snapshot`` is a
        ``MemorySnapshot``, ``instructions`` passed ``check_instructions``, ``tools`` are
        ``Tool``s and ``budget`` is ``None`` or an int of at least 1 (the governor's plain step,
        which checked them for its measure). The same prompt, without checking them again;
        in cache-aware mode the usual turn (the session's previous prompt extended) is built in
        one pass (``ProjectionMemo.extend_front``)."""
        limit = budget if budget is not None else self.budget
        tools = self._memo.tools(tools)
        if not self.cache_aware or limit is None or limit <= 0:
            return self._project(
                snapshot, instructions=instructions, tools=tools, budget=budget, observe=True
            )
        memo = self._memo
        projection = memo.extend_front(snapshot, instructions, tools, limit)
        if projection is not None:
            return projection
        projection = memo.extend_previous(self._project, snapshot, instructions, tools, limit)
        shared = memo.cached_prefix(projection.items, tools, projection.tokens)
        return with_cached_prefix(projection, shared)

    def forget(self, snapshot: MemorySnapshot) -> None:
        """Drop what this projector remembers of ``snapshot``'s history (its group structure
        and measurements), once a compaction has replaced that history: later prompts of the
        session start from the compacted one, and the old structure would only hold memory.
        Projecting it again afterwards is correct, it only indexes the history anew."""
        self._memo.forget(require_snapshot(snapshot, "forget()").items)

    def _project(
        self,
        snapshot: MemorySnapshot,
        *,
        instructions: str | Sequence[Message] | None = None,
        tools: Sequence[Tool] = (),
        budget: int | None = None,
        observe: bool = False,
        fit_summary: bool = True,
    ) -> Projection:
        """The prompt by the rules alone (``project`` adds cache-aware mode); ``observe``
        measures its cached prefix (for a prompt sent as it is); ``fit_summary=False`` raises
        rather than trim the summary (``_plan.plan``).

        Three steps, each a function of what the one before returned: ``plan`` (the head, the
        groups never dropped, the room left: ``_plan.py``), ``select`` (where the window
        starts, which bulky outputs stay masked: ``_select.py``), ``render`` (the items and the
        report: ``_render.py``). Closed groups are measured and summed once in the life of
        their history, so selecting is a few binary searches and rendering joins a few runs.
        """
        snapshot = require_snapshot(snapshot, "project()")
        tools = self._memo.tools(tools)
        if budget is not None:
            budget = _tokens(budget, "budget")
        limit = budget if budget is not None else self.budget
        if limit is None or limit <= 0:
            raise ConfigError(
                f"a positive budget is needed, got {limit!r}: pass budget= to project() or the "
                "constructor, or build the projector with ContextProjector.for_model(model)"
            )
        memo = self._memo
        head = memo.instructions(instructions)
        observer = (
            (lambda items, tokens: memo.cached_prefix(items, tools, tokens)) if observe else None
        )
        with memo.held_view(snapshot.items) as view:  # one thread at a time per history
            return render(
                select(
                    plan(
                        snapshot, head, tools, limit, self._rules, memo, view, observer, fit_summary
                    )
                )
            )

    def unreachable_from(self, items: Sequence[Item], budget: int | None = None) -> int | None:
        """Where the part of a history that no prompt's window can reach ends, read from the
        history's end: the index in ``items`` (the end of the history, starting at a user
        message) of the newest group from which the groups to the end take more than
        ``budget`` (default: the projector's) even with bulky outputs masked; ``None`` when
        they fit. That group and everything before it is sent only if kept ahead of the
        window (the latest user input, pinned items), never as part of it, so a caller may
        leave what lies before it unread (``compact_messages``' first call on a long list).

        Raises:
            ConfigError: no budget is given or known.
        """
        limit = budget if budget is not None else self.budget
        if limit is None:
            raise ConfigError(
                "unreachable_from needs a budget: pass budget= or set the projector's"
            )
        rules = self._rules
        return unreachable_from(
            items, rules.counter, rules.mask_threshold, rules.validate, _tokens(limit, "budget")
        )

    def check_tools(self, tools: object) -> tuple[Tool, ...]:
        """``tools`` as ``project`` takes them (a tuple of ``Tool``), or ``ConfigError`` for
        anything else; the same tuple while the same tool objects are passed."""
        return self._memo.tools(tools)

    def check_instructions(self, instructions: object) -> None:
        """Raise ``ConfigError`` unless ``instructions`` is what ``project`` takes: ``None``, a
        string, or a list of ``Message`` (the leading system/developer messages)."""
        self._memo.instructions(instructions)  # type: ignore[arg-type]


def _tokens(value: object, name: str, *, minimum: int = 1) -> int:
    """``value`` as a token count, or a ``ConfigError`` naming ``name`` (NaN and infinity pass
    every ``x <= 0`` check, so they are refused by type, not by comparison)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(
            f"{name} must be a whole number of tokens >= {minimum}, got {value!r:.40}; "
            f"pass an int such as {name}=8000"
        )
    if value < minimum:
        raise ConfigError(f"{name} must be >= {minimum} tokens, got {value!r}")
    return int(value)
