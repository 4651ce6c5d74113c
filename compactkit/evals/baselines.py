"""The compressors an eval compares, by name, and an adapter for your own.

``BASELINES`` are built per case, sized from the case's ``target_tokens`` and counted with the
case model's counter: ``none`` (nothing changes), ``window`` (keep the newest that fits),
``mask`` (old tool outputs become placeholders), ``digest`` (exact-fact digest, no LLM),
``summary`` (LLM summary; needs a summarizer), ``ladder`` (mask → digest → [summary] → window),
and ``provider`` (``ProviderCompactor``: the provider compacts; ``compactkit eval run
--compressor provider`` without ``--base-url`` answers it offline with
``compactkit.testing.FakeCompactEndpoint``, whose compaction is opaque like the real one, so
only what stays readable — the retained user messages and the newest group — scores).

``as_compressor`` wraps anything else: a ``MemoryCompressor``, or a plain function from Chat
Completions messages to messages — LangChain's ``trim_messages`` (its ``BaseMessage`` results are
converted back), a home-grown trimmer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compactkit.budget import TokenCounter
from compactkit.compressors import (
    LLM,
    DigestCompressor,
    FunctionCompressor,
    LadderCompressor,
    MaskingCompressor,
    MemoryCompressor,
    ProviderCompactor,
    SummaryCompressor,
    WindowedCompressor,
)
from compactkit.errors import ConfigError
from compactkit.evals._meter import MeteredLLM
from compactkit.items import CompactResult, CompactStats, MemorySnapshot, Tool

__all__ = ["BASELINES", "CompressorFactory", "Sizing", "as_compressor", "baseline"]


@dataclass(frozen=True)
class Sizing:
    """What a compressor is sized from, per case."""

    target_tokens: int
    """The whole-request size to reach."""
    counter: TokenCounter
    """The case model's counter."""
    tools: tuple[Tool, ...]
    """The transcript's tools (they count toward the target)."""


CompressorFactory = Callable[[Sizing], MemoryCompressor]
"""Builds a compressor for one case."""


class _NoCompression:
    name = "none"

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        return CompactResult(
            snapshot=snapshot,
            outcome="unchanged",
            stats=CompactStats(
                compressor="none", items_before=len(snapshot.items), items_after=len(snapshot.items)
            ),
        )


BASELINES: tuple[str, ...] = ("none", "window", "mask", "digest", "summary", "ladder", "provider")
"""The named baseline compressors."""


def baseline(
    name: str,
    *,
    llm: LLM | None = None,
    client: Any = None,
    provider_model: str = "gpt-5.1-codex",
) -> CompressorFactory:
    """The factory of the baseline ``name`` (``summary`` and, optionally, ``ladder`` use ``llm``;
    ``provider`` uses ``client`` — an ``openai.OpenAI`` or ``anthropic.Anthropic`` client, or
    ``compactkit.testing.FakeCompactEndpoint().client()`` offline — and ``provider_model``).

    Raises:
        ConfigError: an unknown name, or ``summary`` without a summarizer.
    """
    if name == "none":
        return lambda _s: _NoCompression()
    if name == "window":
        return lambda s: WindowedCompressor(
            max_tokens=s.target_tokens, counter=s.counter, tools=s.tools
        )
    if name == "mask":
        return lambda s: MaskingCompressor(
            target_tokens=s.target_tokens, counter=s.counter, tools=s.tools
        )
    if name == "digest":
        return lambda s: DigestCompressor(
            target_tokens=s.target_tokens, counter=s.counter, tools=s.tools
        )
    if name == "summary":
        if llm is None:
            raise ConfigError(
                "the 'summary' compressor needs a summarizer: give --summarizer-model and "
                "--base-url (API key from OPENAI_API_KEY), or llm= in Python"
            )
        summarizer = MeteredLLM(llm)
        return lambda s: SummaryCompressor(
            summarizer, target_tokens=s.target_tokens, counter=s.counter, tools=s.tools
        )
    if name == "provider":
        if client is None:
            raise ConfigError(
                "the 'provider' compressor needs the provider's client: client=openai.OpenAI() "
                "(or anthropic.Anthropic()); offline, compactkit.testing.FakeCompactEndpoint()"
                ".client()"
            )
        return lambda s: ProviderCompactor(client, model=provider_model, counter=s.counter)
    if name == "ladder":

        def ladder(s: Sizing) -> MemoryCompressor:
            summary = (
                SummaryCompressor(
                    MeteredLLM(llm), target_tokens=s.target_tokens, counter=s.counter, tools=s.tools
                )
                if llm is not None
                else None
            )
            return LadderCompressor(
                target_tokens=s.target_tokens, summary=summary, counter=s.counter, tools=s.tools
            )

        return ladder
    raise ConfigError(
        f"unknown compressor {name!r}; expected one of {', '.join(BASELINES)} (or pass your own "
        "with as_compressor)"
    )


def as_compressor(obj: Any, name: str | None = None) -> CompressorFactory:
    """A factory for your own compressor, to score it next to the baselines.

    Args:
        obj: A ``MemoryCompressor`` (used as is for every case), or a plain function, made a
            ``FunctionCompressor``: Chat Completions message dicts to the messages to keep
            (dicts or LangChain messages), or ``MemorySnapshot -> MemorySnapshot``.
            To size your compressor per case, pass a factory ``Sizing -> MemoryCompressor``
            to the runner directly instead.
        name: The label in reports (default: the object's ``name`` or function name).

    Raises:
        ConfigError: ``obj`` is none of these.
    """
    if isinstance(obj, MemoryCompressor):
        return lambda _s: obj
    if not callable(obj):
        raise ConfigError(
            f"as_compressor takes a MemoryCompressor or a callable, got {type(obj).__name__}"
        )
    function = FunctionCompressor(obj, name=name)
    return lambda _s: function
