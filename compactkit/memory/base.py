"""The memory protocol, and the base class the built-in memories share.

A memory holds the facts of one session: a running ``summary`` and the active items, each with a
``seq`` it assigned. ``AgentMemory`` is the protocol agents code against; ``BaseMemory`` turns the
three writes into items (through the shared rules) and runs write-path compaction, so a backend
only stores.

Decisions every backend keeps (the public conformance kit, ``compactkit.testing.conformance``,
checks them):

* ``seq`` starts at 1, increases strictly in the order items are stored and is never reused by a
  memory — not after a compaction, not after ``clear()``. It is identity and creation order; the
  active items keep the order a compressor returned, so a placeholder it created may stand before
  items with smaller seqs.
* ``version`` increases with every write (the three adds, ``apply`` that changes something,
  ``restore``, ``clear``, ``pin``/``unpin`` that change a flag). ``apply`` refuses a result
  computed from an older version with ``ConcurrencyError``.
* ``history()`` returns every item stored since the last ``clear()``, in seq order, with its
  original content: compaction archives, it never deletes; a replaced item (a masked output)
  shows its original there. ``clear()`` is the only way to forget.
* Tool outputs: a missing call id, a call id never stored, and a second output for one call raise
  ``ConfigError`` (the first two unless ``accept_unknown_call_ids``).
* Write-path compaction: after each of the three writes, when a compressor is set and the policy
  fires (or no policy is set), the compressor runs on a snapshot and its result is applied. It
  runs outside the memory's lock; if another write lands meanwhile the stale result is dropped
  (that write checks again). ``restore``, ``clear``, ``apply`` and pins never compact. Setting
  ``compressor`` or ``policy`` takes effect at the next write and never re-runs anything.
"""

from __future__ import annotations

import contextlib
import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from compactkit.compressors.base import CompressorLike, MemoryCompressor
from compactkit.errors import ConcurrencyError, ConfigError, SessionBusyError
from compactkit.items import ContentPart, Item
from compactkit.items.snapshot import (
    DEFAULT_SUMMARY_ROLE,
    CompactResult,
    MemorySnapshot,
    SummaryRole,
)
from compactkit.memory._inputs import (
    OutputItem,
    UserInput,
    output_items,
    tool_output_item,
    user_input_item,
)
from compactkit.memory.lease import hold_compaction

_WRITE_PATH_ROUNDS = 4
"""Write-path compaction rounds per write at most (``BaseMemory._compact_while_due``)."""

__all__ = ["AgentMemory", "BaseMemory", "SnapshotTrigger"]

SnapshotTrigger: TypeAlias = Callable[[MemorySnapshot], bool]
"""Decides, after a write, whether to compact the snapshot. A ``CompactPolicy`` becomes one with
``policy.as_trigger(counter)`` (it measures the snapshot into its richer ``PolicyState``)."""

Trigger: TypeAlias = SnapshotTrigger  # the short name the backends use internally


class _Keep(enum.Enum):
    KEEP = "keep"  # set_compressor: leave the policy as it is


CompactCallback: TypeAlias = Callable[[CompactResult], None]
"""Called with the result of every compaction the memory runs (write path or ``compact()``),
whatever its outcome — a failure is never silent."""


@runtime_checkable
class AgentMemory(Protocol):
    """The facts of one session: what agents and compactkit read and write.

    Implement it for your own storage; every implementation must pass the conformance suite.
    """

    def add_user_input(self, input: UserInput) -> None:
        """Store a user turn: text, a ``Message`` or content parts."""
        ...

    def add_output_items(self, items: Iterable[OutputItem]) -> None:
        """Store model output: items or OpenAI chat message dicts (``tool_calls`` become
        ``FunctionCall`` items)."""
        ...

    def add_tool_output(
        self,
        call_id: str,
        output: str | Sequence[ContentPart],
        *,
        name: str | None = None,
        is_error: bool | None = None,
    ) -> None:
        """Store a tool's result for the call ``call_id``."""
        ...

    @property
    def items(self) -> list[Item]:
        """The prompt view: the summary as its own marked message (after leading
        system/developer messages) when non-empty, then the active items."""
        ...

    @property
    def summary(self) -> str:
        """The running summary; empty when nothing was folded."""
        ...

    @property
    def version(self) -> int:
        """Increases with every write; 0 for a memory never written."""
        ...

    def clear(self) -> None:
        """Forget everything: summary, items, pins and history (seqs are still never reused)."""
        ...

    def snapshot(self) -> MemorySnapshot:
        """The summary and active items (no rendered summary message), with ``version``."""
        ...

    def restore(self, snapshot: MemorySnapshot, *, history: Sequence[Item] = ()) -> None:
        """Replace the whole state with ``snapshot`` (never compacts); ``history`` adds archived
        items and originals, as returned by ``history()``."""
        ...

    def apply(self, result: CompactResult) -> bool:
        """Swap in a compaction result atomically; ``False`` for a failed/unchanged result.

        Raises:
            ConcurrencyError: the memory was written after the result's snapshot was taken.
        """
        ...

    def history(self) -> list[Item]:
        """Every item stored since the last ``clear()``, archived ones included, by seq."""
        ...

    def pin(self, seq: int) -> None:
        """Pin the active item ``seq``: projection and compaction keep it."""
        ...

    def unpin(self, seq: int) -> None:
        """Unpin the active item ``seq``."""
        ...


class BaseMemory(ABC):
    """What the built-in memories share: input normalisation and write-path compaction.

    A backend implements ``_append`` (validate call ids, assign seqs and store, atomically) and
    the state methods of ``AgentMemory``; the shared rules live in ``compactkit.memory._inputs`` and ``compactkit.memory._rules``.
    """

    def __init__(
        self,
        *,
        policy: SnapshotTrigger | None = None,
        compressor: CompressorLike | None = None,
        on_compact: CompactCallback | None = None,
        accept_unknown_call_ids: bool = False,
        summary_role: SummaryRole = DEFAULT_SUMMARY_ROLE,
    ) -> None:
        """Configure the memory.

        Args:
            policy: When to compact after a write; with no policy a set compressor runs after
                every write (the reference SDK's mode).
            compressor: Compacts the snapshot when the policy fires.
            on_compact: Called with every compaction result, failures included.
            accept_unknown_call_ids: Store tool outputs for calls this memory never stored.
            summary_role: The role of the rendered summary message in ``items`` (``user``;
                ``system`` gives text distilled from tool output system authority).
        """
        compressor = _check_options(compressor, policy)
        self._policy = policy
        self._compressor = compressor
        self.on_compact = on_compact
        self.accept_unknown_call_ids = accept_unknown_call_ids
        self.summary_role: SummaryRole = summary_role
        self._last_compaction: CompactResult | None = None

    # -- storage, per backend -------------------------------------------------------------

    @abstractmethod
    def _append(self, items: Sequence[Item]) -> None:
        """Atomically check the call ids of ``items`` (``CallIndex.check``), assign their seqs,
        store them and bump the version. Nothing is stored when the check fails."""

    @abstractmethod
    def snapshot(self) -> MemorySnapshot:
        """The summary and active items, with ``version``."""

    @abstractmethod
    def apply(self, result: CompactResult) -> bool:
        """Swap in a compaction result atomically (see ``AgentMemory.apply``)."""

    # -- the three writes -------------------------------------------------------------------

    def add_user_input(self, input: UserInput) -> None:
        """Store a user turn: text, a ``Message`` (any role) or content parts."""
        self._write([user_input_item(input)])

    def add_output_items(self, items: Iterable[OutputItem]) -> None:
        """Store model output items; OpenAI chat message dicts are converted (an empty batch
        writes nothing). Incoming ``seq`` values are replaced by this memory's own."""
        converted = output_items(items)
        if converted:
            self._write(converted)

    def add_tool_output(
        self,
        call_id: str,
        output: str | Sequence[ContentPart],
        *,
        name: str | None = None,
        is_error: bool | None = None,
    ) -> None:
        """Store a tool's result for the stored call ``call_id``.

        Raises:
            ConfigError: ``call_id`` is empty, names a call never stored (unless
                ``accept_unknown_call_ids``), or the call already has an output.
        """
        self._write([tool_output_item(call_id, output, name=name, is_error=is_error)])

    # -- reads --------------------------------------------------------------------------------

    @property
    def items(self) -> list[Item]:
        """The prompt view: rendered summary first (after the instructions), then the items."""
        return self.snapshot().render_items(summary_role=self.summary_role)

    @property
    def summary(self) -> str:
        """The running summary; empty when nothing was folded."""
        return self.snapshot().summary

    # -- compaction ---------------------------------------------------------------------------

    @property
    def compressor(self) -> MemoryCompressor | None:
        """The write-path compressor; a new one takes effect at the next write, ``None`` pauses
        write-path compaction (the policy is kept for a later compressor)."""
        return self._compressor

    @compressor.setter
    def compressor(self, compressor: CompressorLike | None) -> None:
        self.set_compressor(compressor)

    @property
    def policy(self) -> SnapshotTrigger | None:
        """When to compact after a write; a new one takes effect at the next write."""
        return self._policy

    @policy.setter
    def policy(self, policy: SnapshotTrigger | None) -> None:
        _check_options(self._compressor, policy)
        self._policy = policy

    def set_compressor(
        self,
        compressor: CompressorLike | None,
        *,
        policy: SnapshotTrigger | Literal[_Keep.KEEP] | None = _Keep.KEEP,
    ) -> None:
        """Replace the write-path compressor (and the policy, when given) in one step.

        Takes effect at the next write; nothing is compacted now and past compactions are never
        re-run (on every backend). ``None`` pauses write-path compaction.

        Raises:
            ConfigError: a policy is given without a compressor.
        """
        if policy is _Keep.KEEP:
            policy = self._policy  # kept, and inert while there is no compressor
            compressor = _check_options(compressor, None)
        else:
            compressor = _check_options(compressor, policy)
        self._compressor, self._policy = compressor, policy

    @property
    def last_compaction(self) -> CompactResult | None:
        """The result of the last compaction this object ran (write path or ``compact()``)."""
        return self._last_compaction

    def compact(self, compressor: CompressorLike | None = None) -> CompactResult:
        """Compact now, whatever the policy says, and return the result.

        Args:
            compressor: Overrides the memory's compressor for this call.

        A memory shared between processes (``SQLMemory``, ``RedisMemory``) is compacted under
        its compaction lease (``compactkit.memory.lease``), so two compactors of one session
        never both pay for a summary.

        Raises:
            ConfigError: there is no compressor.
            SessionBusyError: another compactor holds the session's compaction lease (for
                ``compaction_wait`` seconds); the compressor was not called, nothing changed.
            ConcurrencyError: the memory was written while the compressor ran; nothing changed.
        """
        if compressor is not None:
            compressor = _check_options(compressor, None)
        else:
            compressor = self._compressor
        if compressor is None:
            raise ConfigError("compact() needs a compressor: pass one or set memory.compressor")
        hold = hold_compaction(self)
        if not hold.taken:
            session_id = str(getattr(self, "session_id", "?"))
            raise SessionBusyError(
                f"session {session_id!r} is being compacted by {hold.other!r} (it holds the "
                "compaction lease); nothing was compacted and the compressor was not called. "
                "Retry later, or give the memory a compaction_wait",
                session_id=session_id,
                holder=hold.other or "?",
                since=None,
            )
        try:
            result = compressor.compress(self.snapshot())
            self.apply(result)
        finally:
            hold.release()
        self._record(result)
        return result

    def _write(self, items: Sequence[Item]) -> None:
        self._append(items)
        if self._compressor is not None:
            self._compact_while_due()

    def _compact_while_due(self) -> None:
        """Write-path compaction: compact while the policy fires, in at most
        ``_WRITE_PATH_ROUNDS`` rounds.

        A writer that finds the compaction lease taken returns, trusting the holder; so the
        holder checks the policy again after it releases: writes that landed while it
        compressed (kept by the rebase, or the reason its result was refused) are folded by
        another round. A round whose own result left the policy firing, with nothing written
        since, ends it: that compressor cannot do better on the same snapshot."""
        own: int | None = None  # the version right after this write's last result, if it did
        for _ in range(_WRITE_PATH_ROUNDS):
            compressor, policy = self._compressor, self._policy
            if compressor is None:
                return
            snapshot = self.snapshot()
            if snapshot.version == own or (policy is not None and not policy(snapshot)):
                return  # nothing written since its own result, or the policy is content
            hold = hold_compaction(self)
            if not hold.taken:
                return  # another compactor of this session is at it; it checks again after
            done: tuple[CompactResult, bool] | None = None
            try:
                if hold.holder is not None:
                    snapshot = self.snapshot()  # read again under the lease: it may have moved on
                result = compressor.compress(snapshot)
                with contextlib.suppress(ConcurrencyError):  # written meanwhile: another round
                    done = (result, self.apply(result))
            finally:
                hold.release()
            if done is not None:
                result, changed = done
                self._record(result)
                if policy is None or not changed:
                    return  # compacting on every write, or a failed or unchanged result
                own = (snapshot.version or 0) + 1

    def _record(self, result: CompactResult) -> None:
        self._last_compaction = result
        if self.on_compact is not None:
            self.on_compact(result)


def _check_options(compressor: object, policy: object) -> MemoryCompressor | None:
    """``compressor`` (a plain function made a ``FunctionCompressor``); refuse, when configured
    rather than at the next write, what write-path compaction cannot run: a policy without a
    compressor, a policy that is not a trigger, a compressor without ``compress``."""
    checked: MemoryCompressor | None = None
    if compressor is not None:
        from compactkit.compressors.function import as_memory_compressor  # (loads formats)

        checked = as_memory_compressor(compressor)
    if policy is None:
        return checked
    if compressor is None:
        raise ConfigError("a compaction policy needs a compressor (pass compressor=...)")
    if callable(getattr(policy, "as_trigger", None)):
        raise ConfigError(
            f"policy= takes a trigger (snapshot) -> bool, got a {type(policy).__name__}; "
            "pass policy.as_trigger(counter) (for example counter_for(model))"
        )
    if not callable(policy):
        raise ConfigError(
            f"policy= takes a trigger (snapshot) -> bool, got {type(policy).__name__}: {policy!r:.80}"
        )
    return checked
