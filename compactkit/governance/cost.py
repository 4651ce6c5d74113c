"""What a compaction costs, in dollars, from the models' ``Prices``.

Two numbers make a compaction's net cost:

- ``summarizer``: what its summarizer calls cost (``summarizer_cost`` reads it from the
  result's details, where ``SummaryCompressor`` records input and output tokens of every
  answered request times the summarizer model's prices). A compaction without summarizer calls
  (window, mask, digest) costs ``0.0``.
- ``next_request_change``: the next request's cost after the compaction minus its cost had
  nothing been compacted, the prompt cache taken into account (``next_request_change``).
  Without compaction a warm cache serves the previous prompt's prefix at the cached price; a
  compaction rewrites the prompt after the instructions, so that part is paid in full (and
  written to the cache where the provider charges for writing). The prefix that stays the same
  (instructions, tool schemas) is not credited, so the change is an upper bound; only the next
  request is counted, because later ones depend on when the next compaction comes.

Either is ``None`` when the model it needs has no known prices: compactkit never guesses one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from compactkit.budget.profile import ModelProfile, Prices, PromptCaching
from compactkit.budget.profiles import ProfileRegistry, default_registry
from compactkit.errors import ConfigError
from compactkit.items.snapshot import CompactResult

__all__ = [
    "CompactionCost",
    "compaction_cost",
    "known_prices",
    "next_request_change",
    "request_cost",
    "summarizer_cost",
]


@dataclass(frozen=True)
class CompactionCost:
    """What one compaction costs, in US dollars."""

    summarizer: float | None
    """The summarizer calls (``0.0`` when none were made; ``None``: the summarizer model has no
    known prices)."""
    next_request_change: float | None
    """The next request's cost after the compaction minus without it, prompt cache counted
    (negative: the compaction saves on it). ``None``: the agent's model has no known prices."""

    @property
    def net(self) -> float | None:
        """``summarizer + next_request_change``, or ``None`` when either is unknown."""
        if self.summarizer is None or self.next_request_change is None:
            return None
        return self.summarizer + self.next_request_change


def known_prices(model: str | None, registry: ProfileRegistry | None = None) -> ModelProfile | None:
    """The profile of ``model`` when it names prices, else ``None`` (an unknown model, or one
    only the registry's catch-all default profile matches, has none)."""
    if not model:
        return None
    registry = registry or default_registry()
    try:
        profile = registry.get(model)
    except ConfigError:
        return None
    if profile is registry.default or profile.prices is None:
        return None
    return profile


def request_cost(
    prices: Prices, caching: PromptCaching | None, *, tokens: int, cached_tokens: int = 0
) -> float:
    """The input cost of one request of ``tokens`` prompt tokens, ``cached_tokens`` of them read
    from the provider's cache. Uncached tokens cost ``cache_write`` (or the input price times
    ``caching.cache_write_ratio``) where the provider charges for writing the cache."""
    if not 0 <= cached_tokens <= tokens:
        raise ConfigError(f"cached_tokens must be in [0, {tokens}], got {cached_tokens!r}")
    cached_price = prices.cached_input
    if cached_price is None:
        cached_price = prices.input * (caching.cached_input_ratio if caching else 1.0)
    write_price = prices.input
    if caching is not None and caching.mode == "breakpoints":
        write_price = (
            prices.cache_write
            if prices.cache_write is not None
            else prices.input * caching.cache_write_ratio
        )
    return ((tokens - cached_tokens) * write_price + cached_tokens * cached_price) / 1_000_000


def next_request_change(
    prices: Prices,
    caching: PromptCaching | None,
    *,
    tokens_before: int,
    tokens_after: int,
    cache_warm: bool = True,
) -> float:
    """The next request's input cost after a compaction (``tokens_after``, nothing of it cached)
    minus its cost without one (``tokens_before``, its prefix cached when ``cache_warm`` and the
    provider caches)."""
    cached = caching.cached_tokens(tokens_before) if caching is not None and cache_warm else 0
    without = request_cost(prices, caching, tokens=tokens_before, cached_tokens=cached)
    return request_cost(prices, caching, tokens=tokens_after) - without


def summarizer_cost(result: CompactResult) -> float | None:
    """What a compaction's summarizer calls cost: ``0.0`` without any (a deterministic
    compressor), ``None`` when a summarizer was called whose prices are not known."""
    total = 0.0
    for details in _summaries(result.stats.details):
        if not details.get("summarizer_calls"):
            continue
        cost = details.get("summarizer_cost")
        if cost is None:
            return None
        total += float(cost)
    return total


def compaction_cost(
    result: CompactResult,
    *,
    model: str | None,
    cache_warm: bool = True,
    registry: ProfileRegistry | None = None,
) -> CompactionCost:
    """The ``CompactionCost`` of ``result`` for a session on ``model``.

    Args:
        result: What the compressor returned.
        model: The agent's model (its prices price the next request).
        cache_warm: Whether the provider's cache still holds the previous prompt.
        registry: Where to look ``model`` up (default: the process-wide registry).
    """
    summarizer = summarizer_cost(result)
    profile = known_prices(model, registry)
    stats = result.stats
    change: float | None = None
    if not result.changed:
        change = 0.0
    elif profile is not None and stats.tokens_before is not None and stats.tokens_after is not None:
        assert profile.prices is not None
        change = next_request_change(
            profile.prices,
            profile.prompt_cache,
            tokens_before=stats.tokens_before,
            tokens_after=stats.tokens_after,
            cache_warm=cache_warm,
        )
    return CompactionCost(summarizer=summarizer, next_request_change=change)


def _summaries(details: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every summary compressor's details in a result's details: its own, a ladder's steps, a
    fallback's ``summary`` entry."""
    if "summarizer_calls" in details:
        yield details
    for value in details.values():
        if isinstance(value, Mapping):
            yield from _summaries(value)
        elif isinstance(value, list):
            for entry in value:
                if isinstance(entry, Mapping):
                    yield from _summaries(entry)
