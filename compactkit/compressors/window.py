"""``WindowedCompressor``: keep the newest items, forget the rest (the reference SDK's baseline).

It keeps the last ``max_items`` items and/or the newest items that fit ``max_tokens``, cutting
only between groups, and never drops the instructions, pinned items, the latest user input or
pending calls. The summary is kept exactly as it is: **what the window drops is forgotten** —
nothing of it reaches the summary. Use ``DigestCompressor`` (or a ``LadderCompressor``) when the
dropped history must leave a trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._args import check_sizes, snapshot_arg
from compactkit.compressors._plan import (
    Layout,
    default_counter,
    irreducible,
    request_tokens,
    result,
)
from compactkit.errors import ConfigError
from compactkit.items import Tool
from compactkit.items.groups import Group
from compactkit.items.snapshot import CompactResult, MemorySnapshot, summary_message

__all__ = ["WindowedCompressor"]


@dataclass(frozen=True)
class WindowedCompressor:
    """Keep the newest items by count and/or tokens, group-safe; the summary is left as is.

    Args:
        max_items: Keep at most this many items after the instructions (protected groups count
            toward it but are kept even beyond it).
        max_tokens: Keep the result's whole request (instructions, summary, items, tool schemas,
            reply priming) within this many tokens, as far as the protected part allows
            (``stats.details["target_met"]`` says whether it did).
        counter: Counts tokens the way the model's API bills them (default: o200k_base).
        tools: The tool schemas sent with the request (they count toward ``max_tokens``).

    Raises:
        ConfigError: neither limit is given, or a limit is not positive.
    """

    max_items: int | None = None
    max_tokens: int | None = None
    counter: TokenCounter = field(default_factory=default_counter)
    tools: Sequence[Tool] = ()

    name = "window"

    def __post_init__(self) -> None:
        check_sizes("WindowedCompressor", max_items=self.max_items, max_tokens=self.max_tokens)
        if self.max_items is None and self.max_tokens is None:
            raise ConfigError("WindowedCompressor needs max_items or max_tokens (or both)")
        for label, value in (("max_items", self.max_items), ("max_tokens", self.max_tokens)):
            if value is not None and (isinstance(value, bool) or value <= 0):
                raise ConfigError(f"{label} must be a positive integer, got {value!r}")

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Drop the oldest unprotected groups beyond the limits; never raises for run time."""
        snapshot = snapshot_arg(self, snapshot)
        counter = self.counter
        layout = Layout.of(snapshot.items)
        before = request_tokens(snapshot, counter, self.tools)
        fixed = layout.fixed_items
        items_left = None if self.max_items is None else self.max_items - (len(fixed) - layout.lead)
        tokens_left = None
        if self.max_tokens is not None:
            used = sum(counter.count_item(i) for i in fixed) + counter.count_overhead(self.tools)
            if snapshot.summary:
                used += counter.count_item(summary_message(snapshot.summary))
            tokens_left = self.max_tokens - used

        def keep(_position: int, group: Group) -> bool:
            nonlocal items_left, tokens_left
            if items_left is not None and len(group) > items_left:
                return False
            if tokens_left is not None:
                size = layout.tokens(group, counter)
                if size > tokens_left:
                    return False
                tokens_left -= size
            if items_left is not None:
                items_left -= len(group)
            return True

        first_kept = layout.cut(keep)
        kept, folded = layout.split(first_kept)
        details: dict[str, object] = {"dropped": len(folded), "summary_unchanged": True}
        after = snapshot.model_copy(update={"items": tuple(kept)}) if folded else None
        if self.max_tokens is not None:
            final = before if after is None else request_tokens(after, counter, self.tools)
            details["target_tokens"] = self.max_tokens
            details["target_met"] = final <= self.max_tokens
            if final > self.max_tokens:
                parts = irreducible(snapshot, counter, self.tools)
                details["irreducible"] = dict(parts)
        return result(
            self.name, snapshot, after, counter, self.tools, tokens_before=before, details=details
        )
