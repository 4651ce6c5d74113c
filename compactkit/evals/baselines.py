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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from compactkit import (
    LLM,
    CompactResult,
    CompactStats,
    ConfigError,
    DigestCompressor,
    Item,
    LadderCompressor,
    MaskingCompressor,
    MemoryCompressor,
    MemorySnapshot,
    ProviderCompactor,
    SummaryCompressor,
    TokenCounter,
    Tool,
    WindowedCompressor,
    chat_to_items,
    items_to_chat,
)
from compactkit.evals._meter import MeteredLLM

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


class _FunctionCompressor:
    """A ``messages -> messages`` function as a compressor."""

    def __init__(self, function: Callable[[list[dict[str, Any]]], Any], name: str) -> None:
        self.function = function
        self.name = name

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        rendered = snapshot.render_items()
        messages = [dict(m) for m in items_to_chat(rendered, lossy=True)]
        try:
            answer = self.function(messages)
            items = _items(answer)
        except Exception as exc:  # a user's function failing is a failed run, not a crash
            return CompactResult(
                snapshot=snapshot,
                outcome="failed",
                error=f"{type(exc).__name__}: {exc}",
                cause=exc,
                stats=CompactStats(compressor=self.name, items_before=len(snapshot.items)),
            )
        after = MemorySnapshot.from_items(items)
        return CompactResult(
            snapshot=after,
            outcome="compacted" if len(items) != len(rendered) else "unchanged",
            stats=CompactStats(
                compressor=self.name,
                items_before=len(snapshot.items),
                items_after=len(after.items),
            ),
        )


def _items(answer: Any) -> list[Item]:
    if not isinstance(answer, Sequence) or isinstance(answer, (str, bytes)):
        raise ConfigError(
            f"the function must return a list of messages, got {type(answer).__name__}"
        )
    if answer and not isinstance(answer[0], dict):
        try:  # LangChain messages (trim_messages, filter_messages, …)
            from langchain_core.messages import convert_to_openai_messages
        except ImportError:
            raise ConfigError(
                "the function returned non-dict messages; return Chat Completions dicts "
                f"(got {type(answer[0]).__name__})"
            ) from None
        answer = convert_to_openai_messages(list(answer))
    return chat_to_items(answer)


def as_compressor(obj: Any, name: str | None = None) -> CompressorFactory:
    """A factory for your own compressor, to score it next to the baselines.

    Args:
        obj: A ``MemoryCompressor`` (used as is for every case), or a function from a list of
            Chat Completions message dicts to a list of messages (dicts or LangChain messages).
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
    label = name or getattr(obj, "__name__", None) or type(obj).__name__
    return lambda _s: _FunctionCompressor(obj, label)
