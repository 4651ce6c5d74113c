"""What the summarizer's calls cost: its model's prices, and the tokens of answered requests.

The provider bills a request that was answered; a failed attempt (a 5xx, a timeout before any
answer) is counted in ``summarizer_input_tokens`` but not in the cost. Output tokens are the
answers counted with the compressor's counter (the summarizer's own tokenizer may differ a
little; its ``usage`` does not reach the ``LLM`` protocol, which returns text only).
"""

from __future__ import annotations

from compactkit.budget.profile import Prices
from compactkit.budget.profiles import default_registry
from compactkit.budget.tokens import TokenCounter
from compactkit.compressors.summary._chunks import _Fold
from compactkit.errors import ConfigError


def prices_of(llm: object) -> Prices | None:
    """The prices of the summarizer's model (``llm.model``) from the process-wide registry, or
    ``None``: no model name, an unknown model, or one without prices (never a guess; a model
    only the registry's catch-all default profile matches has none)."""
    model = getattr(llm, "model", None)
    if not isinstance(model, str) or not model.strip():
        return None
    registry = default_registry()
    try:
        profile = registry.get(model)
    except ConfigError:
        return None
    return None if profile is registry.default else profile.prices


def cost(prices: Prices | None, *, input: int, output: int) -> float | None:
    """Dollars for ``input`` uncached input and ``output`` output tokens, or ``None`` without
    prices."""
    return None if prices is None else prices.cost(input=input, output=output)


def answered(fold: _Fold, input_tokens: int, answer: str, counter: TokenCounter) -> None:
    """Record an answered request: its input, and its answer's tokens."""
    fold.answered_input_tokens += input_tokens
    fold.output_tokens += counter.count_text(answer)
