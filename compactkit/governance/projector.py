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
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields
from operator import is_
from typing import Any, Literal, TypeAlias

from compactkit.budget.profiles import ProfileRegistry, budget_for
from compactkit.budget.tokens import TokenCounter, counter_for
from compactkit.compressors.masking import cut_output
from compactkit.errors import BudgetError, ConfigError, FormatError
from compactkit.formats.validate import validate_items
from compactkit.governance._cache import DEFAULT_REFILL, PrefixTracker, StablePrefix
from compactkit.governance._incremental import MessageCache, OverheadCache
from compactkit.governance._projection import Mask, Masker, Piece, Pieces, View, ViewCache
from compactkit.governance._render import complement, greedy, render_window
from compactkit.governance._select import may_be_invalid, unmasked, window_start
from compactkit.items import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    ItemsChain,
    ItemsView,
    Message,
    Tool,
)
from compactkit.items.snapshot import (
    DEFAULT_SUMMARY_ROLE,
    MemorySnapshot,
    SummaryRole,
    require_snapshot,
)
from compactkit.items.view import Run

__all__ = ["ContextProjector", "Projection", "ProjectionReport"]

ValidateMode: TypeAlias = Literal["repair", "raise"] | None
"""What to do with a history that breaks the tool-call rules (an output answering no call, an
old call that never got an output): ``repair`` drops the offending items and says so in the
report, ``raise`` raises ``FormatError``, ``None`` sends the items as they are."""


@dataclass(frozen=True)
class ProjectionReport:
    """What a projection kept, masked and omitted, and why.

    ``kept + masked + omitted`` is the number of items in the snapshot.
    """

    kept: int
    """Snapshot items sent unchanged."""
    masked: int
    """Snapshot tool outputs sent as a placeholder."""
    omitted: int
    """Snapshot items not sent (older than the window, or dropped by a repair)."""
    notes: tuple[str, ...] = ()
    """Human-readable reasons: what was masked, omitted, repaired or kept ahead of the window."""
    masked_call_ids: tuple[str, ...] = ()
    """The call ids of the masked outputs, oldest first."""
    cached_prefix_tokens: int = 0
    """Tokens of this request (tool schemas first, then the items) that are a byte-identical
    prefix of the previous prompt this projector built for the session: what a provider's
    prefix cache can serve (0 for a session's first prompt)."""


@dataclass(frozen=True)
class Projection:
    """The prompt for this turn."""

    items: Sequence[Item]
    """What to send, in order: instructions, the summary message, pinned items, the window.

    An ``ItemsChain``: runs of the instructions, the memory's items and the masked rendering
    joined without copying (O(runs) to build); in cache-aware mode, once a prompt extends the
    previous one, an ``ItemsView`` of a list that grows in place (O(new items)). Both behave
    like the tuple they stand for; ``tuple(items)`` copies."""
    tokens: int
    """Tokens of the whole request (items, tool schemas, reply priming), by the counter."""
    budget: int
    """The budget the request had to fit."""
    report: ProjectionReport
    """What was kept, masked and omitted."""

    @property
    def cacheable_share(self) -> float:
        """``report.cached_prefix_tokens / tokens``: the share a prefix cache can serve."""
        return self.report.cached_prefix_tokens / self.tokens if self.tokens else 0.0


class _CheckedTools:
    """``_tools(tools)``, remembered for the tools of the last call: agents pass the same tool
    objects every turn, and checking them again costs more than comparing their identities."""

    def __init__(self) -> None:
        self._seen: tuple[Tool, ...] = ()

    def __call__(self, tools: object) -> tuple[Tool, ...]:
        seen = self._seen
        if (
            isinstance(tools, (list, tuple))
            and len(tools) == len(seen)
            and all(map(is_, tools, seen))
        ):
            return seen
        checked = self._seen = _tools(tools)
        return checked


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
    _stable: StablePrefix = field(init=False, repr=False, compare=False)
    _prefixes: PrefixTracker = field(
        default_factory=PrefixTracker, init=False, repr=False, compare=False
    )
    _views: ViewCache = field(default_factory=ViewCache, init=False, repr=False, compare=False)
    _overhead: OverheadCache = field(
        default_factory=OverheadCache, init=False, repr=False, compare=False
    )
    _masker: Masker = field(default_factory=Masker, init=False, repr=False, compare=False)
    _tools: _CheckedTools = field(
        default_factory=_CheckedTools, init=False, repr=False, compare=False
    )
    _messages: MessageCache = field(
        default_factory=MessageCache, init=False, repr=False, compare=False
    )

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
        object.__setattr__(self, "_stable", StablePrefix(self.counter, self.cache_refill))

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
            self._instructions(instructions)  # (refuses what is not a list of Messages)
        limit = budget if budget is not None else self.budget
        tools = self._tools(tools)
        if not self.cache_aware or limit is None or limit <= 0:
            return self._project(
                snapshot, instructions=instructions, tools=tools, budget=budget, observe=True
            )
        snapshot = require_snapshot(snapshot, "project()")
        projection = self._stable.project(self._project, snapshot, instructions, tools, limit)
        shared = self._prefixes.observe(self.counter, projection.items, tools, projection.tokens)
        report = projection.report
        return Projection(  # built directly: dataclasses.replace costs more than a turn's fill
            items=projection.items,
            tokens=projection.tokens,
            budget=projection.budget,
            report=ProjectionReport(**{**vars(report), "cached_prefix_tokens": shared}),
        )

    def forget(self, snapshot: MemorySnapshot) -> None:
        """Drop what this projector remembers of ``snapshot``'s history (its group structure
        and measurements), once a compaction has replaced that history: later prompts of the
        session start from the compacted one, and the old structure would only hold memory.
        Projecting it again afterwards is correct, it only indexes the history anew."""
        self._views.forget(require_snapshot(snapshot, "forget()").items)

    def _project(
        self,
        snapshot: MemorySnapshot,
        *,
        instructions: str | Sequence[Message] | None = None,
        tools: Sequence[Tool] = (),
        budget: int | None = None,
        observe: bool = False,
    ) -> Projection:
        """The prompt by the rules alone (``project`` adds cache-aware mode); ``observe``
        measures its cached prefix (for a prompt sent as it is).

        One way, top to bottom: plan (the head, the groups never dropped, the room left),
        select (where the window starts, which bulky outputs stay masked), render (the items
        and the report). Closed groups are measured and summed once in the life of their
        history, so selecting is a few binary searches and rendering joins a few runs.
        """
        snapshot = require_snapshot(snapshot, "project()")
        tools = self._tools(tools)
        if budget is not None:
            budget = _tokens(budget, "budget")
        limit = budget if budget is not None else self.budget
        if limit is None or limit <= 0:
            raise ConfigError(
                f"a positive budget is needed, got {limit!r}: pass budget= to project() or the "
                "constructor, or build the projector with ContextProjector.for_model(model)"
            )

        # -- plan: what is always sent, and the room it leaves -----------------------------
        count = self.counter.count_item
        view = self._views.view(snapshot.items)
        head = [*self._instructions(instructions), *snapshot.items[: view.lead]]
        if snapshot.summary:
            head.append(self._messages.get(self.summary_role, snapshot.summary, summary=True))
        fixed = sum(map(count, head)) + self._overhead(self.counter, tools)
        pieces = Pieces(view, self.counter, self._masker, self.mask_threshold, self.validate)
        sums = pieces.catch_up(reach=limit)
        required = view.required()
        needed = {index: pieces.get(index).min_tokens for index in required}
        n_closed = view.n_closed
        tail = pieces.get(n_closed) if view.tail is not None else None
        cuts: dict[int, Item] = {}
        if tail is not None and n_closed in required:
            # The newest group is sent whole, never masked; an output of it larger than what
            # the budget leaves is cut (with a marker saying so), not dropped or masked.
            needed[n_closed] = tail.min_tokens + sum(mask.saving for mask in tail.masks)
            over = fixed + sum(needed.values()) - limit
            if over > 0:
                cuts, saved_by_cut = self._cut_newest(tail, over)
                needed[n_closed] -= saved_by_cut
        if fixed + sum(needed.values()) > limit:
            raise self._budget_error(snapshot, head, tools, pieces, required, limit, needed)
        room = limit - fixed - sum(needed.values())

        # -- select: the window, every bulky output masked, newest groups while they fit ----
        tail_tokens = None if tail is None else needed.get(n_closed, tail.min_tokens)
        start, used = window_start(sums, n_closed, tail_tokens, needed, room)
        if start < sums.bounded:  # never, by catch_up's choice; were it to, sum exactly
            sums = pieces.catch_up(reach=None)
            start, used = window_start(sums, n_closed, tail_tokens, needed, room)
        room -= used
        ahead = [pieces.get(index) for index in sorted(required) if index < start]
        in_window = [tail] if tail is not None and tail.index >= start else []
        first_problem = bisect_left(sums.problems, start)
        problems = [
            *(pieces.get(i) for i in sums.problems[first_problem:] if i < n_closed),
            *(piece for piece in [*in_window, *ahead] if piece.problem),
        ]
        self._check(problems)
        # ... then outputs whole again, newest first, wherever the rest of the budget allows:
        # the oldest stay masked, and so does an output too large to fit whole at any age.
        masked_tail: list[Mask] = []
        if in_window and tail is not None and n_closed not in required:
            masked_tail, room = greedy(reversed(tail.masks), room)
        low, high = sums.first_mask[min(start, n_closed)], sums.first_mask[n_closed]
        whole, room = unmasked(sums, low, high, room)
        whole.sort()
        masked_ahead: list[Mask] = []
        for piece in reversed(ahead):
            if piece is tail:
                continue  # sent whole (or cut), counted in full already
            kept_masked, room = greedy(reversed(piece.masks), room)
            masked_ahead = kept_masked + masked_ahead
        masked_tail.reverse()
        # What stays masked (the closed masks of the window outside the ranges sent whole, and
        # those ahead of it and in the tail): counted, its savings summed and its call ids
        # listed in one pass over the ranges sent whole (slices of the running totals: no
        # Python step per masked output).
        mask_ids, sums_saved = sums.mask_ids, sums.saved
        masked_ids = [mask.original.call_id for mask in masked_ahead]
        n_masked = len(masked_ahead) + len(masked_tail) + high - low
        saved = sums_saved[high] - sums_saved[low]
        at = low
        for a, b in whole:
            masked_ids += mask_ids[at:a]
            n_masked -= b - a
            saved -= sums_saved[b] - sums_saved[a]
            at = b
        masked_ids += mask_ids[at:high]
        for mask in masked_ahead:
            saved += mask.saving
        for mask in masked_tail:
            saved += mask.saving
            masked_ids.append(mask.original.call_id)

        # -- render: head, the groups kept ahead of the window, then the window -------------
        swap: dict[int, Item] = {id(m.original): m.placeholder for m in masked_ahead}
        swap.update((id(m.original), m.placeholder) for m in masked_tail)
        swap.update(cuts)
        runs: list[Run] = [(head, 0, len(head))]  # joined, not copied: O(runs) per call
        for piece in ahead:
            kept = [swap.get(id(item), item) for item in piece.items]
            runs.append((kept, 0, len(kept)))
        sent = view.lead + sum(len(piece.items) for piece in ahead)
        if start < view.n_groups:
            first = view.group(start).start
            own = [  # groups sent as their own items: repaired ones, and the open last group
                (piece, [swap.get(id(item), item) for item in piece.items])
                for piece in problems
                if piece.index < n_closed and piece.index >= start
            ]
            for piece, _ in own:  # their masks that stay masked, by the window's choice
                k = sums.first_mask[piece.index]
                for mask in piece.masks:
                    if not any(a <= k < b for a, b in whole):
                        swap[id(mask.original)] = mask.placeholder
                    k += 1
            own = [(piece, [swap.get(id(item), item) for item in piece.items]) for piece, _ in own]
            if tail is not None and in_window:
                own.append((tail, [swap.get(id(item), item) for item in tail.items]))
            sent += render_window(runs, snapshot.items, sums, first, whole, own)
        notes = self._notes(view, problems, ahead, start, n_masked, saved, required)
        if cuts:
            ids = ", ".join(repr(getattr(item, "call_id", "")) for item in cuts.values())
            notes.append(f"cut the newest output(s) {ids} to fit the budget (marked in the text)")
        last = tail if in_window else None
        items: Sequence[Item] = ItemsChain.joined(runs)
        if self.validate is not None and may_be_invalid(sums, start, n_closed, ahead, last):
            out, dropped = self._send_valid(list(items), notes)
            items = ItemsView(out) if dropped else items  # out is never changed: no copy
        else:  # every group passes the validator alone and no id repeats: so does the whole
            dropped = []
        if dropped:  # the whole prompt breaks a rule every format has (a detached reasoning)
            room += sum(count(item) for item in dropped)
            sent -= len(dropped)
            gone = {id(item) for item in dropped}
            masked = [
                *masked_ahead,
                *(sums.masks[k] for a, b in complement(low, high, whole) for k in range(a, b)),
            ]
            masked = [mask for mask in [*masked, *masked_tail] if id(mask.placeholder) not in gone]
            n_masked = len(masked)
            masked_ids = [mask.original.call_id for mask in masked]
        tokens = limit - room
        report = ProjectionReport(
            kept=sent - n_masked,
            masked=n_masked,
            omitted=len(snapshot.items) - sent,
            notes=tuple(notes),
            masked_call_ids=tuple(masked_ids),
            cached_prefix_tokens=(
                self._prefixes.observe(self.counter, items, tools, tokens) if observe else 0
            ),
        )
        return Projection(items, tokens, limit, report)

    def _cut_newest(self, tail: Piece, over: int) -> tuple[dict[int, Item], int]:
        """Cuts of the newest group's outputs, largest first, until ``over`` tokens are saved
        (or nothing more can be): ``id(original) -> cut output``, and the tokens saved."""
        count = self.counter.count_item
        names = {item.call_id: item.name for item in tail.items if isinstance(item, FunctionCall)}
        outputs = sorted(
            (item for item in tail.items if isinstance(item, FunctionCallOutput)),
            key=count,
            reverse=True,
        )
        cuts: dict[int, Item] = {}
        saved = 0
        for output in outputs:
            if saved >= over:
                break
            size = count(output)
            cut = cut_output(
                output,
                max_tokens=max(0, size - (over - saved)),
                counter=self.counter,
                tool=names.get(output.call_id),
            )
            if count(cut) < size:  # (the marker alone may be longer than a short output)
                cuts[id(output)] = cut
                saved += size - count(cut)
        return cuts, saved

    def check_instructions(self, instructions: object) -> None:
        """Raise ``ConfigError`` unless ``instructions`` is what ``project`` takes: ``None``, a
        string, or a list of ``Message`` (the leading system/developer messages)."""
        self._instructions(instructions)  # type: ignore[arg-type]

    def _instructions(self, instructions: str | Sequence[Message] | None) -> list[Message]:
        if instructions is None:
            return []
        if isinstance(instructions, str):
            return [self._messages.get("system", instructions)] if instructions else []
        checked: object = instructions
        if not isinstance(checked, Sequence) or isinstance(checked, (bytes, bytearray)):
            raise ConfigError(
                f"instructions must be a string or a list of Messages, got "
                f"{type(instructions).__name__}"
            )
        for item in instructions:
            if not isinstance(item, Message):
                raise ConfigError(f"instructions must be messages, got {item!r}")
        return list(instructions)

    def _send_valid(self, out: list[Item], notes: list[str]) -> tuple[list[Item], list[Item]]:
        """``out`` under the rules every target format shares (unique ids, each call answered
        once, reasoning followed by its response), and the items a repair dropped. The format
        adapters then order what each format needs (tool results next to their calls)."""
        if self.validate is None:
            return out, []
        dropped: list[Item] = []
        for _ in range(3):  # a dropped item can leave its reasoning detached: look again
            _, problems = validate_items(out, format="responses", mode="repair")
            # Pending calls are kept on purpose (their outputs come next); the window repair
            # already dropped any older call without output.
            problems = [problem for problem in problems if problem.kind != "missing_output"]
            if not problems:
                break
            listing = "; ".join(str(problem) for problem in problems)
            if self.validate == "raise":
                raise FormatError(
                    f"the prompt breaks the tool-call rules: {listing}. "
                    "Fix the memory, or project with validate='repair'"
                )
            notes.append(f"repaired: {listing}")
            bad = {problem.index for problem in problems}
            dropped += [item for index, item in enumerate(out) if index in bad]
            out = [item for index, item in enumerate(out) if index not in bad]
        return out, dropped

    def _budget_error(
        self,
        snapshot: MemorySnapshot,
        head: Sequence[Item],
        tools: Sequence[Tool],
        pieces: Pieces,
        required: dict[int, str],
        limit: int,
        sizes: Mapping[int, int] | None = None,
    ) -> BudgetError:
        count = self.counter.count_item
        summary = count(head[-1]) if snapshot.summary else 0
        priming = self.counter.count_overhead(())
        parts = {
            "system instructions": sum(count(item) for item in head) - summary,
            "summary": summary,
            "tools": self.counter.count_overhead(tools) - priming,
            "reply priming": priming,
        }
        for index, part in required.items():
            size = sizes[index] if sizes is not None else pieces.get(index).min_tokens
            parts[part] = parts.get(part, 0) + size
        total = sum(parts.values())
        part, tokens = max(parts.items(), key=lambda entry: entry[1])
        others = ", ".join(f"{name} {size:,}" for name, size in parts.items() if size)
        return BudgetError(
            f"{part}: {tokens:,} tokens; budget {limit:,} (irreducible total {total:,}: "
            f"{others}). Raise the budget or make the {part} smaller",
            part=part,
            tokens=tokens,
            budget=limit,
        )

    def _check(self, pieces: Sequence[Piece]) -> None:
        problems = [piece.problem for piece in pieces if piece.problem]
        if problems and self.validate == "raise":
            raise FormatError(
                f"the history breaks the tool-call rules: {'; '.join(problems)}. "
                "Fix the memory, or project with validate='repair'"
            )

    def _notes(
        self,
        view: View,
        problems: Sequence[Piece],
        ahead: Sequence[Piece],
        start: int,
        masked: int,
        saved: int,
        required: dict[int, str],
    ) -> list[str]:
        action = "repaired" if self.validate == "repair" else "sent as is"
        notes = [f"{action}: {piece.problem}" for piece in sorted(problems, key=_index)]
        if masked:
            notes.append(
                f"masked {masked} tool output(s) over {self.mask_threshold:,} tokens, "
                f"oldest first ({saved:,} tokens saved)"
            )
        if start < view.n_groups:
            first = view.group(start).start
            older = first - view.lead - sum(len(piece.group) for piece in ahead)
            if older > 0:
                notes.append(f"omitted {older} item(s) before item {first} to fit the budget")
        notes.extend(
            f"kept {required[piece.index]} (item {piece.group.start}) ahead of the window"
            for piece in ahead
            if not piece.dropped
        )
        last = view.group(view.n_groups - 1) if view.n_groups else None
        if last is not None and last.pending:
            ids = ", ".join(repr(call_id) for call_id in last.pending)
            notes.append(f"pending call(s) {ids} kept without output; send their outputs first")
        return notes


def _index(piece: Piece) -> int:
    return piece.index


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


def checked_tools(tools: object) -> tuple[Tool, ...]:
    """``tools`` as ``Tool``s, or a ``ConfigError`` saying how to convert provider tool dicts."""
    return _tools(tools)


def _tools(tools: object) -> tuple[Tool, ...]:
    """``tools`` as ``Tool``s; wire tool dicts get a ``ConfigError`` saying how to convert them."""
    if tools is None or isinstance(tools, (str, bytes, Mapping)) or not isinstance(tools, Iterable):
        raise ConfigError(f"tools must be a list of Tools, got {type(tools).__name__}")
    checked = tuple(tools)
    for index, tool in enumerate(checked):
        if not isinstance(tool, Tool):
            raise ConfigError(
                f"tools[{index}] is a {type(tool).__name__}, not a compactkit Tool; convert "
                "provider tool definitions with tools_from_chat, tools_from_responses or "
                "tools_from_anthropic (compactkit.formats), or build Tool(name=..., parameters=...)"
            )
    return checked
