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
  (instructions, tool schemas) is not credited, so the change is an upper bound.
- ``until_next_compaction``: the same change summed over every request from this compaction to
  the next one (``until_next_change``), when the governor knows how fast the request grows and
  where the next compaction fires (a ``Horizon``). With the compaction, the first request pays
  its whole prompt and each later one reads the previous one from the cache; without it, every
  request is the bigger one (up to the budget, where the projection would cut), its prefix
  cached. Over a horizon the cache saving of a smaller prompt is counted, not only the first
  request's cache miss, so a compaction that costs more on the next request can still pay for
  itself.

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
    "Horizon",
    "compaction_cost",
    "known_prices",
    "next_request_change",
    "request_cost",
    "summarizer_cost",
    "until_next_change",
]

MAX_HORIZON = 10_000
"""The most requests a horizon counts (a request that barely grows would make it endless)."""


@dataclass(frozen=True)
class CompactionCost:
    """What one compaction costs, in US dollars."""

    summarizer: float | None
    """The summarizer calls (``0.0`` when none were made; ``None``: the summarizer model has no
    known prices)."""
    next_request_change: float | None
    """The next request's cost after the compaction minus without it, prompt cache counted
    (negative: the compaction saves on it). ``None``: the agent's model has no known prices."""

    until_next_compaction: float | None = None
    """The change summed over the requests until the next compaction (``requests_until_next``
    of them), prompt cache counted; ``None`` when the horizon is unknown (no growth measured
    yet, no token trigger, a background compaction) or the model has no known prices."""
    requests_until_next: int | None = None
    """How many requests that horizon counts (modelled: the growth per request so far, up to
    the trigger's lowest token threshold)."""

    @property
    def net(self) -> float | None:
        """``summarizer + next_request_change``, or ``None`` when either is unknown."""
        if self.summarizer is None or self.next_request_change is None:
            return None
        return self.summarizer + self.next_request_change

    @property
    def net_until_next(self) -> float | None:
        """``summarizer + until_next_compaction``: what the compaction costs (positive) or saves
        (negative) by the time the next one comes; ``None`` when either is unknown."""
        if self.summarizer is None or self.until_next_compaction is None:
            return None
        return self.summarizer + self.until_next_compaction


@dataclass(frozen=True)
class Horizon:
    """What the requests after a compaction look like, in request tokens (instructions and tool
    schemas included): each grows by ``growth`` over the previous one, the next compaction fires
    at ``next_at``, and a request never exceeds ``budget``. ``overhead`` is what a request
    carries beyond the memory a compressor counts (its ``tokens_before``/``tokens_after``)."""

    growth: float
    next_at: int
    budget: int | None = None
    overhead: int = 0


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
    write_price, cached_price = _token_prices(prices, caching)
    return ((tokens - cached_tokens) * write_price + cached_tokens * cached_price) / 1_000_000


def _token_prices(prices: Prices, caching: PromptCaching | None) -> tuple[float, float]:
    """``request_cost``'s prices per million tokens: an uncached token's, a cached one's."""
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
    return write_price, cached_price


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


def until_next_change(
    prices: Prices,
    caching: PromptCaching | None,
    *,
    tokens_before: int,
    tokens_after: int,
    horizon: Horizon,
    cache_warm: bool = True,
) -> tuple[float, int]:
    """The input cost of the requests from a compaction until the next one, minus the same
    requests had nothing been compacted, and how many requests that is.

    Request ``k`` (from 0) is ``tokens_after + k * growth`` tokens with the compaction (the
    first one uncached, each later one reading the previous one from the cache) and
    ``tokens_before + k * growth`` without (capped at the budget; its prefix cached, the first
    one only when ``cache_warm``). The horizon ends at the first request at or over
    ``next_at`` (at least one request, at most ``MAX_HORIZON``).
    """
    growth = horizon.growth
    ceiling = horizon.budget or 2**62
    before, after = tokens_before + horizon.overhead, tokens_after + horizon.overhead
    room = horizon.next_at - after
    count = 1 if room <= 0 else min(MAX_HORIZON, max(1, -(-room // growth)))
    requests = int(count)

    # ``request_cost`` of each request, its prices read once (up to MAX_HORIZON requests a
    # compaction): the same arithmetic, so the same floats. A request's cached prefix is the
    # one before it (``after + (k - 1) * growth``, the very float the step before computed, so
    # its cached tokens are taken from there: one cache look-up per request and side).
    write, read = _token_prices(prices, caching)
    cached_tokens = caching.cached_tokens if caching is not None else None
    change = 0.0
    cached_with = cached_without = 0  # of the previous request's sizes
    for k in range(requests):
        size_with = int(after + k * growth)
        size_without = min(ceiling, int(before + k * growth))
        hit_with = min(size_with, cached_with) if k else 0
        if k:
            hit_without = min(size_without, cached_without)
        elif cache_warm:
            hit_without = min(size_without, cached_tokens(int(before)) if cached_tokens else 0)
        else:
            hit_without = 0
        if not 0 <= hit_with <= size_with:  # (as request_cost refuses it)
            raise ConfigError(f"cached_tokens must be in [0, {size_with}], got {hit_with!r}")
        if not 0 <= hit_without <= size_without:
            raise ConfigError(f"cached_tokens must be in [0, {size_without}], got {hit_without!r}")
        change += ((size_with - hit_with) * write + hit_with * read) / 1_000_000
        change -= ((size_without - hit_without) * write + hit_without * read) / 1_000_000
        if cached_tokens is not None and k + 1 < requests:  # (the next request's prefix)
            cached_with, cached_without = cached_tokens(size_with), cached_tokens(size_without)
    return change, requests


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
    horizon: Horizon | None = None,
) -> CompactionCost:
    """The ``CompactionCost`` of ``result`` for a session on ``model``.

    Args:
        result: What the compressor returned.
        model: The agent's model (its prices price the next request).
        cache_warm: Whether the provider's cache still holds the previous prompt.
        registry: Where to look ``model`` up (default: the process-wide registry).
        horizon: How the requests until the next compaction grow (``None``: that change is
            not modelled).
    """
    summarizer = summarizer_cost(result)
    profile = known_prices(model, registry)
    stats = result.stats
    change: float | None = None
    until: tuple[float | None, int | None] = (None, None)
    before, after = stats.tokens_before, stats.tokens_after
    if not result.changed:
        change, until = 0.0, (0.0, None)
    elif profile is not None and before is not None and after is not None:
        assert profile.prices is not None
        prices, caching = profile.prices, profile.prompt_cache
        change = next_request_change(
            prices, caching, tokens_before=before, tokens_after=after, cache_warm=cache_warm
        )
        if horizon is not None and horizon.growth > 0:
            until = until_next_change(
                prices,
                caching,
                tokens_before=before,
                tokens_after=after,
                horizon=horizon,
                cache_warm=cache_warm,
            )
    return CompactionCost(
        summarizer=summarizer,
        next_request_change=change,
        until_next_compaction=until[0],
        requests_until_next=until[1],
    )


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
