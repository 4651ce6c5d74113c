"""The options of ``CompactkitMiddleware`` that mirror LangChain's own middlewares.

* ``MessagesCounter``: a LangChain ``token_counter(messages) -> int`` (the callable
  ``SummarizationMiddleware`` and ``ContextEditingMiddleware`` take) as compactkit's
  ``TokenCounter``, so the budget, the triggers and the compaction target are measured with it.
* ``KeepMessages``: ``keep=("messages", N)``: a compaction keeps the newest N messages verbatim
  (more when the cut would separate a tool result from the message that called it).
* ``ClearToolOutputs``: ``ContextEditingMiddleware``'s ``ClearToolUsesEdit`` shape: over a
  token trigger, older tool results are replaced by a placeholder in what the model sees.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from compactkit.budget.tokens import TokenCount
from compactkit.compressors.base import MemoryCompressor
from compactkit.errors import ConfigError
from compactkit.integrations import _langchain_convert as convert
from compactkit.items import FunctionCall, Item, Message, Tool, group_items
from compactkit.items.snapshot import CompactResult, MemorySnapshot

__all__ = ["ClearToolOutputs", "KeepMessages", "MessagesCounter"]

CountMessages = Callable[[Sequence[BaseMessage]], int]
"""LangChain's token counter shape: the tokens of a list of messages."""


class MessagesCounter:
    """A ``TokenCounter`` that prices each LangChain message with ``count_messages``.

    An ``AIMessage`` that became several items (its text and its tool calls) is priced once, on
    its first item; a masked tool output is priced as masked. Counts are cached per item (items
    are immutable). Counts are labelled approximate: compactkit cannot check them.
    """

    model: str | None = None

    def __init__(self, count_messages: CountMessages) -> None:
        if not callable(count_messages):
            raise ConfigError(
                f"token_counter must be a callable taking a list of messages and returning "
                f"their tokens (as LangChain's count_tokens_approximately), got "
                f"{type(count_messages).__name__}"
            )
        self._count = count_messages
        self._cache: dict[int, tuple[Item, int]] = {}
        self._lock = threading.Lock()

    @property
    def encoding_name(self) -> str | None:
        """``None``: the count is the callable's, not a tokenizer's."""
        return None

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` as one human message."""
        return self._tokens([HumanMessage(content=text)])

    def count_item(self, item: Item) -> int:
        """Tokens of the message ``item`` came from (0 for its second and later items)."""
        hit = self._cache.get(id(item))
        if hit is not None and hit[0] is item:
            return hit[1]
        tokens = self._price(item)
        with self._lock:
            if len(self._cache) > 200_000:
                self._cache.clear()
            self._cache[id(item)] = (item, tokens)
        return tokens

    def count_overhead(self, tools: Sequence[Tool] = ()) -> int:
        """0: LangChain's counters price messages only."""
        return 0

    def count(self, items: Any, *, tools: Sequence[Tool] = (), format: str = "chat") -> TokenCount:
        """The whole request as the callable counts it."""
        total = sum(self.count_item(item) for item in items)
        return TokenCount(
            tokens=total,
            exact=False,
            encoding=None,
            model=None,
            notes=("counted by the token_counter given to CompactkitMiddleware",),
        )

    def _price(self, item: Item) -> int:
        extra = getattr(item, "extra", None) or {}
        source = extra.get(convert.SOURCE_KEY)
        if isinstance(source, AIMessage) and isinstance(item, Message | FunctionCall):
            return self._tokens([source]) if _first_of(item, source) else 0
        return self._tokens(convert.to_messages([item]))

    def _tokens(self, messages: Sequence[BaseMessage]) -> int:
        tokens = self._count(list(messages))
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ConfigError(f"token_counter must return a number of tokens >= 0, got {tokens!r}")
        return tokens


def _first_of(item: Item, message: AIMessage) -> bool:
    """Whether ``item`` is the first item ``message`` became (see ``convert._ai_items``)."""
    if isinstance(item, Message):
        return True
    has_text_item = not message.tool_calls or convert.has_content(message.content)
    extra = getattr(item, "extra", None) or {}
    return not has_text_item and extra.get(convert.CALL_INDEX_KEY) == 0


Keep = tuple[str, int]
"""``("messages", N)`` or ``("tokens", N)``, as LangChain's ``keep=``."""


def check_keep(keep: object) -> tuple[str, int]:
    """``keep`` validated (a ``ConfigError`` naming the fix otherwise)."""
    if (
        not isinstance(keep, tuple)
        or len(keep) != 2
        or keep[0] not in ("messages", "tokens")
        or isinstance(keep[1], bool)
        or not isinstance(keep[1], int)
        or keep[1] < 1
    ):
        raise ConfigError(
            f"keep must be ('messages', N) or ('tokens', N) with N >= 1, got {keep!r} "
            "(a fraction of the window is compactkit's target=, from the model's profile)"
        )
    return keep[0], keep[1]


class KeepMessages:
    """A compressor that keeps the newest ``messages`` LangChain messages verbatim.

    Per compaction it counts, from the newest group back, how many groups hold those messages
    and runs ``inner`` (a ``SummaryCompressor`` or ``DigestCompressor``) with that many as its
    ``keep_last_groups``; the latest user input, always kept, is one of them.
    """

    def __init__(self, inner: MemoryCompressor, messages: int) -> None:
        if not hasattr(inner, "keep_last_groups"):
            raise ConfigError(
                f"keep=('messages', N) needs a compressor with keep_last_groups (a "
                f"SummaryCompressor or DigestCompressor), got {type(inner).__name__}"
            )
        self.inner = inner
        self.messages = messages
        self.name = getattr(inner, "name", "summary")

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """``inner.compress`` keeping the newest messages."""
        return self._sized(snapshot).compress(snapshot)

    async def acompress(self, snapshot: MemorySnapshot) -> CompactResult:
        """``inner.acompress`` keeping the newest messages."""
        sized = self._sized(snapshot)
        acompress = getattr(sized, "acompress", None)
        if callable(acompress):
            result: CompactResult = await acompress(snapshot)
            return result
        return sized.compress(snapshot)

    def _sized(self, snapshot: MemorySnapshot) -> MemoryCompressor:
        items = snapshot.items
        groups = group_items(items)
        seen: set[int] = set()
        kept = 0
        for group in reversed(groups):
            if len(seen) >= self.messages:
                break
            for item in group.slice(items):
                source = (getattr(item, "extra", None) or {}).get(convert.SOURCE_KEY)
                seen.add(id(source) if source is not None else id(item))
            kept += 1
        last_user = next(
            (g for g in reversed(groups) if g.kind == "user"), None
        )  # always kept by the compressor, so not counted in keep_last_groups
        if last_user is not None and groups.index(last_user) >= len(groups) - kept:
            kept -= 1
        sized: Any = copy.copy(self.inner)  # shares the summarizer and its circuit breaker
        sized.keep_last_groups = max(0, kept)
        if hasattr(sized, "keep_tokens"):
            sized.keep_tokens = None
        return cast(MemoryCompressor, sized)


@dataclass(frozen=True)
class ClearToolOutputs:
    """Replace older tool results with a placeholder in what the model sees, once the prompt
    is over ``trigger`` tokens (``ContextEditingMiddleware``'s ``ClearToolUsesEdit`` shape).

    The state keeps every result; the newest ``keep`` results, the results of the newest tool
    round (compactkit never hides what the model is about to read) and those of the tools named
    in ``exclude_tools`` are never cleared.
    """

    trigger: int = 100_000
    """Prompt tokens (as the middleware counts them) above which results are cleared."""
    keep: int = 3
    """How many of the newest tool results stay."""
    placeholder: str = "[cleared]"
    """What a cleared result's content becomes."""
    exclude_tools: tuple[str, ...] = ()
    """Tools whose results are never cleared."""

    def __post_init__(self) -> None:
        for label, value in (("trigger", self.trigger), ("keep", self.keep)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"ClearToolOutputs.{label} must be an int >= 0, got {value!r}")
        if isinstance(self.exclude_tools, str):
            raise ConfigError(
                f"exclude_tools must be a sequence of tool names, got the string "
                f"{self.exclude_tools!r}; write ({self.exclude_tools!r},)"
            )
        object.__setattr__(self, "exclude_tools", tuple(self.exclude_tools))

    def apply(self, messages: list[BaseMessage], tokens: int) -> list[BaseMessage]:
        """``messages`` with the older results cleared when ``tokens`` is over the trigger."""
        if tokens <= self.trigger:
            return messages
        names: dict[str, str] = {}
        last_ai = -1
        for index, message in enumerate(messages):
            if isinstance(message, AIMessage):
                last_ai = index
                for call in message.tool_calls:
                    if call.get("id"):
                        names[str(call["id"])] = call["name"]
        results = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
        # The newest `keep` results stay, and so does every result of the newest round.
        clearable = [i for i in results[: max(0, len(results) - self.keep)] if i < last_ai]
        out = list(messages)
        for index in clearable:
            message = out[index]
            assert isinstance(message, ToolMessage)
            if names.get(message.tool_call_id) in self.exclude_tools:
                continue
            if message.content == self.placeholder:
                continue
            out[index] = message.model_copy(update={"content": self.placeholder})
        return out
