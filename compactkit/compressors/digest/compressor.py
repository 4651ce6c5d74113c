"""``DigestCompressor``: fold old history into a sectioned digest of exact facts, without an LLM.

What it folds is read item by item (``digest_items``) and every fact is copied verbatim into the
summary's sections (``compactkit.compressors.sections``):

* goal — the first user message's first paragraph, when the summary has no goal yet; later user
  requests that state no rule go with the constraints (in the order said), marked "Later:";
* constraints and instructions — only text a person wrote: each sentence of a user message that
  states a rule ("must", "don't", "never", "always", "only", "use …", …) and each item of a list
  in one; system or developer messages that appear mid-conversation. Tool output (also when a
  text-action agent feeds it back as a user message) and the assistant's words never are. A
  rule the goal quotes verbatim is said once, in the goal (the post-condition finds it there);
* decisions — assistant sentences that decide, abandon or explain ("instead", "because", …);
* files read / files modified — from tool-call arguments (``path``/``file``/``filename`` …,
  editor commands, ``apply_patch`` patches), shell commands (``cat``, ``sed -i``, ``perl -pi``,
  redirections, heredocs, ``git apply``/``patch`` with an inline diff, ``python - <<EOF`` scripts
  that write files, ``rm``/``mv``/``cp``, formatters), and text actions (```` ```bash ````
  blocks, ``Action: bash``); one entry per file ("read; edited x3");
* commands run — one entry per command: its newest outcome (exit code, test summary, error
  line) and how often it ran; every other tool call as ``name(arguments)``;
* errors — traceback final lines and the error lines of shells, compilers, type checkers,
  linters and test runners, one entry per distinct line, marked resolved when the same command
  later succeeded;
* identifiers — URLs, commit shas, UUIDs, ticket and issue numbers, prefixed ids, versions, and
  the values of id-like tool arguments (``reservation_id``, ``order_number`` …);
* values — ``name = value`` settings from prose ("set X to 5") and config-file edits; the newest
  is current, older ones are marked superseded;
* current state / next steps — the last folded assistant message, and its "next" sentences.

Excerpts of tool output, files and commands are `` `code` `` spans, and the summary labels them
as quoted data. The new facts are merged into the existing summary (parsed back, so repeated
compactions accumulate instead of starting over).

How the target is shared (with ``target_tokens`` and no explicit keep rule): the summary gets
what its facts need, up to ``DIGEST_SHARE`` (90%) of the target, and the verbatim tail keeps the
newest whole groups that fit the rest. When the facts need more, bulky tool outputs in the tail
are masked first (oldest first, never in the newest kept group) and the summary takes the room
they free; only then is the summary trimmed — context shortened before any fact goes, then by
class (see ``SummaryDocument.trim_to``), with what was dropped counted in the summary and in
``stats.details["facts"]`` (a ``FactReport``). The result never exceeds the target when the
parts no compressor may shrink fit it — and the user's goal and constraints with them: a
target never drops those (it is a wish; the budget, held by the projection, is the law), only
an explicit ``summary_cap_tokens`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._args import check_sizes, snapshot_arg
from compactkit.compressors._document import parsed, remember
from compactkit.compressors._plan import (
    Keep,
    Layout,
    Measured,
    Split,
    default_counter,
    newest_groups_keeper,
    request_tokens,
    result,
    split_by_need,
    summary_cap,
)
from compactkit.compressors._trim import forget_rewritten
from compactkit.compressors._verify import Verification, rules_said_once, unkept, verify
from compactkit.compressors.digest._extract import digest_items, values_in
from compactkit.compressors.digest._merging import Merging
from compactkit.compressors.digest._sizer import SummarySizer
from compactkit.compressors.masking import mask_output
from compactkit.compressors.report import FactReport
from compactkit.compressors.sections import SummaryDocument
from compactkit.errors import ConfigError
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Tool
from compactkit.items.snapshot import CompactResult, MemorySnapshot, summary_message

__all__ = ["DigestCompressor"]

DIGEST_SHARE = 0.9
"""The share of ``target_tokens`` the digest may grow to (the LLM summary's is
``SUMMARY_SHARE``): a digest is exact facts, denser than the verbatim history it replaces, so
under pressure the target goes to the facts first; the tail still keeps the newest groups
(and what the tail's whole groups do not fit, ``split_by_need`` masks). Measured on
bench_digest_truth at 20x: errors 0.81 -> 0.85 between 0.6 and 0.9, continuation unchanged
at 1.00 once the state and next steps keep their sentence (``_forms._CLIP``)."""


class FactsNeed:
    """The summary's size for a cut (``split_by_need``'s ``need``), digesting each folded group once (folding more groups
    merges only their facts into what is already digested).

    With ``rules_once`` (the digest), a rule the goal quotes verbatim (the first paragraph's
    rules, or a later message repeating one) is not repeated among the constraints of ``doc``
    (``rules_said_once``); ``new``, the facts the post-condition checks, keeps it as a
    constraint."""

    def __init__(
        self,
        layout: Layout,
        existing: SummaryDocument,
        originals: Mapping[str, FunctionCallOutput],
        counter: TokenCounter,
        *,
        rules_once: bool = False,
    ) -> None:
        self.layout, self.counter, self.originals = layout, counter, originals
        self.rules_once = rules_once
        self.existing = existing
        self.doc = existing
        self.upto = 0  # groups [0, upto) are digested into self.doc
        self._merged, self._new = Merging(existing), Merging(SummaryDocument())
        self._sized: tuple[SummaryDocument, int] | None = None  # the last doc counted
        self.tokens = SummarySizer(counter)

    @property
    def new(self) -> SummaryDocument:
        """What the folded groups add, merged (``doc`` is ``existing`` with it)."""
        return self._new.document()

    def folded(self, start: int, stop: int) -> list[Item]:
        return self.layout.unprotected_items(start, stop)

    def __call__(self, first_kept: int) -> int:
        if first_kept < self.upto:  # fewer groups folded than before: start again
            self.doc, self.upto = self.existing, 0
            self._merged, self._new = Merging(self.existing), Merging(SummaryDocument())
        if self._sized is None:  # the summary so far: what folding adds is then counted as a gain
            self._sized = (self.existing, self.tokens(self.existing))
        if first_kept > self.upto:
            part = digest_items(
                self.folded(self.upto, first_kept),
                originals=self.originals,
                with_goal=not self.doc.entries("goal"),
            )
            self._new.merge(part)
            goals = (part.entries("goal") or self.doc.entries("goal")) if self.rules_once else ()
            self._merged.merge(rules_said_once(part, goals) if goals else part)
            self.doc = self._merged.document()
            self.upto = first_kept
        sized = self._sized
        if sized is None or sized[0] is not self.doc:  # count a summary only once
            sized = self._sized = (self.doc, self.tokens(self.doc))
        return sized[1]


@dataclass(frozen=True)
class DigestCompressor:
    """Fold all but the newest history into a digest of exact facts (no LLM).

    How much stays verbatim: ``keep_last_groups`` newest groups, or the newest groups within
    ``keep_tokens``; with neither, the target is shared by need (see the module docstring): the
    summary takes what its facts need up to ``summary_cap_tokens`` (default 90% of the
    target), the tail the newest whole groups that fit the rest; with no target either, the
    last 10 groups. Pinned items, the latest user input and pending calls always stay.

    Args:
        keep_last_groups: Keep this many newest unprotected groups verbatim.
        keep_tokens: Keep the newest groups whose tokens fit this many.
        target_tokens: The whole-request size the result should fit.
        summary_cap_tokens: The summary's ceiling; default ``DIGEST_SHARE`` (90%) of the
            target (2,000 tokens without a target). Given explicitly, the summary never
            exceeds it; by default it may take the room masking frees in the tail.
        mask_tail: Mask bulky tool outputs in the kept tail before trimming facts.
        counter: Counts tokens the way the model's API bills them (default: o200k_base).
        tools: The tool schemas sent with the request (they count toward the target).

    Raises:
        ConfigError: a negative or zero size.
    """

    keep_last_groups: int | None = None
    keep_tokens: int | None = None
    target_tokens: int | None = None
    summary_cap_tokens: int | None = None
    mask_tail: bool = True
    counter: TokenCounter = field(default_factory=default_counter)
    tools: Sequence[Tool] = ()

    name = "digest"

    def __post_init__(self) -> None:
        check_sizes(
            "DigestCompressor",
            keep_last_groups=self.keep_last_groups,
            keep_tokens=self.keep_tokens,
            target_tokens=self.target_tokens,
            summary_cap_tokens=self.summary_cap_tokens,
        )
        for label in ("keep_last_groups", "keep_tokens", "target_tokens", "summary_cap_tokens"):
            value = getattr(self, label)
            if value is not None and (value < (0 if label == "keep_last_groups" else 1)):
                raise ConfigError(f"{label} must be positive, got {value!r}")

    @property
    def cap(self) -> int:
        """The summary's token ceiling in effect (before masking frees more room)."""
        return summary_cap(self.summary_cap_tokens, self.target_tokens, DIGEST_SHARE)

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Fold the oldest unprotected groups into the digest; never raises for run time."""
        return self.compress_with_originals(snapshot, {})

    def compress_with_originals(
        self, snapshot: MemorySnapshot, originals: Mapping[str, FunctionCallOutput]
    ) -> CompactResult:
        """``compress``, reading ``originals[call_id]`` instead of a masked output's placeholder
        (a ``LadderCompressor`` passes the outputs its masking step replaced)."""
        snapshot = snapshot_arg(self, snapshot)
        before = request_tokens(snapshot, self.counter, self.tools)
        measured = Measured(snapshot, before, Layout.of(snapshot.items))
        return self._compress_measured(measured, originals)

    def _compress_measured(
        self, measured: Measured, originals: Mapping[str, FunctionCallOutput]
    ) -> CompactResult:
        """``compress_with_originals`` for a snapshot already measured under this compressor's
        counter and tools (a ``LadderCompressor`` passes what it counted)."""
        snapshot, layout, before = measured.snapshot, measured.layout, measured.tokens
        target = self.target_tokens
        if target is not None and before <= target and not self._explicit_keep:
            # Already within the target (as the LLM summary decides): nothing to fold.
            return result(self.name, snapshot, None, self.counter, self.tools, tokens_before=before)
        # The summary the compaction before rendered is remembered parsed (_document).
        existing = parsed(snapshot.summary) if snapshot.summary else SummaryDocument()
        needs = FactsNeed(layout, existing, originals, self.counter, rules_once=True)
        split = self._split(measured, needs)
        kept, folded = layout.split(split.first_kept, split.masked)
        if not folded:
            return result(self.name, snapshot, None, self.counter, self.tools, tokens_before=before)
        needs(split.first_kept)
        # The post-condition (``compactkit.compressors._verify``): the folded span's must-keep
        # facts are in the summary, and nothing the span does not support is.
        merged, verification = verify(
            needs.doc,
            needs.new,
            _originals(folded, originals),
            previous=existing,
            check_facts=False,
        )
        # A value the verbatim tail sets anew is superseded in the summary, never "current".
        superseded = values_in(kept[layout.lead :], merged)
        merged = merged if superseded.is_empty else merged.merge(superseded)
        fitted = self._fit(merged, kept, split, needs.tokens)
        after = snapshot.model_copy(update={"items": tuple(kept), "summary": fitted.summary})
        if fitted.doc is not merged:  # must-keep facts the cap left out (the tail's newer
            # values supersede the span's own: those are no longer current, hence not must-keep)
            must = needs.new if superseded.is_empty else needs.new.merge(superseded)
            verification = replace(verification, dropped=unkept(fitted.doc, must))
        details = self._details(merged, fitted, needs, split, layout, verification)
        smaller = fitted.tokens < before  # else folding this little only grew the prompt
        if smaller:
            remember(fitted.doc, fitted.summary)  # the next compaction reads it back
        else:
            details["reason"] = "the digest would not be smaller than what it replaces"
        return result(
            self.name,
            snapshot,
            after if smaller else None,
            self.counter,
            self.tools,
            tokens_before=before,
            tokens_after=fitted.tokens if smaller else None,
            details=details,
        )

    def _details(
        self,
        merged: SummaryDocument,
        fitted: _Fitted,
        needs: FactsNeed,
        split: Split,
        layout: Layout,
        verification: Verification,
    ) -> dict[str, object]:
        """``stats.details`` of a fold: what it folded, kept and trimmed, the fact report, the
        post-condition's counts, and whether the target was met."""
        report = FactReport.compare(
            merged,
            fitted.doc,
            summary_tokens=fitted.merged_tokens
            if fitted.doc is merged
            else needs.tokens(fitted.doc),
            summary_cap_tokens=fitted.cap,
            masked_outputs=len(split.masked),
        )
        details: dict[str, object] = {
            "folded_groups": sum(1 for i in range(split.first_kept) if layout.protected[i] is None),
            "digest_entries": len(needs.new),
            "summary_entries": len(fitted.doc),
            "trimmed_entries": fitted.doc.trimmed - merged.trimmed,
            "summary_cap_tokens": fitted.cap,
            "masked_in_tail": len(split.masked),
            "facts": report.model_dump(),
            "verification": verification.details(),
        }
        if self.target_tokens is not None:
            details["target_tokens"] = self.target_tokens
            details["target_met"] = fitted.tokens <= self.target_tokens
        return details

    @property
    def _explicit_keep(self) -> bool:
        return self.keep_last_groups is not None or self.keep_tokens is not None

    def _split(self, measured: Measured, needs: FactsNeed) -> Split:
        """Where the verbatim tail starts and the summary's cap: shared by need (with a target
        and no keep rule, masking the tail to make room), else by the keep rule."""
        layout, target = measured.layout, self.target_tokens
        if target is not None and not self._explicit_keep:
            return split_by_need(
                layout,
                self.counter,
                target_tokens=target,
                ceiling=self.cap,
                need=needs,
                mask=masker(measured.snapshot.items) if self.mask_tail else None,
                hard_cap=self.summary_cap_tokens is not None,
                tools=self.tools,
            )
        return Split(layout.cut(self._keeper(layout)), self.cap, 0, {})

    def _fit(
        self,
        merged: SummaryDocument,
        kept: list[Item],
        split: Split,
        size: SummarySizer,
    ) -> _Fitted:
        """``merged`` trimmed to the cap, then by what the whole request is still over the
        target (``size(doc)``: the tokens of ``doc.render()``, counted incrementally; its
        ``message_tokens``, the summary message's)."""
        merged_tokens = size(merged)
        counter, target, cap = self.counter, self.target_tokens, split.cap
        if target is not None and (self._explicit_keep or not self.mask_tail):
            rest = sum(counter.count_item(i) for i in kept) + counter.count_overhead(self.tools)
            cap = max(1, min(cap, target - rest - counter.count_item(summary_message(""))))
        # The target is a wish, the budget the law: the user's goal and rules are never dropped
        # to meet a target (an explicit summary cap is the user's own word, and holds).
        keep = USER_WORDS if self.summary_cap_tokens is None else frozenset()
        trimmed, alike = merged, True  # (alike: the same trimmed without ``keep``)
        if merged_tokens > cap:
            trimmed, alike = merged.trim_keeping(cap, counter, keep=keep, measure=size)
        summary = trimmed.render()
        if keep and trimmed is not merged and size.message_tokens(trimmed) > self.cap:
            # ...but within the summary's own ceiling: a long session's goals and rules alone
            # can outgrow it, and kept whole they would outgrow any budget (the projection
            # never cuts a summary). Then they are trimmed like the rest, newest kept (the
            # same document when keeping them changed no step of the trim: not trimmed again).
            keep = frozenset()
            if alike:
                forget_rewritten()
            else:
                trimmed = merged.trim_to(cap, counter, measure=size)
                summary = trimmed.render()
        # The request is the kept items, the summary message and the overhead: the kept part is
        # counted once, each trim recounts only the summary.
        counted = split.kept_tokens
        if counted is None:
            counted = sum(counter.count_item(i) for i in kept)
        kept_tokens = counted + counter.count_overhead(self.tools)
        after_tokens = kept_tokens + size.message_tokens(
            trimmed, merged_tokens if trimmed is merged else None
        )
        for _attempt in range(4):  # exact: re-trim by what the whole request is still over
            if target is None or after_tokens <= target or trimmed.is_empty:
                break
            cap = max(1, size(trimmed) - (after_tokens - target))
            retrimmed = merged.trim_to(cap, counter, keep=keep, measure=size)
            if retrimmed == trimmed:  # only what it keeps is left: over the target
                break
            trimmed, summary = retrimmed, retrimmed.render()
            after_tokens = kept_tokens + size.message_tokens(trimmed)
        return _Fitted(trimmed, summary, cap, merged_tokens, after_tokens)

    def _keeper(self, layout: Layout) -> Keep:
        return newest_groups_keeper(
            layout,
            self.counter,
            keep_last_groups=self.keep_last_groups,
            keep_tokens=self.keep_tokens,
            target_tokens=self.target_tokens,
            summary_cap=self.cap,
            tools=self.tools,
        )


class _Fitted(NamedTuple):
    """The summary as fitted (``DigestCompressor._fit``)."""

    doc: SummaryDocument
    summary: str
    """``doc`` rendered."""
    cap: int
    """The cap it was last trimmed to."""
    merged_tokens: int
    """The untrimmed summary's tokens."""
    tokens: int
    """The whole request's tokens with it."""


def _originals(
    items: Sequence[Item], originals: Mapping[str, FunctionCallOutput]
) -> Sequence[Item]:
    """``items`` with each masked output replaced by its original, when known."""
    if not originals:
        return items
    return [originals.get(i.call_id, i) if isinstance(i, FunctionCallOutput) else i for i in items]


def masker(items: Sequence[Item]) -> Callable[[FunctionCallOutput, int], FunctionCallOutput]:
    """Placeholders for bulky kept outputs (``split_by_need``'s ``mask``), naming their tool."""
    names: dict[str, str] | None = None  # read from the items on the first output masked

    def mask(output: FunctionCallOutput, tokens: int) -> FunctionCallOutput:
        nonlocal names
        if tokens <= _MASK_MIN_TOKENS:
            return output
        if names is None:
            names = {i.call_id: i.name for i in items if isinstance(i, FunctionCall)}
        return mask_output(output, tool=names.get(output.call_id), tokens=tokens)

    return mask


_MASK_MIN_TOKENS = 200  # smaller outputs are not worth a placeholder
USER_WORDS = frozenset({"goal", "constraints"})
"""The trimming pools a target never drops: the user's goal and rules."""
