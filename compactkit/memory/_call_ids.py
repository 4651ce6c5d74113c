"""``PendingCallIndex``: ``CallIndex``'s rules over one set of call ids instead of two.

``CallIndex`` keeps every call id a memory stored and every call id an output answered: two
sets of about the same ids, since nearly every call gets its output. ``InMemoryMemory`` holds
its index for the whole session, so that is two entries per call (about 0.5 MiB per set at
15,000 calls). This index keeps every call id once, the calls still waiting for their output
(a handful) and the outputs that answered no stored call (none in a valid history):

* answered(id) = the id is a stray output's, or a stored call's that is no longer pending.

Cost model: ``check`` and ``add`` do the same set look-ups as ``CallIndex``'s, plus one on the
small pending set. The plain version is ``_inputs.CallIndex`` (the SQL and Redis memories fill
its two sets from their rows); ``tests/memory/test_pending_call_index.py`` holds this one to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from compactkit.items import FunctionCall, FunctionCallOutput, Item
from compactkit.memory._inputs import check_batch

__all__ = ["PendingCallIndex"]


class PendingCallIndex:
    """The call ids a memory has seen, to refuse outputs for unknown or answered calls
    (``CallIndex``'s ``check``, ``add`` and ``of``)."""

    __slots__ = ("calls", "pending", "stray")

    def __init__(self) -> None:
        self.calls: dict[str, None] = {}
        """Call ids of every stored function call (archived ones included): a dict used as a
        set, which takes about a fifth of a set's memory at 5,000 ids (a set's table grows
        fourfold while it is small, and holds 16 bytes a slot against a dict's 2-4 a slot of
        index and 24 an entry)."""
        self.pending: set[str] = set()
        """The stored calls no output has answered yet."""
        self.stray: set[str] = set()
        """Call ids of stored outputs that answered no stored call (when accepted)."""

    @classmethod
    def of(cls, items: Iterable[Item]) -> PendingCallIndex:
        """The index of ``items``."""
        index = cls()
        for item in items:
            index.add(item)
        return index

    def answered(self, call_id: str) -> bool:
        """Whether an output for ``call_id`` is stored."""
        return call_id in self.stray or (call_id in self.calls and call_id not in self.pending)

    def add(self, item: Item) -> None:
        """Record ``item``'s call id, if it has one."""
        if isinstance(item, FunctionCall):
            call_id = item.call_id
            if call_id not in self.calls:
                self.calls[call_id] = None
                if call_id not in self.stray:  # (its output was stored first: answered)
                    self.pending.add(call_id)
        elif isinstance(item, FunctionCallOutput):
            call_id = item.call_id
            if call_id in self.pending:
                self.pending.discard(call_id)
            elif call_id not in self.calls:
                self.stray.add(call_id)

    def check(self, items: Sequence[Item], *, accept_unknown: bool) -> None:
        """Raise ``ConfigError`` unless ``items`` can be appended to a memory with this index
        (``_inputs.check_batch``'s rules, the same refusals as ``CallIndex``'s)."""
        check_batch(items, self.calls, self.answered, accept_unknown=accept_unknown)
