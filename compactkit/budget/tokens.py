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

Counts are additive per item and cached twice: per item object (re-counting a grown history
costs only the new items) and, process-wide, per text (new objects with old content — a fresh
projector, a stateless call, a CLI run — are counted from memory, not encoded again).
"""

from __future__ import annotations

import json
import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import Protocol, runtime_checkable

from compactkit.budget._encodings import LINE_ADDITIVE, get_encoding, line_pieces, text_counts
from compactkit.budget._inputs import ITEM_TYPES, check_item, check_text, check_tools
from compactkit.budget._parts import image_tokens as image_tokens
from compactkit.budget._parts import opaque_tokens, raw_tokens
from compactkit.budget._schemas import schema_approximation, schema_tokens
from compactkit.budget.profiles import (
    ModelProfile,
    ProfileRegistry,
    ToolSchemaRules,
    _registry,
)
from compactkit.errors import ConfigError
from compactkit.items import (
    ContentPart,
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    ProviderCompaction,
    RawPart,
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
        try:
            return sum(map(self._tokens.__getitem__, map(id, items)))
        except KeyError:
            return sum(map(self.count_item, items))

    def item_counts(self, items: Iterable[Item]) -> list[int]:
        """``[count_item(item) for item in items]``; a loop in C when every item is cached."""
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
        if isinstance(item, Message):
            tokens = self.tokens_per_message + self._role(item.role)
            tokens += self._content(item.content)
            if item.name is not None:
                tokens += self.count_text(item.name) + self.tokens_per_name
            return tokens
        if isinstance(item, FunctionCall):
            # Approximation: a call is priced like a message holding its name and arguments.
            return (
                self.tokens_per_message
                + self._role("assistant")
                + self.count_text(item.name)
                + self.count_text(item.arguments)
            )
        if isinstance(item, FunctionCallOutput):
            tokens = self.tokens_per_message + self._role("tool") + self._content(item.output)
            if item.name is not None:
                tokens += self.count_text(item.name) + self.tokens_per_name
            return tokens
        return self.count_text(item.text) + opaque_tokens(item)

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


def _utf8_bound(text: str) -> int:
    """``len(text.encode("utf-8"))`` with lone surrogates as 3 bytes: at least the tokens of
    ``text`` in any byte-level BPE encoding."""
    return len(text.encode("utf-8", "surrogatepass"))


class EstimateCounter(_BaseCounter):
    """A labelled estimate for models without a local tokenizer: characters / ratio.

    Args:
        chars_per_token: Average characters per token for the model family.
        model: The model counted for.
        tokens_per_message: Overhead charged per item.
    """

    def __init__(
        self,
        chars_per_token: float = 3.5,
        *,
        model: str | None = None,
        tokens_per_message: int = 3,
    ) -> None:
        if chars_per_token <= 0:
            raise ConfigError(f"chars_per_token must be positive, got {chars_per_token!r}")
        super().__init__()
        self.chars_per_token = chars_per_token
        self.model = model
        self.tokens_per_message = tokens_per_message

    @property
    def encoding_name(self) -> None:
        """Always ``None``: this is an estimate."""
        return None

    def count_text(self, text: str) -> int:
        """Estimated tokens of ``text`` (rounded up)."""
        check_text(text)
        return math.ceil(len(text) / self.chars_per_token)

    def count_overhead(self, tools: Sequence[Tool] = ()) -> int:
        """Reply priming plus the serialised tool schemas."""
        check_tools(tools)
        schemas = [t.model_dump(mode="json", exclude_none=True) for t in tools]
        return 3 + (self.count_text(json.dumps(schemas)) if tools else 0)

    def _price(self, item: Item) -> int:
        if isinstance(item, FunctionCall):
            text = item.name + item.arguments
        elif isinstance(item, Message | FunctionCallOutput):
            content = item.content if isinstance(item, Message) else item.output
            text = item.text
            if not isinstance(content, str):
                extra = sum(image_tokens(p) for p in content if isinstance(p, ImagePart))
                extra += sum(raw_tokens(p) for p in content if isinstance(p, RawPart))
                return self.tokens_per_message + self.count_text(text) + extra
        else:
            return self.count_text(item.text) + opaque_tokens(item)
        return self.tokens_per_message + self.count_text(text)

    def _approximation(self, item: Item) -> str | None:
        return "no local tokenizer for this model: character-based estimate"

    def _tools_approximation(self, tools: Sequence[Tool]) -> list[str]:
        return ["no local tokenizer for this model: character-based estimate"] if tools else []


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
