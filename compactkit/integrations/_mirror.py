"""A framework's message list mirrored into a compactkit memory, one appended message at a time.

LangChain and pydantic-ai keep the conversation themselves (graph state, ``RunContext.messages``)
and hand the whole list to every hook. Converting and re-counting that list on every model call
would cost O(history); a ``Mirror`` remembers the messages it converted and, when the next list
starts with them (compared by identity first, so the check is a C loop), converts only the new
ones and appends their items to an ``InMemoryMemory``. Anything else (a rewritten state, another
thread, a checkpoint restored elsewhere) rebuilds the memory from the list.

Frameworks allow histories compactkit's memory refuses: call ids reused across runs (scripted
and test models do it), a second result for one call, a result for a call the history no longer
holds. The mirror renames a reused call id (``call_1`` → ``call_1~2``) for the memory only; the
converters restore the framework's own objects, so the model never sees the new names. A result
answering no call stays in the memory and the projector repairs it away (report note).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar

from compactkit.errors import BudgetError
from compactkit.governance.projector import Projection
from compactkit.governance.status import is_budget_status
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory.in_memory import InMemoryMemory

__all__ = ["Convert", "Converted", "Mirror", "Mirrors", "OnPassthrough", "Warn", "require_newest"]

S = TypeVar("S")

Converted = Sequence[Item | str] | str
"""What a converter makes of one framework message: its items, where a ``str`` is the text of a
summary compactkit wrote into the history earlier (it becomes the memory's summary)."""

Warn = Callable[[str], None]
"""Reports a message shape compactkit does not model (it is passed through untouched)."""

Convert = Callable[[S, Warn], Converted]
"""``convert(message, warn)``: the message's items; ``warn`` reports what was passed through."""

OnPassthrough = Callable[[int, str], None]
"""Told the index (in the framework's list) and the reason of every message passed through."""


class _CallIds:
    """Keeps call ids unique for the memory, the way the framework pairs them (latest call)."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.answered: set[str] = set()
        self.latest: dict[str, str] = {}
        self.renamed = 0

    def fix(self, items: list[Item]) -> list[Item]:
        out: list[Item] = []
        for item in items:
            if isinstance(item, FunctionCall):
                name = self._fresh(item.call_id) if item.call_id in self.used else item.call_id
                self.used.add(name)
                self.latest[item.call_id] = name
                if name != item.call_id:
                    item = item.model_copy(update={"call_id": name})
            elif isinstance(item, FunctionCallOutput):
                name = self.latest.get(item.call_id, item.call_id)
                if name in self.answered:  # a second result: an orphan the projector repairs
                    name = self._fresh(item.call_id)
                self.answered.add(name)
                if name != item.call_id:
                    item = item.model_copy(update={"call_id": name})
            out.append(item)
        return out

    def _fresh(self, call_id: str) -> str:
        while True:
            self.renamed += 1
            name = f"{call_id}~{self.renamed}"
            if name not in self.used and name not in self.answered:
                return name


class Mirror(Generic[S]):
    """One conversation's messages and the memory holding their items.

    Args:
        convert: Turns one framework message into items (see ``Convert``).
    """

    def __init__(self, convert: Convert[S]) -> None:
        self._convert = convert
        self.lock = threading.Lock()
        self.context: Any = None
        """What the integration remembers of this conversation's last model call."""
        self.memo: dict[int, Any] = {}
        """The integration's cache of converted items (cleared with the memory)."""
        self.sent: tuple[tuple[Item, ...], list[Any]] = ((), [])
        """The last prompt's items and what they were converted to."""
        self._reset()

    def _reset(self) -> None:
        self.memo = {}
        self.sent = ((), [])
        self.memory = InMemoryMemory(accept_unknown_call_ids=True)
        self.sources: list[S] = []
        self._ids = _CallIds()

    def sync(self, messages: Sequence[S], on_passthrough: OnPassthrough) -> MemorySnapshot:
        """Bring the memory in line with ``messages``; returns the memory's snapshot."""
        known = len(self.sources)
        if known and (len(messages) < known or list(messages[:known]) != self.sources):
            self._reset()
            known = 0
        elif known:
            # Equal but possibly new objects (a checkpoint was loaded): hold the new ones, so
            # the next comparison is by identity again.
            self.sources[:known] = messages[:known]
        added = messages[known:]
        if not added:
            return self.memory.snapshot()
        items: list[Item] = []
        pinned: list[int] = []  # positions in items of what was passed through
        summary: str | None = None
        for offset, message in enumerate(added, known):
            warned: list[str] = []
            converted = self._convert(message, warned.append)
            for reason in warned:
                on_passthrough(offset, reason)
            texts = [converted] if isinstance(converted, str) else converted
            for entry in texts:
                if isinstance(entry, str):
                    summary = entry if summary is None else f"{summary}\n\n{entry}"
                    continue
                if warned:
                    pinned.append(len(items))
                items.append(entry)
        items = self._ids.fix(items)
        if summary is not None:
            current = self.memory.snapshot()
            joined = f"{current.summary}\n\n{summary}" if current.summary else summary
            self.memory.restore(MemorySnapshot(summary=joined, items=(*current.items, *items)))
        elif items:
            self.memory.add_output_items(items)
        self.sources.extend(added)
        snapshot = self.memory.snapshot()
        if pinned:
            # Passed through means never dropped or folded: a pinned item survives both.
            stored = snapshot.items[len(snapshot.items) - len(items) :]
            for position in pinned:
                seq = stored[position].seq
                if seq is not None:
                    self.memory.pin(seq)
            snapshot = self.memory.snapshot()
        return snapshot

    def adopt(self, messages: Sequence[S]) -> None:
        """The framework's history now is ``messages``, which render the memory as it is (the
        state written after a compaction): remember them without converting anything."""
        self.sources = list(messages)


class Mirrors(Generic[S]):
    """The mirrors of the most recent conversations, by key (a thread id, a conversation id).

    Args:
        convert: The converter every mirror uses.
        size: How many conversations to keep; the least recently used one is dropped (and is
            rebuilt from its messages if it comes back).
    """

    def __init__(self, convert: Convert[S], size: int = 64) -> None:
        self._convert = convert
        self._size = size
        self._lock = threading.Lock()
        self._mirrors: OrderedDict[Hashable, Mirror[S]] = OrderedDict()

    def get(self, key: Hashable) -> Mirror[S]:
        """The mirror of conversation ``key`` (a new one the first time)."""
        with self._lock:
            mirror = self._mirrors.get(key)
            if mirror is None:
                mirror = self._mirrors[key] = Mirror(self._convert)
                while len(self._mirrors) > self._size:
                    self._mirrors.popitem(last=False)
            else:
                self._mirrors.move_to_end(key)
            return mirror


def require_newest(snapshot: MemorySnapshot, projection: Projection) -> None:
    """Raise ``BudgetError`` when the prompt lacks the newest item of the history.

    The projector keeps the latest user input and unanswered calls, but a completed tool round
    that does not fit even masked is dropped as a whole; the model would then call the tools
    again and again (pydantic-ai's run loops until its request limit). Refusing is better.
    The error names what is too big: the last round's tool results, or the assistant's (or
    another role's) newest message when that is the newest item.
    """
    if not snapshot.items:
        return
    newest = snapshot.items[-1]
    sent = projection.items[-1] if projection.items else None
    if is_budget_status(sent) and len(projection.items) > 1:  # the line comes after the history
        sent = projection.items[-2]
    if sent is newest or (sent is not None and sent.seq is not None and sent.seq == newest.seq):
        return
    if isinstance(newest, FunctionCallOutput) and not _answers_a_call(snapshot.items):
        return  # a result answering no call: the projector repaired it away (report notes)
    if isinstance(newest, Message):
        who = (
            "the assistant's own newest message"
            if newest.role == "assistant"
            else (f"the newest {newest.role} message")
        )
        raise BudgetError(
            f"{who} does not fit the budget of {projection.budget:,} tokens, so the model "
            "would answer without seeing it; raise the budget or shorten that message",
            part="newest assistant message" if newest.role == "assistant" else "newest message",
            tokens=projection.tokens,
            budget=projection.budget,
        )
    calls = _last_round_outputs(snapshot.items)
    raise BudgetError(
        f"the newest tool results (call ids {', '.join(map(repr, calls)) or 'none'}, the last "
        f"round) do not fit the budget of {projection.budget:,} tokens even masked, so the "
        "model would call the tools again without seeing them; raise the budget or make the "
        "tool calls smaller",
        part="newest tool results",
        tokens=projection.tokens,
        budget=projection.budget,
    )


def _last_round_outputs(items: Sequence[Item]) -> list[str]:
    """The call ids of the tool results of the newest round (the outputs after its calls)."""
    calls: list[str] = []
    for item in reversed(items):
        if isinstance(item, FunctionCallOutput):
            calls.append(item.call_id)
        else:
            break
    return calls[::-1]


def _answers_a_call(items: Sequence[Item]) -> bool:
    """Whether the last item (a tool result) answers a call of the turn it ends."""
    call_id = items[-1].call_id  # type: ignore[union-attr]
    for item in reversed(items[:-1]):
        if isinstance(item, FunctionCall):
            if item.call_id == call_id:
                return True
        elif not isinstance(item, FunctionCallOutput):
            return False
    return False
