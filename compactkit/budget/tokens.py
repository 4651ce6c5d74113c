"""Counting the tokens a request is billed for, offline.

``TiktokenCounter`` counts a Chat Completions request the way the OpenAI API bills it, using the
model's real encoding and the formatting rules published in the OpenAI cookbook: every message
costs ``tokens_per_message`` plus its encoded values (role, content, name) and ``tokens_per_name``
for a name; the reply is primed with ``reply_priming`` tokens; tool schemas follow the cookbook's
formula. Those rules are verified against the API for plain messages and flat tool schemas, and
the count is then exact (the cookbook examples are tests). Tool calls, tool messages, images,
reasoning and nested schemas have no published ground truth: they get the best known
approximation and the count says ``exact=False``; the budget's safety margin covers the gap.

Encodings load from the rank files bundled in the ``bpe-openai`` package, never from the network
(``compactkit.budget._encodings``).

The counter interface, ``TokenCount`` and the per-item cache the counters share are in
``_counting``; ``EstimateCounter`` is in ``_estimate``; both are exported from here.

Counts are additive per item and cached twice: per item object (re-counting a grown history
costs only the new items) and, process-wide, per text (new objects with old content — a fresh
projector, a stateless call, a CLI run — are counted from memory, not encoded again).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from compactkit.budget._counting import TokenCount as TokenCount
from compactkit.budget._counting import TokenCounter as TokenCounter
from compactkit.budget._counting import _BaseCounter
from compactkit.budget._encodings import LINE_ADDITIVE, get_encoding, line_pieces, text_counts
from compactkit.budget._estimate import EstimateCounter as EstimateCounter
from compactkit.budget._inputs import check_text, check_tools
from compactkit.budget._parts import image_tokens as image_tokens
from compactkit.budget._parts import opaque_tokens, raw_tokens
from compactkit.budget._schemas import schema_approximation, schema_tokens
from compactkit.budget.profiles import (
    ModelProfile,
    ProfileRegistry,
    ToolSchemaRules,
    _registry,
)
from compactkit.items import (
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    ProviderCompaction,
    Reasoning,
    TextPart,
    Tool,
)
from compactkit.items.snapshot import looks_sealed

__all__ = [
    "EstimateCounter",
    "TiktokenCounter",
    "TokenCount",
    "TokenCounter",
    "counter_for",
    "get_encoding",
    "image_tokens",
]


class TiktokenCounter(_BaseCounter):
    """Counts Chat Completions requests with a tiktoken encoding and the cookbook's rules.

    Args:
        encoding: ``"o200k_base"`` or ``"cl100k_base"``.
        model: The model counted for (reported back; not used to pick rules).
        tokens_per_message: Overhead of every message (3 for current models).
        tokens_per_name: Extra cost of a ``name`` (1 for current models).
        reply_priming: Tokens priming the reply (``<|start|>assistant<|message|>``: 3).
        tool_rules: The tool-schema formula constants for this model family.
        verified: Whether these rules are verified against the API for this model; when false,
            every count says ``exact=False``.
    """

    def __init__(
        self,
        encoding: str = "o200k_base",
        *,
        model: str | None = None,
        tokens_per_message: int = 3,
        tokens_per_name: int = 1,
        reply_priming: int = 3,
        tool_rules: ToolSchemaRules | None = None,
        verified: bool = True,
    ) -> None:
        super().__init__()
        # len(encode(text)), remembered process-wide; the rank file is read at the first count,
        # not here (a middleware is often built inside a running event loop)
        self._encode = text_counts(encoding)
        self._encoding_name = encoding
        self.model = model
        self.tokens_per_message = tokens_per_message
        self.tokens_per_name = tokens_per_name
        self.reply_priming = reply_priming
        self.tool_rules = tool_rules or ToolSchemaRules()
        self.verified = verified
        self._role_tokens: dict[str, int] = {}
        self._by_lines = encoding in LINE_ADDITIVE

    @property
    def encoding_name(self) -> str:
        """The encoding's name."""
        return self._encoding_name

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` (special-token strings are counted as plain text, as billed)."""
        try:
            return self._encode(text)
        except TypeError:
            check_text(text)
            raise

    def count_overhead(self, tools: Sequence[Tool] = ()) -> int:
        """Reply priming plus the tool schemas."""
        return self.reply_priming + self.count_tools(tools)

    def count_tools(self, tools: Sequence[Tool]) -> int:
        """The cookbook's tool-schema formula (exact for flat schemas; nested ones estimated)."""
        if not tools:
            return 0
        check_tools(tools)
        return schema_tokens(self.tool_rules, tools, self.count_text)

    def _role(self, role: str) -> int:
        tokens = self._role_tokens.get(role)
        if tokens is None:
            tokens = self._role_tokens[role] = self.count_text(role)
        return tokens

    def bound_item(self, item: Item) -> int:
        """An upper bound of ``count_item(item)``, without encoding: the count when the item
        was counted before, else its texts priced at their UTF-8 length (a byte-level BPE
        token covers at least one byte; a lone surrogate is encoded as U+FFFD, 3 bytes, as
        ``encode_ordinary`` repairs it). For pricing history no prompt can reach."""
        tokens = self._tokens.get(id(item))
        if tokens is not None:
            return tokens
        if isinstance(item, Message) and isinstance(item.content, str) and item.name is None:
            return self.tokens_per_message + self._role(item.role) + _utf8_bound(item.content)
        if isinstance(item, FunctionCall):
            return (
                self.tokens_per_message
                + self._role("assistant")
                + _utf8_bound(item.name)
                + _utf8_bound(item.arguments)
            )
        if (
            isinstance(item, FunctionCallOutput)
            and isinstance(item.output, str)
            and item.name is None
        ):
            return self.tokens_per_message + self._role("tool") + _utf8_bound(item.output)
        return self.count_item(item)  # content parts, names: counted exactly

    def _price(self, item: Item) -> int:
        # The exact classes by type first: a failed isinstance against a pydantic class goes
        # through ABCMeta (several times a type check); subclasses take the isinstance.
        cls = type(item)
        it: Any = item  # (narrowed by these tests, which mypy does not read as narrowing)
        exact = cls is Message or cls is FunctionCall or cls is FunctionCallOutput
        if cls is Message or (not exact and isinstance(item, Message)):
            tokens = self.tokens_per_message + self._role(it.role)
            tokens += self._content(it.content)
            if it.name is not None:
                tokens += self.count_text(it.name) + self.tokens_per_name
            return tokens
        if cls is FunctionCall or (not exact and isinstance(item, FunctionCall)):
            # Approximation: a call is priced like a message holding its name and arguments.
            return (
                self.tokens_per_message
                + self._role("assistant")
                + self.count_text(it.name)
                + self.count_text(it.arguments)
            )
        if cls is FunctionCallOutput or (not exact and isinstance(item, FunctionCallOutput)):
            tokens = self.tokens_per_message + self._role("tool") + self._content(it.output)
            if it.name is not None:
                tokens += self.count_text(it.name) + self.tokens_per_name
            return tokens
        return self.count_text(it.text) + opaque_tokens(it)

    def _content(self, content: str | tuple[ContentPart, ...]) -> int:
        if isinstance(content, str):
            if len(content) > _LONG and self._by_lines and looks_sealed(content):
                return self._summary_text(content)
            return self._encode(content)
        tokens = 0
        for part in content:
            if isinstance(part, TextPart):
                tokens += self._encode(part.text)
            elif isinstance(part, ImagePart):
                tokens += image_tokens(part)
            else:
                tokens += raw_tokens(part)
        return tokens

    def _summary_text(self, text: str) -> int:
        """A summary's text, counted by lines when it has no ``\r`` (exact for a
        ``LINE_ADDITIVE`` encoding): a summary grows between compactions and keeps most of
        its lines, so each count encodes only the lines not counted before."""
        if "\r" in text:
            return self._encode(text)
        return self._encode.by_pieces(text, line_pieces)

    def _approximation(self, item: Item) -> str | None:
        if not self.verified:
            return "formatting rules not verified for this model"
        if isinstance(item, Message):
            if isinstance(item.content, str) or all(isinstance(p, TextPart) for p in item.content):
                return None
            return "images or other content parts are estimated"
        if isinstance(item, Reasoning):
            return "reasoning items are estimated"
        if isinstance(item, ProviderCompaction):
            return "provider compaction items are estimated (their content is encrypted)"
        return "tool calls and tool outputs are approximated"

    def _tools_approximation(self, tools: Sequence[Tool]) -> list[str]:
        if not tools:
            return []
        if not self.verified:
            return ["formatting rules not verified for this model"]
        return schema_approximation(tools)


def remember_text_tokens(counter: TokenCounter, text: str, tokens: int) -> None:
    """Let a plain ``TiktokenCounter`` take ``tokens`` as ``text``'s count from now on (its
    encoding's process-wide counts), when the caller counted ``text`` exactly another way: a
    summary counted bullet by bullet, which the counter would otherwise encode again line by
    line. ``tokens`` must be what ``counter.count_text(text)`` returns. Other counters: nothing."""
    if type(counter) is TiktokenCounter:
        counter._encode.remember(text, tokens)


def _utf8_bound(text: str) -> int:
    """``len(text.encode("utf-8"))`` with lone surrogates as 3 bytes: at least the tokens of
    ``text`` in any byte-level BPE encoding."""
    return len(text.encode("utf-8", "surrogatepass"))


_LONG = 2_000
"""Characters from which a summary's text is counted by lines."""


def counter_for(model: str, *, registry: ProfileRegistry | None = None) -> TokenCounter:
    """The counter for ``model``, built from its profile (exact where the profile says so).

    Raises:
        ConfigError: the model has no profile and the registry has no default.
        EncodingUnavailableError: the profile's encoding is not installed.
    """
    return _counter_for_profile(_registry(registry).get(model))


@lru_cache(maxsize=64)
def _counter_for_profile(profile: ModelProfile) -> TokenCounter:
    # One counter per profile, so every caller shares its per-item cache.
    if profile.encoding is None:
        assert profile.chars_per_token is not None  # a profile invariant
        return EstimateCounter(profile.chars_per_token, model=profile.name)
    rules = profile.message_rules
    return TiktokenCounter(
        profile.encoding,
        model=profile.name,
        tokens_per_message=rules.tokens_per_message if rules else 3,
        tokens_per_name=rules.tokens_per_name if rules else 1,
        reply_priming=rules.reply_priming if rules else 3,
        tool_rules=profile.tool_rules,
        verified=profile.exact,
    )
