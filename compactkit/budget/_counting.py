"""The counter interface and its per-item cache.

``TokenCounter`` is what every counter offers; ``_BaseCounter`` holds what the shipped counters
share: the per-item count cache and the request total (``count``). A subclass prices one item
(``_price``) and says why a count is approximate. The counters themselves are in ``tokens``
(``TiktokenCounter``) and ``_estimate`` (``EstimateCounter``).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Protocol, runtime_checkable

from compactkit.budget._inputs import ITEM_TYPES, check_item
from compactkit.errors import ConfigError
from compactkit.items import Item, Tool


@dataclass(frozen=True)
class TokenCount:
    """A request's token count and how far to trust it."""

    tokens: int
    """Prompt tokens of the whole request (messages, tools, reply priming)."""
    exact: bool
    """True only where the counting rules are verified against the API for every part."""
    encoding: str | None
    """The tokenizer used, or ``None`` for a character-based estimate."""
    model: str | None
    """The model counted for, when known."""
    notes: tuple[str, ...] = ()
    """Which parts were approximated, and why."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts what a request costs. Counts are additive over items:

    ``count(items, tools).tokens == sum(count_item(i) for i in items) + count_overhead(tools)``.
    """

    @property
    def encoding_name(self) -> str | None:
        """The tokenizer's name, or ``None`` for an estimate."""
        ...

    def count_text(self, text: str) -> int:
        """Tokens of plain text."""
        ...

    def count_item(self, item: Item) -> int:
        """Tokens one item adds to a request, its per-message overhead included."""
        ...

    def count_overhead(self, tools: Sequence[Tool] = ()) -> int:
        """Tokens a request costs beyond its items: reply priming and tool schemas."""
        ...

    def count(
        self, items: Iterable[Item], *, tools: Sequence[Tool] = (), format: str = "chat"
    ) -> TokenCount:
        """The whole request, as sent in ``format`` (``chat``, ``responses``, ``anthropic``)."""
        ...


class _BaseCounter(ABC):
    """Shared per-item caching and the request total; subclasses price one item.

    The cache is ``_tokens``, the counts by ``id(item)``, and ``_held``, a list keeping every
    counted item alive in the same order, so an id found in ``_tokens`` is that item's (no other
    live object can have it). No object is made per item (a tuple per entry was one more object
    for the garbage collector to walk, per item of every history, on every full collection), and
    the list costs one pointer per item where a second dict by id cost ~75 bytes (issue 35's
    memory target: a session holds one entry per item). The two stay aligned because entries
    are only appended (once per id, under the lock) and evicted as a prefix of both. Writes take
    a lock; reads do not: an eviction drops the counts before the items, so a count found is
    always of a held item.
    """

    model: str | None
    _cache_limit = 500_000

    def __init__(self) -> None:
        self._held: list[Item] = []  # _tokens' items, in its order
        self._tokens: dict[int, int] = {}
        self._write = threading.Lock()

    def count_item(self, item: Item) -> int:
        """Tokens one item adds to a request (cached per item object; items are immutable)."""
        tokens = self._tokens.get(id(item))  # the hit inlined: it runs for every item, every turn
        if tokens is not None:
            return tokens
        try:
            tokens = self._price(item)  # (no _approximation: only ``count`` reports it)
        except (AttributeError, TypeError):
            check_item(item)  # a dict, a string, an SDK object: say how to convert it
            raise
        return self._store(item, tokens)

    def count_items(self, items: Iterable[Item]) -> int:
        """``sum(count_item(item) for item in items)``; a loop in C when every item is cached."""
        if iter(items) is items:  # an iterator: read once (the C loop would consume it)
            items = list(items)
        fresh = isinstance(items, (tuple, list)) and items and id(items[-1]) not in self._tokens
        if fresh:
            # New items (a grown history's tail, counted first by the policy's tally): item by
            # item at once, not after the C loop's KeyError (which costs more than the loop).
            return sum(map(self.count_item, items))
        try:
            return sum(map(self._tokens.__getitem__, map(id, items)))
        except KeyError:
            return sum(map(self.count_item, items))

    def item_counts(self, items: Iterable[Item]) -> list[int]:
        """``[count_item(item) for item in items]``; a loop in C when every item is cached."""
        if iter(items) is items:  # an iterator: read once (the C loop would consume it)
            items = list(items)
        try:
            return list(map(self._tokens.__getitem__, map(id, items)))
        except KeyError:
            return list(map(self.count_item, items))

    def _priced(self, item: Item) -> tuple[int, str | None]:
        tokens = self._tokens.get(id(item))
        if tokens is not None:
            return tokens, self._approximation(item)  # (a few type checks: not cached)
        try:
            tokens, reason = self._price(item), self._approximation(item)
        except (AttributeError, TypeError):
            check_item(item)  # a dict, a string, an SDK object: say how to convert it
            raise
        return self._store(item, tokens), reason

    def _store(self, item: Item, tokens: int) -> int:
        """Remember ``tokens`` as ``item``'s count; returns it."""
        with self._write:
            if id(item) in self._tokens:  # another thread priced it meanwhile: held once
                return tokens
            if len(self._tokens) >= self._cache_limit:
                # The oldest eighth at once: deleting one key per insert would rescan the holes
                # earlier deletions left at the front of the dict, on every insert. The counts
                # go first, then the items they were of.
                dropped = self._cache_limit // 8
                self._tokens = dict(islice(self._tokens.items(), dropped, None))
                self._held = self._held[dropped:]
            self._held.append(item)
            self._tokens[id(item)] = tokens
        return tokens

    def count(
        self, items: Iterable[Item], *, tools: Sequence[Tool] = (), format: str = "chat"
    ) -> TokenCount:
        """The whole request: every item, the tool schemas and the reply priming.

        Only Chat Completions billing rules are published; a request in another ``format`` is
        counted with them and labelled approximate.
        """
        if isinstance(items, (str, bytes, Mapping, *ITEM_TYPES)):
            raise ConfigError(
                f"count takes a list of items, got one {type(items).__name__}; wrap it in a "
                "list (count_text counts a plain string)"
            )
        total = 0
        approximated: set[str] = set()
        priced = self._priced
        for item in items:
            tokens, reason = priced(item)
            total += tokens
            if reason is not None:
                approximated.add(reason)
        total += self.count_overhead(tools)
        approximated.update(self._tools_approximation(tools))
        if format != "chat":
            approximated.add(f"{format} requests are counted with Chat Completions rules")
        return TokenCount(
            tokens=total,
            exact=not approximated,
            encoding=self.encoding_name,
            model=self.model,
            notes=tuple(sorted(approximated)),
        )

    @property
    @abstractmethod
    def encoding_name(self) -> str | None:
        """The tokenizer's name, or ``None`` for an estimate."""

    @abstractmethod
    def count_overhead(self, tools: Sequence[Tool] = ()) -> int:
        """Tokens a request costs beyond its items: reply priming and tool schemas."""

    @abstractmethod
    def _price(self, item: Item) -> int:
        """Tokens of one item (uncached)."""

    @abstractmethod
    def _approximation(self, item: Item) -> str | None:
        """Why this item's count is approximate, or ``None`` when it is exact."""

    @abstractmethod
    def _tools_approximation(self, tools: Sequence[Tool]) -> list[str]:
        """Why the tool schemas' count is approximate (empty when exact)."""
