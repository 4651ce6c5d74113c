"""``InMemoryMemory``: the default memory, held in the process."""

from __future__ import annotations

import threading
from collections.abc import MutableMapping, Sequence

from compactkit.compressors.base import CompressorLike
from compactkit.errors import ArchiveDroppedError, ConfigError
from compactkit.items import FunctionCall, FunctionCallOutput, Item, item_text
from compactkit.items.model import constructed
from compactkit.items.snapshot import (
    DEFAULT_SUMMARY_ROLE,
    CompactResult,
    MemorySnapshot,
    SummaryRole,
)
from compactkit.items.view import ItemsView
from compactkit.memory._bm25 import BM25Index
from compactkit.memory._call_ids import PendingCallIndex
from compactkit.memory._history import SeqMap as SeqMap  # (MessageCompactor keeps one too)
from compactkit.memory._history import history_of, items_from
from compactkit.memory._inputs import assign_seqs, number_in_place, output_items
from compactkit.memory._rules import (
    Lineage,
    not_active_error,
    plan_apply,
    plan_restore,
    rebase_point,
    require_result,
    require_seq,
)
from compactkit.memory.archive import ArchiveBound, DroppedArchive
from compactkit.memory.base import BaseMemory, CompactCallback, SnapshotTrigger
from compactkit.memory.recall import (
    DEFAULT_RECALL_LIMIT,
    RecallHit,
    candidates,
    check_limit,
    format_ref,
    hit_for_item,
    parse_ref,
    query_words,
    rank_hits,
    search_words,
    summary_hits,
)

__all__ = ["InMemoryMemory"]


class InMemoryMemory(BaseMemory):
    """A memory held in the process; safe to share between threads.

    Offers recall (``compactkit.memory.Recallable``): ``recall(query)`` ranks archived items
    with BM25, indexed lazily (a call indexes only the items stored since the one before).

    Every operation runs under one re-entrant lock, so readers never see half a write or half a
    compaction. Write-path compaction runs outside the lock (see ``BaseMemory``), so a slow
    summarizer never blocks other threads' reads and writes.
    """

    def __init__(
        self,
        *,
        policy: SnapshotTrigger | None = None,
        compressor: CompressorLike | None = None,
        on_compact: CompactCallback | None = None,
        accept_unknown_call_ids: bool = False,
        summary_role: SummaryRole = DEFAULT_SUMMARY_ROLE,
        max_archived_items: int | None = None,
        max_archived_bytes: int | None = None,
    ) -> None:
        """See ``BaseMemory`` for the arguments.

        Args:
            max_archived_items: Keep at most this many archived items (folded away, or the
                originals of replaced ones); past it, the oldest are dropped after each
                compaction (``compactkit.memory.archive``). ``None``: no bound.
            max_archived_bytes: Keep at most this many bytes of archived items (each as its
                JSON, as a session file stores it); the oldest are dropped first.

        Raises:
            ConfigError: a bound that is not a whole number of 0 or more.
        """
        self._bound = ArchiveBound(max_archived_items, max_archived_bytes)
        super().__init__(
            policy=policy,
            compressor=compressor,
            on_compact=on_compact,
            accept_unknown_call_ids=accept_unknown_call_ids,
            summary_role=summary_role,
        )
        self._lock = threading.RLock()
        self._summary = ""
        # Only ever appended to: every other write puts a new list in its place, so the
        # snapshots handed out (views of this list, see ``ItemsView``) never change.
        self._active: list[Item] = []
        # seq -> the item as first stored (a list by seq: _history.py)
        self._history: MutableMapping[int, Item] = SeqMap()
        self._calls = PendingCallIndex()  # (one set of call ids: _call_ids.py)
        self._next_seq = 1
        self._version = 0
        self._window_version = 0  # bumped by every write that is not an append
        self._last_snapshot: MemorySnapshot | None = None  # handed out at ``_version``
        self._lineage = Lineage()
        self._index = BM25Index()  # recall: every history item, added lazily by seq
        self._unindexed = 0  # the history from this seq on is not indexed yet
        self._dropped = DroppedArchive()

    def _append(self, items: Sequence[Item]) -> None:
        self._append_stored(items)

    def _append_stored(self, items: Sequence[Item], *, fresh: bool = False) -> list[Item]:
        """``_append``, returning the items as stored (numbered; ``fresh``: in place)."""
        with self._lock:
            try:
                self._calls.check(items, accept_unknown=self.accept_unknown_call_ids)
            except ConfigError as exc:  # (the rules' message, and where in this write)
                where = _where_refused(items, self._history, self.accept_unknown_call_ids)
                raise ConfigError(f"{exc}: {where}") from None
            if fresh:  # numbered in place and indexed in one pass, kept in one step
                stored, first = list(items), self._next_seq
                add, seq = self._calls.add, first
                for item in stored:
                    number_in_place(item, seq)
                    add(item)
                    seq += 1
                self._next_seq = seq
                history = self._history
                if type(history) is SeqMap:
                    history.set_run(first, stored)
                else:  # (a sparse restored history: a dict)
                    history.update(zip(range(first, seq), stored, strict=True))
            else:
                stored, self._next_seq = assign_seqs(items, self._next_seq)
                for item in stored:
                    self._calls.add(item)
                    self._history[_seq(item)] = item
            self._active.extend(stored)
            self._version += 1
            return stored

    def add_read_items(
        self, items: list[Item], *, fresh: bool = False, summaries_checked: bool = False
    ) -> list[Item]:
        """``add_output_items(items)`` for a memory with no write-path compaction, returning
        the items as stored (numbered, in order): what ``MessageCompactor`` maps each message
        it read to, without reading the stored items back from a snapshot. ``fresh``: the
        caller has just built ``items`` and hands them over (no one else holds them): they are
        numbered in place instead of copied (``_inputs.number_in_place``); nothing is changed
        when the write is refused. ``summaries_checked``: the caller made sure that none of
        ``items`` is a rendered summary message (``MessageCompactor`` restores the memory
        instead when one is), so they are not checked for one again.

        Raises:
            ConfigError: as ``add_output_items``; or the memory compacts on writes (then
                ``add_output_items`` is the call to make).
        """
        if self._compressor is not None:
            raise ConfigError("add_read_items is for a memory without write-path compaction")
        converted = output_items(items, summaries_checked=summaries_checked)
        return self._append_stored(converted, fresh=fresh) if converted else []

    @property
    def version(self) -> int:
        """Increases with every write; 0 for a memory never written."""
        return self._version

    def snapshot(self) -> MemorySnapshot:
        """The summary and active items, with ``version``."""
        with self._lock:
            self._lineage.note(self._version, self._window_version, self._next_seq)
            # O(1): a view of the append-only list, not a copy; stored items were validated on
            # the way in, so there is no O(history) revalidation per read either. Read twice
            # with no write between (a plain-list call does), the same snapshot is handed out:
            # every write bumps the version, and a snapshot is immutable.
            last = self._last_snapshot
            if (
                last is not None
                and last.version == self._version
                and len(last.items) == len(self._active)
            ):
                return last
            snapshot = self._last_snapshot = _constructed_snapshot(
                self._summary, ItemsView(self._active, len(self._active)), self._version
            )
            return snapshot

    def history(self) -> list[Item]:
        """Every item stored since the last ``clear()``, archived ones included, by seq."""
        with self._lock:
            return list(self._history.values())

    def apply(self, result: CompactResult) -> bool:
        """Swap in ``result`` atomically; ``False`` (and no change) when it changed nothing.

        Items appended since the result's snapshot are kept after its items (a rebase over
        pure appends).

        Raises:
            ConcurrencyError: the memory was compacted, restored, cleared or pinned after the
                result's snapshot was read (appends alone never refuse a result).
            ConfigError: the result has no version, or breaks the compressor contract.
        """
        require_result(result)
        if not result.changed:
            return False
        with self._lock:
            since = rebase_point(result, self._version, self._window_version, self._lineage)
            plan = plan_apply(self._active, result, self._next_seq, appended_from=since)
            for item in plan.items:
                seq = _seq(item)
                original = self._history.get(seq)
                if original is None:
                    self._calls.add(item)
                    self._history[seq] = item
                elif original.pinned != item.pinned:
                    self._history[seq] = original.model_copy(update={"pinned": item.pinned})
            self._summary = result.snapshot.summary
            self._active = plan.items
            self._next_seq = plan.next_seq
            self._version += 1
            self._window_version += 1
            self._bound_archive()
        return True

    def restore(
        self,
        snapshot: MemorySnapshot,
        *,
        history: Sequence[Item] = (),
        dropped: DroppedArchive | None = None,
    ) -> None:
        """Replace the whole state with ``snapshot``; ``history`` adds archived items;
        ``dropped`` is what an archive bound dropped before (a saved session's record).

        The version becomes one more than both the current and the snapshot's version, so no
        result computed before the restore can be applied after it. Never compacts. The
        archive bound applies to the restored history.
        """
        with self._lock:
            plan = plan_restore(
                snapshot, history, self._next_seq, accept_unknown=self.accept_unknown_call_ids
            )
            self._summary = snapshot.summary
            self._active = plan.items
            self._history = history_of(plan.history)
            self._index, self._unindexed = BM25Index(), 0
            self._calls = PendingCallIndex.of(plan.history.values())
            self._next_seq = plan.next_seq
            self._version = max(self._version, snapshot.version or 0) + 1
            self._window_version += 1
            self._lineage.forget()
            if dropped is not None:
                self._dropped = dropped
            self._bound_archive()

    def clear(self) -> None:
        """Forget the summary, items, pins and history; seqs are still never reused."""
        with self._lock:
            self._summary = ""
            self._active = []
            self._history = SeqMap()
            self._index, self._unindexed = BM25Index(), 0
            self._calls = PendingCallIndex()
            self._version += 1
            self._window_version += 1
            self._dropped = DroppedArchive(count=self._dropped.count)

    @property
    def archive_dropped(self) -> DroppedArchive:
        """What the archive bound dropped: how many items over the session's life, and the
        seqs they spanned since the last ``clear()`` (all zero without a bound)."""
        return self._dropped

    def _bound_archive(self) -> None:
        """Drop the oldest archived items past the bound (under the lock)."""
        drop = self._bound.over(self._history, self._active)
        if not drop:
            return
        for seq in drop:
            del self._history[seq]
        self._dropped = self._dropped.dropped(drop)
        # the index only grows: it is rebuilt, lazily, from what is left
        self._index, self._unindexed = BM25Index(), 0

    def recall(self, query: str, *, limit: int = DEFAULT_RECALL_LIMIT) -> list[RecallHit]:
        """The archived items (and summary lines) that best match ``query``, best first (see
        ``compactkit.memory.recall``).

        Raises:
            ConfigError: ``query`` has no words, or ``limit`` is not between 1 and 1000.
        """
        words = query_words(query)
        check_limit(limit)
        with self._lock:
            index, history = self._index, self._history
            for seq, item in items_from(history, self._unindexed):
                index.add(seq, search_words(item_text(item)))
            self._unindexed = self._next_seq
            active = {item.seq: item for item in self._active}

            def archived(seq: int) -> bool:  # folded away, or replaced in the window
                return active.get(seq) != history[seq]

            ranked = index.search(words, limit=limit, accept=archived, every_word=True)
            if not ranked:  # none holds every word: rank those holding any
                ranked = index.search(words, limit=candidates(limit), accept=archived)
            hits = [hit_for_item(history[seq], score) for seq, score in ranked]
            return rank_hits(hits, summary_hits(self._summary, words), words, limit)

    def expand(self, ref: str) -> list[Item]:
        """Every stored item the reference names (``#412``, ``#412-418``), as first stored, by
        seq; empty when none is stored (cleared, or never written).

        Raises:
            ConfigError: ``ref`` is not a reference.
            ArchiveDroppedError: the archive bound dropped items the reference names.
        """
        first, last = parse_ref(ref)
        with self._lock:
            history = self._history
            gone = self._dropped.gone(first, last, history)
            if gone:
                raise ArchiveDroppedError(
                    f"{ref!r} names {len(gone)} archived item(s) this memory no longer holds "
                    f"({format_ref(gone[0], gone[-1])}): its archive bound "
                    f"({self._bound.describe() or 'of the saved session'}) dropped them, oldest "
                    f"first ({self._dropped.count} dropped so far); the summary's entries "
                    "still hold what was learned from them"
                )
            if last - first < len(history):
                found = [history[seq] for seq in range(first, last + 1) if seq in history]
            else:
                found = [item for seq, item in history.items() if first <= seq <= last]
        return sorted(found, key=_seq)

    def pin(self, seq: int) -> None:
        """Pin the active item ``seq`` (no-op when already pinned).

        Raises:
            ConfigError: no active item has this seq.
        """
        self._set_pinned(seq, True)

    def unpin(self, seq: int) -> None:
        """Unpin the active item ``seq`` (no-op when not pinned).

        Raises:
            ConfigError: no active item has this seq.
        """
        self._set_pinned(seq, False)

    def _set_pinned(self, seq: int, pinned: bool) -> None:
        require_seq(seq)
        with self._lock:
            index = next((i for i, item in enumerate(self._active) if item.seq == seq), None)
            if index is None:
                raise not_active_error(seq, archived=seq in self._history)
            item = self._active[index]
            if item.pinned == pinned:
                return
            active = list(self._active)  # a new list: snapshots already read keep the old one
            active[index] = item.model_copy(update={"pinned": pinned})
            self._active = active
            original = self._history[seq]
            self._history[seq] = original.model_copy(update={"pinned": pinned})
            self._version += 1
            self._window_version += 1


_SNAPSHOT_FIELDS = frozenset(MemorySnapshot.model_fields)


def _constructed_snapshot(summary: str, items: ItemsView, version: int) -> MemorySnapshot:
    """``MemorySnapshot.model_construct(summary=, items=, version=)`` without pydantic's generic
    construction (about 7 µs against 2 µs; a plain-list call reads one snapshot): the same
    field dict, fields set, no extra and no private state (``MemorySnapshot`` has neither).
    Held to ``model_construct`` by tests/memory/test_snapshot_reuse.py."""
    values = {"summary": summary, "items": items, "version": version}
    return constructed(MemorySnapshot, values, set(_SNAPSHOT_FIELDS))


def _where_refused(
    items: Sequence[Item], history: MutableMapping[int, Item], accept_unknown: bool
) -> str:
    """Where a write the call-id rules refused (``_inputs.check_batch``) goes wrong: the call
    or output of ``items`` by its place in the write (a call by its name and arguments too)
    and the one it collides with, in the write or stored (looked up only once refused)."""
    found: dict[tuple[str, str], int] = {}  # (type, call id) -> its place in the write
    for index, item in enumerate(items):
        if not isinstance(item, (FunctionCall, FunctionCallOutput)):
            continue
        key = (item.type, item.call_id)
        this = f"this write's item {index} ({_named(item)})"
        stored = None if key in found else _stored(history, *key)
        if key in found or stored is not None:
            first = (
                f"its item {found[key]} ({_named(items[found[key]])})"
                if stored is None
                else f"the stored item seq {stored.seq} ({_named(stored)})"
            )
            return f"{this} and {first} share the id"
        if isinstance(item, FunctionCallOutput) and not accept_unknown:
            call = ("function_call", item.call_id)
            if call not in found and _stored(history, *call) is None:
                return f"{this} answers no call"
        found[key] = index
    return "this write"


def _stored(history: MutableMapping[int, Item], type: str, call_id: str) -> Item | None:
    """The latest stored call or output (``type``) with ``call_id``."""
    same = [old for old in history.values() if old.type == type and old.call_id == call_id]  # type: ignore[union-attr]
    return same[-1] if same else None


def _named(item: Item) -> str:
    """A call by its name and arguments; an output by its call id."""
    if isinstance(item, FunctionCall):
        return f"a call to {item.name}({item.arguments:.60})"
    return f"an output for {item.call_id!r}"  # type: ignore[union-attr]


def _seq(item: Item) -> int:
    assert item.seq is not None, "stored items always have a seq"
    return item.seq
