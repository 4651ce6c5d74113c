"""``until_next_change`` reads its prices once for the whole horizon: the same floats, bit for
bit, as summing ``request_cost`` of every request (its earlier form, kept here as the
reference), for OpenAI-style and breakpoint-style caching, with and without cached prices, and
for a caching class whose ``cached_tokens`` is its own."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.profile import Prices, PromptCaching
from compactkit.governance.cost import Horizon, request_cost, until_next_change


def _reference(
    prices: Prices,
    caching: PromptCaching | None,
    *,
    tokens_before: int,
    tokens_after: int,
    horizon: Horizon,
    cache_warm: bool,
) -> tuple[float, int]:
    from compactkit.governance.cost import MAX_HORIZON

    growth = horizon.growth
    ceiling = horizon.budget or 2**62
    before, after = tokens_before + horizon.overhead, tokens_after + horizon.overhead
    room = horizon.next_at - after
    requests = int(1 if room <= 0 else min(MAX_HORIZON, max(1, -(-room // growth))))

    def cached(previous: float) -> int:
        return caching.cached_tokens(int(previous)) if caching is not None else 0

    change = 0.0
    for k in range(requests):
        size_with = int(after + k * growth)
        size_without = min(ceiling, int(before + k * growth))
        hit_with = 0 if k == 0 else min(size_with, cached(after + (k - 1) * growth))
        previous_without = min(ceiling, before + (k - 1) * growth) if k else before
        hit_without = min(size_without, cached(previous_without)) if (k or cache_warm) else 0
        change += request_cost(prices, caching, tokens=size_with, cached_tokens=hit_with)
        change -= request_cost(prices, caching, tokens=size_without, cached_tokens=hit_without)
    return change, requests


PRICES = st.builds(
    Prices,
    input=st.floats(0.01, 20),
    output=st.floats(0.01, 80),
    cached_input=st.none() | st.floats(0.001, 10),
    cache_write=st.none() | st.floats(0.01, 30),
    source=st.just("test"),
)


class _CoarseCaching(PromptCaching):
    """A provider's caching with rules of its own (``until_next_change`` calls its method)."""

    def cached_tokens(self, prefix_tokens: int) -> int:
        return super().cached_tokens(prefix_tokens) // 1000 * 1000


CACHING = st.none() | st.sampled_from([PromptCaching, PromptCaching, _CoarseCaching]).flatmap(
    lambda kind: st.builds(
        kind,
        mode=st.sampled_from(["automatic", "breakpoints"]),
        min_prefix_tokens=st.integers(0, 4096),
        granularity_tokens=st.integers(1, 256),
        cached_input_ratio=st.floats(0.05, 1),
        cache_write_ratio=st.floats(1, 2),
        source=st.just("test"),
    )
)
HORIZONS = st.builds(
    Horizon,
    growth=st.floats(0.5, 5000) | st.integers(1, 5000).map(float),
    next_at=st.integers(0, 400_000),
    budget=st.none() | st.integers(1000, 400_000),
    overhead=st.integers(0, 5000),
)


@settings(deadline=None, max_examples=300)
@given(
    PRICES,
    CACHING,
    st.integers(0, 300_000),
    st.integers(0, 300_000),
    HORIZONS,
    st.booleans(),
)
def test_the_same_floats_as_request_cost_per_request(
    prices: Prices,
    caching: PromptCaching | None,
    before: int,
    after: int,
    horizon: Horizon,
    warm: bool,
) -> None:
    options = {
        "tokens_before": before,
        "tokens_after": after,
        "horizon": horizon,
        "cache_warm": warm,
    }
    assert until_next_change(prices, caching, **options) == _reference(prices, caching, **options)


def test_requests_that_cross_the_cached_minimum_one_token_at_a_time() -> None:
    prices = Prices(input=2.5, output=10, cached_input=1.25, source="test")
    caching = PromptCaching(
        mode="automatic",
        min_prefix_tokens=1024,
        granularity_tokens=128,
        cached_input_ratio=0.5,
        source="test",
    )
    horizon = Horizon(growth=1.0, next_at=1300, budget=1200, overhead=4)
    for warm in (True, False):
        options = {
            "tokens_before": 1000,
            "tokens_after": 1010,
            "horizon": horizon,
            "cache_warm": warm,
        }
        assert until_next_change(prices, caching, **options) == _reference(
            prices, caching, **options
        )
