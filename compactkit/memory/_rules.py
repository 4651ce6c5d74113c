"""The pure rules every memory backend shares.

Backends own storage and locking; these functions decide what a restore or a compaction means,
so that every backend behaves the same: what ``apply`` keeps, replaces and archives, what
``restore`` accepts, and how a lineage of versions is rebased. How inputs become items, which
tool outputs are refused and how ``seq`` is assigned are in ``_inputs``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter, not_

from compactkit.errors import ConcurrencyError, ConfigError
from compactkit.formats import shown
from compactkit.items import (
    Item,
)
from compactkit.items.snapshot import (
    CompactResult,
    MemorySnapshot,
    is_summary_message,
    leading_instructions,
    require_snapshot,
)
from compactkit.memory._inputs import CallIndex, assign_seqs

_SEQ = attrgetter("seq")
_PINNED = attrgetter("pinned")


@dataclass(frozen=True)
class ApplyPlan:
    """What ``apply`` changes: the new active items and what leaves them."""

    items: list[Item]
    """The new active items, with seqs assigned and pins kept."""
    archived: list[Item]
    """The previously active items that are no longer active (they stay in history)."""
    next_seq: int
    """The seq counter afterwards."""


def plan_apply(
    active: Sequence[Item],
    result: CompactResult,
    next_seq: int,
    *,
    appended_from: int | None = None,
) -> ApplyPlan:
    """Work out how ``result`` changes the active items (version checks are the caller's).

    With ``appended_from`` (from ``rebase_point``), the result was computed before the active
    items with a seq from that one on were appended: they are kept, unchanged and in order,
    after the result's items (a rebase over pure appends).

    Raises:
        ConfigError: the result holds a seq that is not active, holds one seq twice, holds a
            new rendered summary message (one without a seq), or drops a pinned item.
    """
    appended: list[Item] = []
    if appended_from is not None:
        cut = len(active)
        while cut and _seq_of(active[cut - 1]) >= appended_from:
            cut -= 1
        active, appended = active[:cut], list(active[cut:])
    fast = _kept_as_stored(active, result.snapshot.items, next_seq)
    if fast is not None:
        return ApplyPlan(items=[*fast.items, *appended], archived=fast.archived, next_seq=next_seq)
    stored = {item.seq: item for item in active}
    kept: set[int] = set()
    items: list[Item] = []
    for item in result.snapshot.items:
        if item.seq is None and is_summary_message(item):
            # A stored item that merely quotes a summary (a sealed summary the conversation
            # holds later than the summary's own place, see MemorySnapshot.from_items) keeps
            # its seq and passes; a compressor that creates one would send the summary twice.
            raise ConfigError(
                "a compaction result holds a new rendered summary message as an item; a "
                "compressor returns the summary in its summary field"
            )
        if item.seq is not None:
            before = stored.get(item.seq)
            if before is None or item.seq in kept:
                problem = "holds seq twice" if before else "is not an active item of this memory"
                raise ConfigError(
                    f"compaction result item seq={item.seq} {problem}; a compressor keeps or "
                    "replaces the items it was given and creates new ones with seq=None"
                )
            kept.add(item.seq)
            if before.pinned and not item.pinned:
                item = item.model_copy(update={"pinned": True})
        items.append(item)
    dropped_pins = [i.seq for i in active if i.pinned and i.seq not in kept]
    if dropped_pins:
        raise ConfigError(
            f"compaction result drops pinned items (seq {dropped_pins}); compressors must keep "
            "pinned items — unpin them first to let them go"
        )
    items, next_seq = assign_seqs(items, next_seq)
    archived = [i for i in active if i.seq not in kept]
    return ApplyPlan(items=[*items, *appended], archived=archived, next_seq=next_seq)


def _kept_as_stored(
    active: Sequence[Item], result: Sequence[Item], next_seq: int
) -> ApplyPlan | None:
    """``plan_apply``'s plan (before the appended items) for the usual result, worked out in C
    loops: every item of it is an active item (its seq once, none new), and no pinned item is
    dropped or unpinned. ``None`` for any other result (the general walk decides, and says
    what is wrong)."""
    seqs = list(map(_SEQ, result))
    kept = set(seqs)
    if len(kept) != len(seqs):
        return None
    active_seqs = list(map(_SEQ, active))
    if not kept.issubset(active_seqs):  # (a new item's seq, None, is no active one's)
        return None
    pinned = {item.seq for item in filter(_PINNED, active)}
    if pinned and (
        not kept.issuperset(pinned) or not all(item.pinned for item in result if item.seq in pinned)
    ):
        return None
    archived = list(compress(active, map(not_, map(kept.__contains__, active_seqs))))
    return ApplyPlan(items=list(result), archived=archived, next_seq=next_seq)


def _seq_of(item: Item) -> int:
    assert item.seq is not None, "stored items always have a seq"
    return item.seq


@dataclass(frozen=True)
class RestorePlan:
    """What ``restore`` loads: active items and history, seqs assigned."""

    items: list[Item]
    """The active items."""
    history: dict[int, Item]
    """Every item of the history by seq (the active ones included)."""
    next_seq: int
    """The seq counter afterwards."""


def plan_restore(
    snapshot: MemorySnapshot,
    history: Sequence[Item],
    next_seq: int,
    *,
    accept_unknown: bool = False,
) -> RestorePlan:
    """Work out the state ``restore(snapshot, history=history)`` loads.

    History entries win over active items with the same seq (they are the originals of items
    a compaction replaced). Items without a seq get fresh ones after every seq present. The
    result must be a state appends could have built: no two calls with one call id, no second
    output for a call, no output for a call it does not hold (unless ``accept_unknown``).

    Raises:
        ConfigError: a seq appears twice, a history item has no seq, an item is a rendered
            summary message at the summary's own place (after the leading instructions: a
            later one is quoted text, kept as an ordinary message), the call ids break the rules above (the message names the item),
            or ``snapshot``/``history`` is not what restore takes.
    """
    snapshot = require_snapshot(snapshot, "restore()")
    if history is None or isinstance(history, (str, bytes, Mapping)):
        raise ConfigError(
            f"restore(history=...) takes a list of items (memory.history()), got "
            f"{type(history).__name__}"
        )
    known: dict[int, Item] = {}
    for item in history:
        if item.seq is None:
            raise ConfigError("history items need their seq (as returned by memory.history())")
        if item.seq in known:
            raise ConfigError(f"history holds seq={item.seq} twice")
        known[item.seq] = item
    lead = leading_instructions(snapshot.items)
    if lead < len(snapshot.items) and is_summary_message(snapshot.items[lead]):
        # memory.items (the rendered view) passed as the items: the summary would be sent (and
        # folded) twice. Later in the list, a sealed summary is quoted text, kept as the
        # ordinary message from_items leaves it as.
        raise ConfigError(
            "the snapshot holds a rendered summary message as an item; build it with "
            "MemorySnapshot.from_items(items) so the summary becomes its summary field"
        )
    seen: set[int] = set()
    for item in snapshot.items:
        if item.seq is not None:
            if item.seq in seen:
                raise ConfigError(f"the snapshot holds seq={item.seq} twice")
            seen.add(item.seq)
    top = max([next_seq - 1, *known, *seen])
    items, next_seq = assign_seqs(snapshot.items, top + 1)
    merged = {item.seq: item for item in items if item.seq is not None}
    for seq, original in known.items():
        current = merged.get(seq)
        merged[seq] = (
            original.model_copy(update={"pinned": current.pinned})
            if current is not None
            else original
        )
    ordered = dict(sorted(merged.items()))
    _check_restored_calls(ordered.values(), accept_unknown=accept_unknown)
    return RestorePlan(items=items, history=ordered, next_seq=next_seq)


def _check_restored_calls(items: Iterable[Item], *, accept_unknown: bool) -> None:
    """Refuse a restored history (by seq) that appends could not have built, naming the item."""
    index = CallIndex()
    for item in items:
        try:
            index.check([item], accept_unknown=accept_unknown)
        except ConfigError as exc:
            raise ConfigError(
                f"restore() refused item seq={item.seq} ({item.type}, call id "
                f"{getattr(item, 'call_id', None)!r}): {exc}"
            ) from None
        index.add(item)


def require_result(result: object) -> CompactResult:
    """``result`` itself, or a ``ConfigError`` when it is not a ``CompactResult``."""
    if not isinstance(result, CompactResult):
        raise ConfigError(
            f"apply() takes the CompactResult a compressor returned, got {type(result).__name__}; "
            "call memory.apply(compressor.compress(memory.snapshot()))"
        )
    return result


def require_seq(seq: object) -> int:
    """``seq`` itself, or a ``ConfigError`` when it is not an item's seq (an ``int``)."""
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise ConfigError(f"pin()/unpin() take an item's seq (an int, item.seq), got {shown(seq)}")
    return seq


def check_version(result: CompactResult, version: int) -> None:
    """Raise unless ``result`` was computed from the memory at ``version``."""
    seen = result.snapshot.version
    if seen is None:
        raise ConfigError(
            "the compaction result's snapshot has no version, so it cannot be checked against "
            "the memory; build it from memory.snapshot() with snapshot.model_copy(update=...)"
        )
    if seen != version:
        raise ConcurrencyError(
            f"the compaction result was computed from version {seen} but the memory is at "
            f"version {version} (written since); nothing was applied — compact a new snapshot"
        )


class Lineage:
    """What a memory remembers of the versions it handed out, so that ``apply`` can rebase a
    result over the appends made while the compressor ran.

    A memory counts two things: ``version`` (every write) and ``window_version`` (every write
    that is not an append: a compaction, undo, restore, clear, a pin). A result computed at a
    version whose window version is still the current one saw exactly the active items that
    are there now, minus the appended ones — those with a seq from that version's ``next_seq``
    on.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._marks: dict[int, tuple[int, int]] = {}  # version -> (window_version, next_seq)
        self._lock = threading.Lock()

    def note(self, version: int, window_version: int, next_seq: int) -> None:
        """Remember the state of ``version`` (called for every snapshot handed out)."""
        if self._marks.get(version) == (window_version, next_seq):
            return
        with self._lock:  # eviction iterates the dict: keep writers out meanwhile
            if len(self._marks) >= self._limit:
                del self._marks[next(iter(self._marks))]
            self._marks[version] = (window_version, next_seq)

    def forget(self) -> None:
        """Forget every mark (a restore or clear makes versions from before meaningless)."""
        with self._lock:
            self._marks.clear()

    def get(self, version: int) -> tuple[int, int] | None:
        """``(window_version, next_seq)`` of ``version``, when it was handed out."""
        return self._marks.get(version)


def rebase_point(
    result: CompactResult, version: int, window_version: int, lineage: Lineage
) -> int | None:
    """Whether ``result`` can be applied to a memory now at ``version``/``window_version``.

    Returns ``None`` when the result was computed from the current version, or the first seq
    appended since (for ``plan_apply(appended_from=...)``) when only appends happened since.

    Raises:
        ConfigError: the result's snapshot has no version.
        ConcurrencyError: something other than an append changed the active items or the
            summary since (another compaction, undo, restore, clear, a pin), or the version is
            not one this memory handed out.
    """
    seen = result.snapshot.version
    if seen is None or seen == version:
        check_version(result, version)
        return None
    mark = lineage.get(seen) if seen < version else None
    if mark is None or mark[0] != window_version:
        why = "not only appended to" if mark is not None else "written since"
        raise ConcurrencyError(
            f"the compaction result was computed from version {seen} but the memory is at "
            f"version {version} ({why}: the items it folded or the summary changed); nothing "
            "was applied — compact a new snapshot"
        )
    return mark[1]


def not_active_error(seq: int, *, archived: bool) -> ConfigError:
    """The error for pinning a seq that is not active."""
    why = "was archived by a compaction" if archived else "was never stored (or was cleared)"
    return ConfigError(f"no active item has seq={seq}: it {why}; only active items can be pinned")
