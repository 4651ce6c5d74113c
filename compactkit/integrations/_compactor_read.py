"""Bringing a ``MessageCompactor``'s memory up to the list it is given (``ListReader``, which
``MessageCompactor`` extends, ``_compactor.py``): only the messages it has not read are
converted and stored; a list that does not continue one it read is read from the start (or
from the end a prompt can reach, ``_cold.py``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from compactkit.errors import ConfigError, FormatError
from compactkit.integrations._cold import COLD_FROM, read_cold
from compactkit.integrations._compacted import Seen
from compactkit.integrations._originals import remember
from compactkit.integrations._wire import (
    MessageFormat,
    Original,
    Passthrough,
    WireConverter,
    detect_format,
)
from compactkit.items import FunctionCallOutput, Item, Message
from compactkit.items.snapshot import MemorySnapshot, is_summary_message
from compactkit.memory.in_memory import InMemoryMemory, SeqMap
from compactkit.runtime.events import Event, PassthroughEvent, emit
from compactkit.runtime.governor import Governor

__all__ = ["ListReader"]


class ListReader:
    """The reading half of ``MessageCompactor``: its memory, the lists it read, which stored
    items each message became, and the converter that read them."""

    governor: Governor
    on_event: Callable[[Event], None] | None
    _format: MessageFormat | None

    def _reset(self) -> None:
        self._memory = InMemoryMemory(accept_unknown_call_ids=True)
        self._seen: list[Seen] = []
        # seq of a message's first item -> (the message, *its items); a list by seq (a dict
        # by seq took three times the memory: the compactor holds one entry per message)
        self._originals: SeqMap[Original] = SeqMap()
        self._converter = WireConverter(self._format or "chat")
        self._decided = self._format is not None
        self._unread: tuple[int, int] | None = None
        """Items the memory does not hold (a cold read left them unread), and where they
        would be: the report counts them as the whole list's would."""

    def _ingest(self, messages: Sequence[Any], events: list[Event]) -> None:
        """Bring the memory up to ``messages``, reading only what it has not seen."""
        known: Seen | None = None
        for seen in self._seen:  # (edited is O(1): see SeenList)
            edited = seen.messages.edited(messages)
            if edited == [] or (edited and self._read_edited(seen, messages, edited)):
                known = seen
                break
        if known is None:
            self._reset()
            if self._read_cold(messages):
                return
            known = Seen()
        new_start = len(known.messages)
        fresh = messages[new_start:]
        converter = self._converter_for(fresh)
        passed: list[Passthrough] = []
        per_message: list[list[Item]] = []
        items: list[Item] = []
        # Items read from plain dicts are new objects this call alone holds: the memory numbers
        # them in place (any other message, an item object say, may be read back as itself).
        owned = True
        to_items, keep, add = converter.to_items, per_message.append, items.extend
        mark = converter.checkpoint()
        try:
            for offset, message in enumerate(fresh, new_start):  # (one pass: each is O(new))
                message_items = to_items(message, offset, passed.append)
                keep(message_items)
                add(message_items)
                if type(message) is not dict:
                    owned = False
        except FormatError:  # (a repeated call id): nothing was stored; a corrected list is
            converter.rollback(mark)  # read as if this one never came
            raise
        for passthrough in passed:
            event = PassthroughEvent(
                index=passthrough.index, reason=passthrough.reason, format=converter.format
            )
            events.append(emit(event, self.on_event))
        summaries = any(map(is_summary_message, items))  # (a summary pasted in)
        stored = self._append(items, restart=new_start == 0, summaries=summaries, fresh=owned)
        self._remember(fresh, per_message, summaries=summaries, stored=stored)
        known.messages.extend(fresh)
        self._seen = [known]

    def _read_edited(self, seen: Seen, messages: Sequence[Any], positions: list[int]) -> bool:
        """Read again the messages edited in place at ``positions`` (the first, recent ones),
        replacing their items in the memory (same seqs; the summary and every other item kept),
        when each is a plain message still active whose items stay plain messages (a system
        prompt rewritten, text appended to a user or assistant message). Returns whether it
        did; else the caller reads the whole list again. Costs a restore of the active items:
        no message is converted or counted again but the edited ones, nothing is compacted."""
        memory = self._memory
        snapshot = memory.snapshot()
        active = snapshot.items
        probe = WireConverter(self._converter.format)  # (no call ids: nothing to remember)
        replaced: dict[int, Item] = {}  # seq -> the item read again, and the one it replaces
        olds: dict[int, Item] = {}
        entries: list[tuple[int, Original]] = []
        for position in positions:
            message = messages[position]
            found = self._active_entry(message, active, from_end=position > 0)
            passed: list[Passthrough] = []
            new = probe.to_items(message, position, passed.append)
            if found is None or passed or len(new) != len(found) - 1 or found[1].seq in olds:
                return False  # (the last: one object at two places; only a full read numbers both)
            items: list[Item] = []
            for old, item in zip(found[1:], new, strict=True):
                if type(old) is not Message or type(item) is not Message:
                    return False
                if is_summary_message(item) or old.seq is None or item.role != old.role:
                    return False  # (a role changed: where the summary belongs may move)
                items.append(item.model_copy(update={"seq": old.seq, "pinned": old.pinned}))
                replaced[old.seq] = items[-1]
                olds[old.seq] = old
            entries.append((items[0].seq, (message, *items)))  # type: ignore[arg-type]
        kept: list[Item] = []
        for item in active:
            new_item = replaced.get(item.seq)  # type: ignore[arg-type]
            if new_item is None:
                kept.append(item)
            elif item is olds[item.seq]:  # type: ignore[index]
                kept.append(new_item)
            else:  # (a compaction changed it: what it holds is no longer that message's)
                return False
        # The archive: what the active items do not hold as they are (folded items, the
        # originals of items a compaction replaced); the rest restore takes from the items.
        held = {id(item) for item in active}
        history = [item for item in memory.history() if id(item) not in held]
        memory.restore(MemorySnapshot(summary=snapshot.summary, items=kept), history=history)
        for seq, entry in entries:
            self._originals[seq] = entry
        seen.messages.remark(positions)
        return True

    def _active_entry(
        self, message: Any, active: Sequence[Item], *, from_end: bool
    ) -> Original | None:
        """The ``_originals`` entry of ``message`` among the active items (searched from the
        end for a recent message, from the start for the first one), or ``None``."""
        originals = self._originals
        for item in reversed(active) if from_end else active:
            entry = originals.get(item.seq)
            if entry is not None and entry[0] is message:
                return entry
        return None

    def _read_cold(self, messages: Sequence[Any]) -> bool:
        """Read only the part of a long list a prompt can reach (``_cold.py``), when nothing
        can ever need the rest: compaction is off (no policy, no compressor, no status line:
        nothing measures the whole history) and no callback sees the unshifted report.
        Returns whether it did; else the caller reads the whole list."""
        governor = self.governor
        projector = governor.projector
        budget = projector.budget
        if (
            len(messages) < COLD_FROM
            or budget is None
            or governor.policy is not None
            or governor.compressor is not None
            or governor.status is not None
            or governor.on_event is not None
            or self.on_event is not None
            or projector.validate == "raise"  # (its errors name positions)
            or self._converter_for(messages).format != "chat"
        ):
            return False
        read = read_cold(messages, projector, budget)
        if read is None:
            return False
        self._append([item for items in read.items for item in items], restart=True)
        self._remember(read.messages, read.items)
        answered = [
            item.call_id
            for items in read.items
            for item in items
            if isinstance(item, FunctionCallOutput)
        ]
        self._converter.note_calls(read.call_ids, answered)
        known = Seen()
        known.messages.extend(messages)
        self._seen = [known]
        self._unread = (read.skipped, read.lead_items)
        return True

    def _append(
        self,
        items: list[Item],
        *,
        restart: bool,
        summaries: bool | None = None,
        fresh: bool = False,
    ) -> list[Item] | None:
        """Store ``items`` (``summaries``: whether any of them is a summary message, when the
        caller knows; ``fresh``: no one else holds them, so they may be numbered in place);
        returns them as stored when they were appended as they are (``None`` when the memory
        was restored instead)."""
        if not items:
            return None
        memory = self._memory
        if summaries is None:
            summaries = any(is_summary_message(item) for item in items)
        if restart or summaries:
            snapshot = memory.snapshot()
            old = (
                [*snapshot.render_items(), *items] if snapshot.items or snapshot.summary else items
            )
            memory.restore(MemorySnapshot.from_items(old))
            return None
        try:  # (no summary among them: ``restart or summaries`` restored above)
            return memory.add_read_items(items, fresh=fresh, summaries_checked=True)
        except ConfigError:
            # A write the memory refuses (a call answered twice): restore takes the list as it
            # is, and the projector repairs the prompt (the history keeps every message).
            snapshot = memory.snapshot()
            memory.restore(
                MemorySnapshot(summary=snapshot.summary, items=(*snapshot.items, *items))
            )
            return None

    def _remember(
        self,
        fresh: Sequence[Any],
        per_message: list[list[Item]],
        *,
        summaries: bool = True,
        stored: Sequence[Item] | None = None,
    ) -> None:
        """``_originals.remember`` on this compactor's map and memory."""
        remember(self._originals, self._memory, fresh, per_message, summaries, stored)

    def _converter_for(self, fresh: Sequence[Any]) -> WireConverter:
        if not self._decided:
            # Plain text messages read the same in every format: chat until a message decides.
            format = detect_format(fresh)
            if format is not None:
                self._converter.format = format
                self._decided = True
        return self._converter
