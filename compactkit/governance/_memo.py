"""What a projector remembers between calls, behind one object: ``ProjectionMemo``.

The projector asks it, on the plain path and the cache-aware path alike, for:

* the structure of a history (``view``: groups, pins, running totals), indexed incrementally as
  the history grows (``_projection.ViewCache``);
* the messages it makes from text (the instructions, the summary), one object per text, so the
  counter's per-item cache hits;
* the checked tools and their schema tokens, remembered for the tools of the last call;
* the previous prompt of each session: the cache-aware planner (``_cache.StablePrefix``) and
  the byte-identical prefix a prompt shares with it (``_prefix.PrefixTracker``).

Every cache answers exactly what the plain computation would; each keeps per-turn work
proportional to what changed, not to the whole history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from operator import is_

from compactkit.budget.tokens import TokenCounter
from compactkit.errors import ConfigError
from compactkit.governance._cache import StablePrefix
from compactkit.governance._incremental import MessageCache, OverheadCache
from compactkit.governance._pieces import Masker
from compactkit.governance._prefix import PrefixTracker
from compactkit.governance._projection import View, ViewCache
from compactkit.governance._prompt import Projection
from compactkit.items import Item, Message, Tool
from compactkit.items.snapshot import MemorySnapshot, SummaryRole, summary_message

__all__ = ["ProjectionMemo", "checked_tools"]

Instructions = str | Sequence[Message] | None


class ProjectionMemo:
    """The caches of one projector (one per ``ContextProjector``; safe across threads)."""

    def __init__(self, counter: TokenCounter, refill: float) -> None:
        self.counter = counter
        self.masker = Masker()
        self._views = ViewCache()
        self._overhead = OverheadCache()
        self._messages = MessageCache()
        self._tools: tuple[Tool, ...] = ()
        self._prefixes = PrefixTracker()
        self._stable = StablePrefix(counter, refill)
        self._fitted: tuple[tuple[str, str, int], Message | None] | None = None
        self._floor: tuple[tuple[str, str], Message | None] | None = None

    def view(self, items: Sequence[Item]) -> View:
        """The structure of ``items``, reusing what is known of a history it extends."""
        return self._views.view(items)

    def held_view(self, items: Sequence[Item]) -> AbstractContextManager[View]:
        """``view(items)`` with the history held until the block ends (``ViewCache.held``):
        what a projection uses, so that two threads projecting one session take turns."""
        return self._views.held(items)

    def forget(self, items: Sequence[Item]) -> None:
        """Drop the structure of the history ``items`` extends (a compaction replaced it)."""
        self._views.forget(items)

    def tools(self, tools: object) -> tuple[Tool, ...]:
        """``checked_tools(tools)``, remembered for the tools of the last call: agents pass the
        same tool objects every turn, and checking them again costs more than comparing them."""
        seen = self._tools
        if (
            isinstance(tools, (list, tuple))
            and len(tools) == len(seen)
            and all(map(is_, tools, seen))
        ):
            return seen
        checked = self._tools = checked_tools(tools)
        return checked

    def overhead(self, tools: Sequence[Tool]) -> int:
        """The request's tokens beyond its items: the tool schemas and the reply priming."""
        return self._overhead(self.counter, tools)

    def instructions(self, instructions: Instructions) -> list[Message]:
        """The instructions as messages, or a ``ConfigError`` for anything else."""
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

    def summary(self, role: SummaryRole, text: str) -> Message:
        """The summary's own marked message."""
        return self._messages.get(role, text, summary=True)

    def fitted_summary(self, role: SummaryRole, text: str, tokens: int) -> Message | None:
        """The summary message of ``text`` trimmed to at most ``tokens`` (``shrink_summary``),
        or ``None`` when it cannot be; remembered for the last request that asked (a session
        under pressure asks the same until it compacts or its newest group changes)."""
        key = (role, text, tokens)
        fitted = self._fitted
        if fitted is not None and fitted[0] == key:
            return fitted[1]
        # (imported here: only a request over budget needs the summary's trimming)
        from compactkit.compressors.shrink import shrink_summary

        def size(summary: str) -> int:  # (candidates: not kept in the message cache)
            return self.counter.count_item(summary_message(summary, role))

        shrunk = shrink_summary(text, tokens, size, self.counter)
        message = None if shrunk is None else self.summary(role, shrunk)
        self._fitted = (key, message)
        return message

    def user_words_summary(self, role: SummaryRole, text: str) -> Message | None:
        """The summary message of ``text`` with only the user's goal and rules left
        (``user_words_summary``; ``None`` for prose), remembered for the last text asked."""
        floor = self._floor
        if floor is not None and floor[0] == (role, text):
            return floor[1]
        from compactkit.compressors.shrink import user_words_summary  # (see fitted_summary)

        kept = user_words_summary(text, self.counter)
        message = None if kept is None else self.summary(role, kept)
        self._floor = ((role, text), message)
        return message

    def cached_prefix(self, items: Sequence[Item], tools: Sequence[Tool], tokens: int) -> int:
        """Tokens of this request that repeat the session's previous prompt byte for byte
        (and remember this one as the session's latest)."""
        return self._prefixes.observe(self.counter, items, tools, tokens)

    def extend_front(
        self,
        snapshot: MemorySnapshot,
        instructions: Instructions,
        tools: tuple[Tool, ...],
        budget: int,
    ) -> Projection | None:
        """Cache-aware mode, the usual turn in one pass: ``extend_previous``, ``cached_prefix``
        and ``with_cached_prefix`` when the session's previous prompt is the front plan and
        this one extends it (``StablePrefix.extend_front``); ``None`` (nothing changed) when
        the caller must take those steps."""
        return self._stable.extend_front(snapshot, instructions, tools, budget, self._prefixes)

    def extend_previous(
        self,
        plain: Callable[..., Projection],
        snapshot: MemorySnapshot,
        instructions: Instructions,
        tools: tuple[Tool, ...],
        budget: int,
    ) -> Projection:
        """Cache-aware mode: the session's previous prompt plus what was appended, or a fresh
        plan by ``plain`` when that no longer fits (``_cache.StablePrefix``)."""
        return self._stable.project(plain, snapshot, instructions, tools, budget)


def checked_tools(tools: object) -> tuple[Tool, ...]:
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
