"""``MaskingCompressor``: observation masking — old bulky tool outputs become placeholders.

JetBrains' "Complexity Trap" (NeurIPS 2025 DL4C) found that replacing tool outputs older than the
last few turns with a one-line placeholder roughly halves an agent's cost and matches LLM
summarization on solve rate. Every call and every assistant message stays; only the *outputs*
older than the last ``keep_last_groups`` groups are replaced. A placeholder keeps the output's
``call_id``, ``seq`` and other fields (so the tool-call pairing stays valid and a memory knows
which stored item it stands for), names the tool and the size it replaces, and keeps the last
error line so that a masked failure still reads as one.

The originals are reported in ``CompactResult.folded`` (they left the active history; their
placeholders took their place) — a memory keeps them in its history.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from itertools import islice

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._args import check_sizes, snapshot_arg
from compactkit.compressors._plan import (
    Layout,
    Measured,
    default_counter,
    request_tokens,
    result,
)
from compactkit.errors import ConfigError
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Tool, with_field
from compactkit.items.snapshot import CompactResult, MemorySnapshot

__all__ = ["MASK_PREFIX", "MaskingCompressor", "is_masked", "mask_output"]

MASK_PREFIX = "[masked output of "
"""How every placeholder's text starts (``is_masked`` checks it)."""


@cache
def _last_error() -> Callable[[str], str | None]:
    """``_facts.last_error``, imported with the first mask: its patterns compile when it loads
    (a few ms a process that never masks does not pay); cached, so a mask pays a call, not an
    import statement."""
    from compactkit.compressors._facts import last_error

    return last_error


def mask_output(
    output: FunctionCallOutput, *, tool: str | None = None, tokens: int | None = None
) -> FunctionCallOutput:
    """The placeholder standing in for ``output``: same ``call_id``, ``seq`` and fields, text
    naming the tool and the size replaced, plus the output's last error line if it had one::

        [masked output of run_tests (call_id call_7): 2,140 tokens, 212 lines; last error:
        AssertionError: 3 != 5. Call the tool again to see it.]
    """
    text = output.text
    tool = tool or output.name or "a tool"
    size = [f"{tokens:,} tokens"] if tokens is not None else []
    lines = text.count("\n") + 1 if text else 0
    size.append(f"{lines:,} line{'s' if lines != 1 else ''}")
    note = f"{MASK_PREFIX}{tool} (call_id {output.call_id}): {', '.join(size)}"
    error = _last_error()(text)
    if error:
        note += f"; last error: {error}"
    return with_output(output, note + ". Call the tool again to see it.]")


class PlaceholderCache:
    """``mask_output(output, tool=tool, tokens=tokens)``, made once per output object, tool and
    size: the projection masks every bulky output of a closed group when it first measures it,
    and the masking rung of a later compaction masks the outputs over the projection's
    threshold again (the same tool and size: the governor's counter counts for both), so it
    takes the placeholder already made (and its count, cached by object) instead of building
    and counting an equal one (``made``: it adds none of its own).

    A placeholder is a function of the output's fields, ``tool`` and ``tokens`` (all compared
    before an entry is used), so a placeholder taken from here equals the one ``mask_output``
    would make. Holds at most ``limit`` entries (the oldest eighth dropped at once); each keeps
    its output alive, so an entry found by ``id`` is that output's.
    """

    def __init__(self, limit: int = 100_000) -> None:
        self._limit = limit
        self._entries: dict[
            int, tuple[FunctionCallOutput, str | None, int | None, FunctionCallOutput]
        ] = {}

    def __call__(
        self, output: FunctionCallOutput, tool: str | None, tokens: int | None
    ) -> FunctionCallOutput:
        """The placeholder for ``output`` (``tokens`` long), naming ``tool`` when known."""
        entry = self._entries.get(id(output))
        if entry is not None and entry[0] is output and entry[1] == tool and entry[2] == tokens:
            return entry[3]
        placeholder = mask_output(output, tool=tool, tokens=tokens)
        if len(self._entries) >= self._limit:  # the oldest eighth at once (see TokenCounter)
            self._entries = dict(islice(self._entries.items(), self._limit // 8, None))
        self._entries[id(output)] = (output, tool, tokens, placeholder)
        return placeholder

    def made(
        self, output: FunctionCallOutput, tool: str | None, tokens: int | None
    ) -> FunctionCallOutput:
        """``self(output, tool, tokens)`` without keeping a new placeholder (the masking rung:
        the outputs it masks leave the history, and an entry would keep them alive)."""
        entry = self._entries.get(id(output))
        if entry is not None and entry[0] is output and entry[1] == tool and entry[2] == tokens:
            return entry[3]
        return mask_output(output, tool=tool, tokens=tokens)

    def clear(self) -> None:
        """Forget every placeholder."""
        self._entries = {}


placeholders = PlaceholderCache()
"""The process's placeholders, shared by the projection (``governance._pieces.Masker``) and
the masking rung."""


def with_output(output: FunctionCallOutput, text: str) -> FunctionCallOutput:
    """``output.model_copy(update={"output": text})``, built directly for a plain output (the
    projection and the masking rung make thousands of placeholders in a long session; pydantic's
    copy costs several times more). Property-tested against ``model_copy``
    (tests/compressors/test_masking_copy.py)."""
    if type(output) is not FunctionCallOutput:  # a subclass's own copy
        return output.model_copy(update={"output": text})
    return with_field(output, "output", text)


CUT_PREFIX = "[cut by compactkit: "
"""How the marker inside a cut output starts (``cut_output``)."""


def cut_output(
    output: FunctionCallOutput,
    *,
    max_tokens: int,
    counter: TokenCounter,
    tool: str | None = None,
) -> FunctionCallOutput:
    """``output`` shortened to at most ``max_tokens`` (by ``counter.count_item``): its head and
    its end, with a marker between them saying how much was cut and how to see it::

        ...first lines...
        [cut by compactkit: 5,210 of 7,530 tokens of this output of read_file (call_id
        call_7) were not sent, to fit the context budget. Call the tool again for a narrower
        part (a range, a filter, a page) to see them.]
        ...last lines...

    For the newest output when it alone is larger than the whole budget: masking it would
    leave the model nothing of the result it just asked for. ``output`` itself when it fits
    already; the marker alone (nothing of the text kept) when even that is over
    ``max_tokens`` (the caller compares the count).
    """
    text = output.text
    total = counter.count_item(output)
    if total <= max_tokens:
        return output
    tool = tool or output.name or "a tool"
    size = counter.count_text(text)

    def shortened(kept: int) -> FunctionCallOutput:
        head, tail = text[: kept * 2 // 3], text[len(text) - kept // 3 :] if kept // 3 else ""
        dropped = size - counter.count_text(head) - counter.count_text(tail)
        note = (
            f"\n{CUT_PREFIX}{max(dropped, 0):,} of {size:,} tokens of this output of {tool} "
            f"(call_id {output.call_id}) were not sent, to fit the context budget. Call the "
            "tool again for a narrower part (a range, a filter, a page) to see them.]\n"
        )
        return with_output(output, head + note + tail)

    low, high = 0, len(text)  # the most characters kept whose rendering fits: binary search
    best = shortened(0)
    if counter.count_item(best) > max_tokens:
        return best
    while low < high:
        middle = (low + high + 1) // 2
        candidate = shortened(middle)
        if counter.count_item(candidate) <= max_tokens:
            low, best = middle, candidate
        else:
            high = middle - 1
    return best


def is_cut(item: Item) -> bool:
    """Whether ``item`` is an output shortened by ``cut_output``."""
    return isinstance(item, FunctionCallOutput) and CUT_PREFIX in item.text


def is_masked(item: Item) -> bool:
    """Whether ``item`` is a masking placeholder."""
    return isinstance(item, FunctionCallOutput) and item.text.startswith(MASK_PREFIX)


@dataclass(frozen=True)
class MaskingCompressor:
    """Replace tool outputs older than the last ``keep_last_groups`` groups with placeholders.

    Args:
        keep_last_groups: Outputs in the newest this-many groups (plus protected groups:
            pinned items, the latest user input, pending calls) are never masked. JetBrains
            used 10 turns for SWE-agent; scaffolds with many small steps need more.
        min_tokens: Outputs at or below this size are left alone (a placeholder would not save
            enough to lose them).
        target_tokens: When given, mask oldest first only until the whole request fits this
            many tokens; otherwise mask every eligible output.
        counter: Counts tokens the way the model's API bills them (default: o200k_base).
        tools: The tool schemas sent with the request (they count toward ``target_tokens``).

    Raises:
        ConfigError: a negative ``keep_last_groups`` or ``min_tokens``, or a target below 1.
    """

    keep_last_groups: int = 10
    min_tokens: int = 100
    target_tokens: int | None = None
    counter: TokenCounter = field(default_factory=default_counter)
    tools: Sequence[Tool] = ()

    name = "mask"

    def __post_init__(self) -> None:
        check_sizes(
            "MaskingCompressor",
            ["keep_last_groups", "min_tokens"],
            keep_last_groups=self.keep_last_groups,
            min_tokens=self.min_tokens,
            target_tokens=self.target_tokens,
        )
        if self.keep_last_groups < 0:
            raise ConfigError(f"keep_last_groups must be >= 0, got {self.keep_last_groups!r}")
        if self.min_tokens < 0:
            raise ConfigError(f"min_tokens must be >= 0, got {self.min_tokens!r}")
        if self.target_tokens is not None and self.target_tokens < 1:
            raise ConfigError(f"target_tokens must be positive, got {self.target_tokens!r}")

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Mask old bulky outputs; never raises for run time."""
        snapshot = snapshot_arg(self, snapshot)
        before = request_tokens(snapshot, self.counter, self.tools)
        return self._compress_measured(Measured(snapshot, before, Layout.of(snapshot.items)))[0]

    def _compress_measured(self, measured: Measured) -> tuple[CompactResult, Measured | None]:
        """``compress`` for a snapshot already measured under this compressor's counter and
        tools (a ``LadderCompressor`` passes what it counted), with the result measured too
        (``None`` when unchanged): only the outputs it masks are counted."""
        snapshot, layout, before = measured.snapshot, measured.layout, measured.tokens
        counter = self.counter
        newest_unmasked = layout.cut(lambda position, _group: position < self.keep_last_groups)
        items, total, masked = self._masked(layout, newest_unmasked, before)
        details: dict[str, object] = {"masked": len(masked), "masked_call_ids": masked}
        if self.target_tokens is not None:
            details["target_tokens"] = self.target_tokens
            details["target_met"] = total <= self.target_tokens
        if not masked:
            done = result(
                self.name,
                snapshot,
                None,
                counter,
                self.tools,
                tokens_before=before,
                details=details,
            )
            return done, None
        after = snapshot.model_copy(update={"items": tuple(items)})
        # Exact: a request's tokens are the sum of its items' (plus the fixed overhead), and
        # each placeholder changed the sum by its saving.
        done = result(
            self.name,
            snapshot,
            after,
            counter,
            self.tools,
            tokens_before=before,
            tokens_after=total,
            details=details,
        )
        return done, Measured(after, total, layout.with_items(after.items))

    def _masked(
        self, layout: Layout, newest_unmasked: int, total: int
    ) -> tuple[list[Item], int, list[str]]:
        """The items with the bulky outputs of the unprotected groups before ``newest_unmasked``
        masked, oldest first (until the request's ``total`` tokens reach the target, when there
        is one), the request's tokens then, and the call ids masked."""
        count, target, floor = self.counter.count_item, self.target_tokens, self.min_tokens
        items = list(layout.items)
        protected = layout.protected
        tool_names: dict[str, str] | None = None  # built on the first output to mask
        masked: list[str] = []
        for index, group in enumerate(layout.groups[:newest_unmasked]):
            if protected[index] is not None:
                continue
            if target is not None and total <= target:
                break  # (the total only falls: no later output is masked either)
            for position in range(group.start, group.stop):
                item = items[position]
                if not isinstance(item, FunctionCallOutput):
                    continue
                tokens = count(item)  # (a hit: the request's count counted every item)
                if tokens <= floor or is_masked(item):
                    continue
                if tool_names is None:
                    tool_names = {
                        i.call_id: i.name for i in layout.items if isinstance(i, FunctionCall)
                    }
                placeholder = placeholders.made(item, tool_names.get(item.call_id), tokens)
                saving = tokens - count(placeholder)
                if saving <= 0:
                    continue
                items[position] = placeholder
                total -= saving
                masked.append(item.call_id)
                if target is not None and total <= target:
                    break
        return items, total, masked
