"""``ProviderCompactor``: compaction delegated to the provider's own endpoint.

OpenAI: ``client.responses.compact(model=..., input=...)`` returns the retained user messages and
one encrypted ``compaction`` item. Anthropic: a Messages request with the ``compact_20260112``
context edit (``pause_after_compaction``) returns a ``compaction`` block. Either way the older
part of the history is sent, and the new snapshot is: the instructions, pinned items that were
not sent, what the provider returned, then the newest groups verbatim.

It obeys the contract of every compressor (``compactkit.compressors.base``): the newest groups,
the latest user input and pending calls are never sent for compaction; what it replaces is
``folded`` (so the memory archives it: nothing is lost, and ``export_portable`` can rebuild a
plaintext summary from it); a run-time failure (network, refusal, an answer with no compaction)
is ``outcome="failed"`` with the previous state untouched. The provider's ``usage`` for the
compaction pass is recorded in ``stats.details["usage"]``. The model is the caller's (or the
profile's): nothing is hard-coded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from compactkit.budget.tokens import TiktokenCounter, TokenCounter
from compactkit.compressors.digest import digest_items
from compactkit.compressors.sections import SummaryDocument
from compactkit.errors import ConfigError, FormatError
from compactkit.formats.anthropic import items_to_anthropic
from compactkit.formats.responses import items_to_responses, responses_to_items
from compactkit.items import Item, Message, ProviderCompaction
from compactkit.items.groups import group_items
from compactkit.items.snapshot import (
    CompactResult,
    CompactStats,
    MemorySnapshot,
    leading_instructions,
)

__all__ = ["ANTHROPIC_COMPACT_BETA", "ProviderCompactor", "export_portable"]

ANTHROPIC_COMPACT_BETA = "compact-2026-01-12"
"""The beta flag Anthropic's ``compact_20260112`` context edit needs."""

Provider = Literal["openai", "anthropic"]


@dataclass
class ProviderCompactor:
    """Compact by asking the provider (OpenAI ``responses.compact``, Anthropic's compaction).

    Args:
        client: An ``openai.OpenAI`` or ``anthropic.Anthropic`` client (or one with the same
            ``responses.compact`` / ``beta.messages.create`` methods).
        model: The model the provider compacts with (the agent's model, from its profile).
        keep_last_groups: Newest groups kept verbatim after the compaction (at least 1).
        instructions: Extra instructions for the provider's summarizer.
        provider: ``"openai"`` or ``"anthropic"``; detected from the client when omitted.
        max_tokens: Anthropic's ``max_tokens`` for the compaction request.
        counter: Counts tokens before and after (default: o200k_base, labelled estimates for
            the opaque items).

    Raises:
        ConfigError: a bad option, or a client of neither kind.
    """

    name: ClassVar[str] = "provider"

    client: Any
    model: str
    keep_last_groups: int = 1
    instructions: str | None = None
    provider: Provider | None = None
    max_tokens: int = 4096
    counter: TokenCounter = field(default_factory=lambda: TiktokenCounter("o200k_base"))

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError(f"ProviderCompactor needs the model name, got {self.model!r}")
        if isinstance(self.keep_last_groups, bool) or not (
            isinstance(self.keep_last_groups, int) and self.keep_last_groups >= 1
        ):
            raise ConfigError(
                f"keep_last_groups must be an int >= 1, got {self.keep_last_groups!r}"
            )
        if self.provider is None:
            self.provider = _detect(self.client)
        if self.provider not in ("openai", "anthropic"):
            raise ConfigError(f"provider must be 'openai' or 'anthropic', got {self.provider!r}")

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Send the older part of ``snapshot`` to the provider and splice in its compaction."""
        items = tuple(snapshot.items)
        lead, cut, latest = _cut(items, self.keep_last_groups)
        sent = [i for i in items[lead:cut] if not i.pinned or isinstance(i, ProviderCompaction)]
        kept_pinned = [i for i in items[lead:cut] if i.pinned and i not in sent]
        # The latest user input is sent (the provider's summary needs the task) but kept verbatim.
        latest_sent = items[latest] if latest is not None and lead <= latest < cut else None
        if latest_sent is not None and latest_sent not in sent:
            latest_sent = None
        before = len(items)
        if not [i for i in sent if i is not latest_sent]:
            return CompactResult(
                snapshot=snapshot,
                outcome="unchanged",
                stats=CompactStats(compressor=self.name, items_before=before, items_after=before),
            )
        try:
            returned, details = (
                self._openai(sent) if self.provider == "openai" else self._anthropic(items, sent)
            )
        except Exception as exc:  # the provider's failure is an outcome, never a lost state
            return CompactResult(
                snapshot=snapshot,
                outcome="failed",
                error=f"provider compaction failed: {type(exc).__name__}: {exc}",
                stats=CompactStats(compressor=self.name, items_before=before, items_after=before),
            )
        if latest_sent is not None:
            returned = _keep_verbatim(returned, latest_sent, self.provider)
        new_items = (*items[:lead], *kept_pinned, *returned, *items[cut:])
        new = snapshot.model_copy(update={"items": new_items})
        return CompactResult(
            snapshot=new,
            folded=tuple(i for i in sent if i is not latest_sent),
            outcome="compacted",
            stats=CompactStats(
                tokens_before=self._tokens(snapshot.summary, items),
                tokens_after=self._tokens(snapshot.summary, new_items),
                items_after=len(new_items),
                details={"provider": self.provider, "model": self.model, **details},
                compressor=self.name,
                items_before=before,
            ),
        )

    def _tokens(self, summary: str, items: Sequence[Item]) -> int:
        total = sum(self.counter.count_item(item) for item in items)
        return total + (self.counter.count_text(summary) if summary else 0)

    def _openai(self, sent: Sequence[Item]) -> tuple[list[Item], dict[str, Any]]:
        kwargs: dict[str, Any] = {"model": self.model, "input": items_to_responses(sent)}
        if self.instructions is not None:
            kwargs["instructions"] = self.instructions
        response = self.client.responses.compact(**kwargs)
        output = [_dump(item) for item in response.output]
        returned = responses_to_items(output)
        if sum(isinstance(i, ProviderCompaction) for i in returned) != 1:
            raise ValueError("expected exactly one compaction item in the provider's output")
        return returned, {"usage": _dump(response.usage), "response_id": response.id}

    def _anthropic(
        self, items: Sequence[Item], sent: Sequence[Item]
    ) -> tuple[list[Item], dict[str, Any]]:
        lead = leading_instructions(items)
        prompt = items_to_anthropic([*items[:lead], *sent])
        edit: dict[str, Any] = {
            "type": "compact_20260112",
            "pause_after_compaction": True,
            "trigger": {"type": "input_tokens", "value": 1},  # compact now, on demand
        }
        if self.instructions is not None:
            edit["instructions"] = self.instructions
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": prompt.messages,
            "context_management": {"edits": [edit]},
            "betas": [ANTHROPIC_COMPACT_BETA],
        }
        if prompt.system is not None:
            kwargs["system"] = prompt.system
        response = self.client.beta.messages.create(**kwargs)
        blocks = [_dump(b) for b in response.content if getattr(b, "type", None) == "compaction"]
        if len(blocks) != 1 or not blocks[0].get("content"):
            raise ValueError(
                f"expected one compaction block with content, got {len(blocks)} "
                f"(stop_reason {getattr(response, 'stop_reason', None)!r})"
            )
        returned: list[Item] = [ProviderCompaction(format="anthropic", payload=blocks[0])]
        return returned, {"usage": _dump(response.usage), "response_id": response.id}


def export_portable(
    memory_or_snapshot: Any, *, history: Sequence[Item] | None = None
) -> MemorySnapshot:
    """The same state with every provider compaction turned into compactkit's plaintext summary.

    A provider's compaction is opaque to every other provider (OpenAI's is encrypted). To move a
    session, each compaction item is replaced by the digest of the items it covers, read from the
    archive (the memory's ``history()``: every built-in memory keeps what a compaction folded),
    merged into the running summary. An Anthropic compaction whose covered items are not held
    contributes its own plaintext summary instead.

    Args:
        memory_or_snapshot: A memory (its ``snapshot()`` and ``history()`` are read) or a
            ``MemorySnapshot``.
        history: The archive, when a snapshot is given.

    Returns:
        A snapshot without provider compaction items, ready for ``memory.restore`` or any
        format's converter.

    Raises:
        FormatError: an OpenAI compaction whose covered items are not in the archive (its
            content is encrypted: nothing portable can be made of it).
    """
    if isinstance(memory_or_snapshot, MemorySnapshot):
        snapshot, archive = memory_or_snapshot, tuple(history or ())
    else:
        snapshot = memory_or_snapshot.snapshot()
        archive = tuple(memory_or_snapshot.history() if history is None else history)
    items = tuple(snapshot.items)
    compactions = [i for i in items if isinstance(i, ProviderCompaction)]
    if not compactions:
        return snapshot
    active = {i.seq for i in items}
    doc = SummaryDocument.parse(snapshot.summary) if snapshot.summary else SummaryDocument()
    covered_upto: int | None = None
    for compaction in compactions:
        upto = compaction.seq
        covered = [
            i
            for i in archive
            if i.seq is not None
            and i.seq not in active
            and not isinstance(i, ProviderCompaction)
            and (upto is None or i.seq < upto)
            and (covered_upto is None or i.seq > covered_upto)
        ]
        covered_upto = upto
        if covered:
            doc = doc.merge(digest_items(sorted(covered, key=lambda i: i.seq or 0)))
        elif compaction.format == "anthropic" and compaction.text:
            provided = SummaryDocument.parse(compaction.text)
            doc = doc.merge(
                provided if not provided.is_empty else SummaryDocument.of(state=[compaction.text])
            )
        else:
            raise FormatError(
                f"cannot export the {compaction.format} compaction item (seq={compaction.seq}, "
                f"id={compaction.id!r}): its content is encrypted and the items it covers are "
                "not in the archive; export from the memory that compacted (it keeps them)"
            )
    kept = tuple(i for i in items if not isinstance(i, ProviderCompaction))
    return snapshot.model_copy(update={"items": kept, "summary": doc.render()})


def _cut(items: Sequence[Item], keep_last_groups: int) -> tuple[int, int, int | None]:
    """The instructions' end, where the verbatim tail starts (the newest groups and any group
    with calls still waiting stay out of what is sent) and the latest user input's index."""
    lead = leading_instructions(items)
    groups = group_items(items, lead)
    latest_user = next(
        (
            i
            for i in range(len(items) - 1, lead - 1, -1)
            if isinstance(items[i], Message) and items[i].role == "user"  # type: ignore[union-attr]
        ),
        None,
    )
    if not groups:
        return lead, lead, latest_user
    cut = groups[max(len(groups) - keep_last_groups, 0)].start
    for group in groups:
        if group.pending:
            cut = min(cut, group.start)
    return lead, cut, latest_user


def _keep_verbatim(returned: list[Item], latest: Item, provider: Provider | None) -> list[Item]:
    """``returned`` with the latest user input as it was stored: in place of the provider's
    retained copy (OpenAI returns the user messages, possibly truncated), else right before the
    compaction (OpenAI) or right after it (Anthropic reads nothing before its block)."""
    text = latest.text if isinstance(latest, Message) else ""
    for index in range(len(returned) - 1, -1, -1):
        copy = returned[index]
        if isinstance(copy, Message) and copy.role == "user" and copy.text.strip():
            if text.startswith(copy.text.rstrip(".… \n")):
                return [*returned[:index], latest, *returned[index + 1 :]]
            break
    at = next(
        (i for i, item in enumerate(returned) if isinstance(item, ProviderCompaction)),
        len(returned),
    )
    if provider == "anthropic":
        at += 1
    return [*returned[:at], latest, *returned[at:]]


def _detect(client: object) -> Provider:
    module = type(client).__module__
    if module.startswith("anthropic"):
        return "anthropic"
    if module.startswith("openai"):
        return "openai"
    if hasattr(getattr(client, "responses", None), "compact"):
        return "openai"
    raise ConfigError(
        f"ProviderCompactor takes an openai.OpenAI or anthropic.Anthropic client, got "
        f"{type(client).__name__}; pass provider='openai' or 'anthropic' for a compatible one"
    )


def _dump(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    # The SDKs build answers without validating them (a retained user message arrives in a
    # model made for assistant output): dump what came, without pydantic's type warnings.
    dumped = value.model_dump(mode="json", exclude_none=True, warnings=False)
    assert isinstance(dumped, dict)
    return dumped
