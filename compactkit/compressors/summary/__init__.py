"""The LLM summary compressor: its prompt, its model client and its resilience.

``compressor`` folds old groups into the running summary through any ``LLM``; ``llm`` holds
that protocol and the client on the official ``openai`` SDK; ``_resilience`` the retry policy
and circuit breaker the compressor runs every call through.
"""

from compactkit.compressors.summary._chunks import SummaryPlan
from compactkit.compressors.summary._resilience import CircuitBreaker, RetryPolicy
from compactkit.compressors.summary.compressor import (
    PROMPT_VERSION,
    SummaryCompressor,
    summary_prompt,
)
from compactkit.compressors.summary.llm import LLM, ChatMessage, OpenAIChatLLM

__all__ = [
    "LLM",
    "PROMPT_VERSION",
    "ChatMessage",
    "CircuitBreaker",
    "OpenAIChatLLM",
    "RetryPolicy",
    "SummaryCompressor",
    "SummaryPlan",
    "summary_prompt",
]
