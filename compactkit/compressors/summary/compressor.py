"""``SummaryCompressor``: fold old history into an anchored, sectioned summary written by an LLM.

What it folds, plus the previous summary, becomes the new summary — merged section by section
into the old one, never regenerated from it:

1. **Plan** (pure). Keep the newest groups (``keep_last_groups`` / ``keep_tokens`` /
   ``target_tokens``, as ``DigestCompressor`` does) and everything that may never be folded
   (instructions, pinned items, the latest user input, pending calls); fold the rest. Every
   folded item is written out for the summarizer — tool calls with their name and arguments,
   huge outputs cut in the middle with a note, never skipped — and the span is cut into chunks
   that fit ``summarizer_window_tokens`` after reserving room for the summary so far (reserved
   first, so it always reaches the summarizer), the exact facts and the answer.
2. **Call**, one request per chunk, in order: the summary so far, the chunk, and the chunk's
   exact facts (``digest_items``). The model answers with *only the update*: new entries under
   the summary's headings (``sections.SECTIONS``); "Current state" and "Next steps" in full.
3. **Apply** (pure). The answer is validated (not empty, not an error message; a prose answer
   without the headings becomes the "Current state" section); every
   exact fact it left out is added back verbatim to its section; the update is merged into the
   running summary with ``SummaryDocument.merge`` (constraints, decisions, files, errors… are
   extended; values superseded; state and next steps replaced) and trimmed to
   ``summary_cap_tokens``. The next chunk sees the merged summary.
4. **Validate** the result: not empty, within its cap, smaller than the summary and items it
   replaces.

Failures never raise and never lose state: after ``retry`` is exhausted, while ``breaker`` is
open, or when an answer is unusable, the input snapshot comes back unchanged with outcome
``failed`` and the cause — or ``fallback`` with the fallback compressor's result (for example a
``DigestCompressor``). An error text is never stored as a summary.

``compress`` and ``acompress`` share the plan and apply code; only the call differs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from compactkit.budget.profile import Prices
from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._args import check_sizes
from compactkit.compressors._plan import (
    Keep,
    Layout,
    default_counter,
    newest_groups_keeper,
    request_tokens,
    split_by_need,
    summary_cap,
)
from compactkit.compressors.base import MemoryCompressor
from compactkit.compressors.digest.compressor import FactsNeed, masker
from compactkit.compressors.sections import SummaryDocument
from compactkit.compressors.summary import _cost, _outcome
from compactkit.compressors.summary._answer import (
    _EXACT,
    _absent,
    _answer_text,
    _body,
)
from compactkit.compressors.summary._chunks import SummaryPlan, _Chunk, _Fold, _Plan, cut_chunks
from compactkit.compressors.summary._merge import absorb
from compactkit.compressors.summary._resilience import (
    CircuitBreaker,
    Guard,
    RetryPolicy,
)
from compactkit.compressors.summary.llm import LLM, ChatMessage
from compactkit.compressors.summary.prompt import _PROMPTS, PROMPT_VERSION, summary_prompt
from compactkit.errors import ConfigError, SummarizationError
from compactkit.items import (
    FunctionCallOutput,
    Item,
    Message,
    Tool,
)
from compactkit.items.snapshot import (
    CompactResult,
    MemorySnapshot,
    require_snapshot,
    summary_message,
)

__all__ = [
    "PROMPT_VERSION",
    "CircuitBreaker",
    "RetryPolicy",
    "SummaryCompressor",
    "summary_prompt",
]

logger = logging.getLogger("compactkit.summary")

_TEMPLATE_SLACK = 64  # the user template's own text, and per-message overhead

_MIN_CHUNK_TOKENS = 512
_MAX_UPDATE_TOKENS = 4000


class SummaryCompressor:
    """Fold old history and the previous summary into an anchored, sectioned LLM summary.

    How much stays verbatim: ``keep_last_groups`` newest groups, or the newest groups within
    ``keep_tokens``; with neither, ``target_tokens`` is shared by need (the summary gets what
    the exact facts of the folded span take, up to its cap; the tail the newest whole groups
    that fit the rest, bulky outputs in it masked before a fact is dropped); with no target
    either, the last 10 groups. Pinned items, the latest user input and pending calls always
    stay. (The same rule as ``DigestCompressor``, so either can stand in for the other.)

    Args:
        llm: The summarizer (``OpenAIChatLLM``, a test fake, anything with ``complete`` and
            ``acomplete``).
        keep_last_groups: Keep this many newest unprotected groups verbatim.
        keep_tokens: Keep the newest groups whose tokens fit this many.
        target_tokens: The whole-request size the result should fit.
        summary_cap_tokens: The summary's ceiling; default 60% of the target, at least 300
            tokens (2,000 without a target), and never more than a third of
            ``summarizer_window_tokens`` (the summary so far is in every request).
        summarizer_window_tokens: The most input one summarizer request may hold (prompt,
            summary so far, facts, conversation part) plus the room reserved for its answer.
            Set it to the summarizer model's usable input; larger spans are chunked.
        max_item_tokens: Longer items are cut in the middle (with a note) in the summarizer's
            input; their exact facts are still extracted from the whole item.
        counter: Counts tokens the way the model's API bills them (default: o200k_base).
        tools: The tool schemas sent with the request (they count toward the target).
        prompt_version: The summarizer prompt to use (see ``summary_prompt``).
        fallback: A compressor to run when the summarizer fails (outcome ``fallback``), for
            example a ``DigestCompressor``; without one the outcome is ``failed``.
        retry: Retries of transient failures (default: 3 attempts, exponential backoff,
            ``Retry-After`` honoured).
        breaker: Stops calling a failing summarizer; default a new ``CircuitBreaker()`` (5
            failed requests open it for 60 s). Share one between compressors that call the same
            endpoint.
        on_progress: Called with (chunks done, total chunks) before each summarizer request
            and when the last answer is merged (a progress bar over a long fold).
        prices: The summarizer model's prices, for the cost every compaction reports
            (``details["summarizer_cost"]``); default the prices of ``llm.model``'s profile,
            and no cost (``None``) when that model has none.

    Raises:
        ConfigError: a size that is not positive, an unknown prompt version, or a summarizer
            window too small for the summary cap.
    """

    name = "summary"

    def __init__(
        self,
        llm: LLM,
        *,
        keep_last_groups: int | None = None,
        keep_tokens: int | None = None,
        target_tokens: int | None = None,
        summary_cap_tokens: int | None = None,
        summarizer_window_tokens: int = 32_000,
        max_item_tokens: int = 2_000,
        counter: TokenCounter | None = None,
        tools: Sequence[Tool] = (),
        prompt_version: str = PROMPT_VERSION,
        fallback: MemoryCompressor | None = None,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        prices: Prices | None = None,
    ) -> None:
        for label, value, minimum in (
            ("keep_last_groups", keep_last_groups, 0),
            ("keep_tokens", keep_tokens, 1),
            ("target_tokens", target_tokens, 1),
            ("summary_cap_tokens", summary_cap_tokens, 1),
            ("summarizer_window_tokens", summarizer_window_tokens, 1),
            ("max_item_tokens", max_item_tokens, 1),
        ):
            check_sizes("SummaryCompressor", ["summarizer_window_tokens"], **{label: value})
            if value is not None and (isinstance(value, bool) or value < minimum):
                raise ConfigError(f"{label} must be positive, got {value!r}")
        if not callable(getattr(llm, "complete", None)):
            raise ConfigError(
                f"llm must implement the LLM protocol (complete(messages) -> str, and acomplete "
                f"for acompress), got {type(llm).__name__}; use compactkit.compressors.summary.llm.OpenAIChatLLM, or "
                "compactkit.testing.ScriptedLLM / FunctionLLM in tests"
            )
        self.llm = llm
        self.keep_last_groups = keep_last_groups
        self.keep_tokens = keep_tokens
        self.target_tokens = target_tokens
        self.summary_cap_tokens = summary_cap_tokens
        self.summarizer_window_tokens = summarizer_window_tokens
        self.max_item_tokens = max_item_tokens
        self.counter = counter or default_counter()
        self.tools = tuple(tools)
        self.prompt_version = prompt_version
        self.fallback = fallback
        self.retry = retry or RetryPolicy()
        self.breaker = breaker or CircuitBreaker()
        self.on_progress = on_progress
        if prices is not None and not isinstance(prices, Prices):
            raise ConfigError(
                f"prices must be a compactkit.budget.Prices, got {type(prices).__name__}"
            )
        self.prices = prices if prices is not None else _cost.prices_of(llm)
        # One answer (an update) needs no more than 4,000 tokens; the summary so far may take
        # up to a third of the summarizer's window (the rest is the prompt, a chunk, the answer).
        system = summary_prompt(prompt_version, cap_tokens=min(self.cap, _MAX_UPDATE_TOKENS))
        window_share = (summarizer_window_tokens - self.counter.count_text(system)) // 3
        window_share = max(1, window_share - _TEMPLATE_SLACK)
        self._update_cap = min(self.cap, _MAX_UPDATE_TOKENS, window_share)
        self._running_cap = min(self.cap, window_share)
        self._system = summary_prompt(prompt_version, cap_tokens=self._update_cap)
        self._system_tokens = self.counter.count_text(self._system)
        if summary_cap_tokens is not None and self._running_cap < summary_cap_tokens:
            raise ConfigError(
                f"summary_cap_tokens={summary_cap_tokens} does not fit a third of "
                f"summarizer_window_tokens={summarizer_window_tokens} (the summary so far is in "
                f"every request): lower the cap to {self._running_cap} or raise the window to "
                f"at least {summarizer_window_tokens + 3 * (summary_cap_tokens - window_share)}"
            )
        room = self._chunk_room(self._running_cap)
        if room < _MIN_CHUNK_TOKENS:
            raise ConfigError(
                f"summarizer_window_tokens={summarizer_window_tokens} leaves {room} tokens for "
                f"the conversation after the prompt ({self._system_tokens}), the summary so far "
                f"({self._running_cap}) and the answer ({self._update_cap}); raise it to at least "
                f"{summarizer_window_tokens - room + _MIN_CHUNK_TOKENS} or lower the cap"
            )

    def __repr__(self) -> str:
        return (
            f"SummaryCompressor(llm={self.llm!r}, cap={self.cap}, "
            f"prompt_version={self.prompt_version!r})"
        )

    @property
    def cap(self) -> int:
        """The summary's token ceiling in effect."""
        return summary_cap(self.summary_cap_tokens, self.target_tokens)

    # -- the two drivers: identical but for the call --------------------------------------------

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Fold the oldest unprotected groups into the summary; never raises for run time."""
        return self.compress_with_originals(snapshot, {})

    def compress_with_originals(
        self, snapshot: MemorySnapshot, originals: Mapping[str, FunctionCallOutput]
    ) -> CompactResult:
        """``compress``, reading ``originals[call_id]`` instead of a masked output's placeholder
        (a ``LadderCompressor`` passes the outputs its masking step replaced)."""
        plan = self._plan(snapshot, originals)
        if not plan.folded:
            return _outcome.unchanged(self, snapshot, plan)
        fold = _Fold(plan.previous)
        guard = Guard(self.retry, self.breaker)
        try:
            for number, chunk in enumerate(plan.chunks, 1):
                self._progress(number - 1, len(plan.chunks))
                messages = self._request(fold, chunk, number, len(plan.chunks))
                answer = guard.call(self._sender(fold, messages), fold.calls)
                absorb(fold, chunk, answer, cap=self._running_cap, counter=self.counter)
            self._progress(len(plan.chunks), len(plan.chunks))
            after = self._finish(snapshot, plan, fold)
        except SummarizationError as exc:
            return _outcome.failed(self, snapshot, plan, fold, exc, originals)
        return _outcome.done(self, snapshot, plan, fold, after)

    async def acompress(self, snapshot: MemorySnapshot) -> CompactResult:
        """``compress`` without blocking the event loop on the summarizer."""
        return await self.acompress_with_originals(snapshot, {})

    async def acompress_with_originals(
        self, snapshot: MemorySnapshot, originals: Mapping[str, FunctionCallOutput]
    ) -> CompactResult:
        """The async twin of ``compress_with_originals``."""
        plan = self._plan(snapshot, originals)
        if not plan.folded:
            return _outcome.unchanged(self, snapshot, plan)
        fold = _Fold(plan.previous)
        guard = Guard(self.retry, self.breaker)
        try:
            for number, chunk in enumerate(plan.chunks, 1):
                self._progress(number - 1, len(plan.chunks))
                messages = self._request(fold, chunk, number, len(plan.chunks))
                answer = await guard.acall(self._async_sender(fold, messages), fold.calls)
                absorb(fold, chunk, answer, cap=self._running_cap, counter=self.counter)
            self._progress(len(plan.chunks), len(plan.chunks))
            after = self._finish(snapshot, plan, fold)
        except SummarizationError as exc:
            return _outcome.failed(self, snapshot, plan, fold, exc, originals)
        return _outcome.done(self, snapshot, plan, fold, after)

    def plan(self, snapshot: MemorySnapshot) -> SummaryPlan:
        """What ``compress(snapshot)`` would fold and the requests it would send, without
        sending any (``Governor.preview``, ``compactkit compact --dry-run``)."""
        plan = self._plan(snapshot, {})
        fold = _Fold(plan.previous)
        total = len(plan.chunks)
        sizes = tuple(
            self._count_request(self._request(fold, chunk, number, total))
            for number, chunk in enumerate(plan.chunks, 1)
        )
        kept = MemorySnapshot.of(plan.kept, summary="")
        room = self.cap if plan.summary_room is None else plan.summary_room
        after = request_tokens(kept, self.counter, self.tools) + (room if plan.folded else 0)
        if not plan.folded:
            after = plan.tokens_before
        most_output = self._update_cap * len(sizes)
        return SummaryPlan(
            kept=tuple(plan.kept),
            folded=tuple(plan.folded),
            request_tokens=sizes,
            tokens_before=plan.tokens_before,
            tokens_after_estimate=after,
            answer_tokens_max=most_output,
            cost=_cost.cost(self.prices, input=sum(sizes), output=most_output),
        )

    def _progress(self, done: int, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(done, total)

    def _sender(self, fold: _Fold, messages: list[ChatMessage]) -> Callable[[], str]:
        tokens = self._count_request(messages)

        def send() -> str:
            fold.input_tokens += tokens
            answer = _answer_text(self.llm.complete(messages))
            _cost.answered(fold, tokens, answer, self.counter)
            return answer

        return send

    def _async_sender(
        self, fold: _Fold, messages: list[ChatMessage]
    ) -> Callable[[], Awaitable[str]]:
        tokens = self._count_request(messages)

        async def send() -> str:
            fold.input_tokens += tokens
            answer = _answer_text(await self.llm.acomplete(messages))
            _cost.answered(fold, tokens, answer, self.counter)
            return answer

        return send

    # -- plan ----------------------------------------------------------------------------------

    def _chunk_room(self, summary_tokens: int) -> int:
        """Tokens left for a chunk (conversation + facts) once the prompt, the summary so far
        and the answer are reserved."""
        reserved = self._system_tokens + _TEMPLATE_SLACK + summary_tokens + self._update_cap
        return self.summarizer_window_tokens - reserved

    def _plan(self, snapshot: MemorySnapshot, originals: Mapping[str, FunctionCallOutput]) -> _Plan:
        snapshot = require_snapshot(snapshot, "compress()")
        counter = self.counter
        layout = Layout.of(snapshot.items)
        before = request_tokens(snapshot, counter, self.tools)
        previous = (
            SummaryDocument.parse(snapshot.summary) if snapshot.summary else SummaryDocument()
        )
        over_target = self.target_tokens is None or before > self.target_tokens
        explicit_keep = self.keep_last_groups is not None or self.keep_tokens is not None
        kept: list[Item] = list(snapshot.items)
        folded: list[Item] = []
        first_kept = 0
        split = None
        if self.target_tokens is not None and over_target and not explicit_keep:
            # The same budgeting as the digest: the summary is given what the exact facts of the
            # span need (the answer must carry them), up to the cap.
            split = split_by_need(
                layout,
                counter,
                target_tokens=self.target_tokens,
                ceiling=self._running_cap,
                need=FactsNeed(layout, previous, originals, counter),
                mask=masker(snapshot.items),
                hard_cap=True,
                tools=self.tools,
            )
            first_kept = split.first_kept
            kept, folded = layout.split(first_kept, split.masked)
        elif over_target or explicit_keep:
            first_kept = layout.cut(self._keeper(layout))
            kept, folded = layout.split(first_kept)
        old_summary = (
            counter.count_item(summary_message(snapshot.summary)) if snapshot.summary else 0
        )
        folded_tokens = sum(counter.count_item(i) for i in folded)
        summary_tokens = counter.count_text(previous.render()) if snapshot.summary else 0
        if self._chunk_room(max(self._running_cap, summary_tokens)) < _MIN_CHUNK_TOKENS:
            # A summary far over the cap (written elsewhere): trim it now so a chunk still fits.
            previous = previous.trim_to(self._running_cap, counter)
            summary_tokens = self._running_cap
        room = self._chunk_room(max(self._running_cap, summary_tokens))
        chunks = cut_chunks(
            folded,
            room,
            originals,
            with_goal=not previous.entries("goal"),
            counter=self.counter,
            max_item_tokens=self.max_item_tokens,
            numbered=self.prompt_version != "summary-v1",
        )
        return _Plan(
            kept=kept,
            folded=folded,
            folded_groups=sum(1 for i in range(first_kept) if layout.protected[i] is None),
            previous=previous,
            chunks=chunks,
            tokens_before=before,
            replaced_tokens=old_summary + folded_tokens,
            folded_tokens=folded_tokens,
            summary_room=None if split is None else split.cap,
            masked=0 if split is None else len(split.masked),
        )

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

    # -- request and apply ----------------------------------------------------------------------

    def _request(self, fold: _Fold, chunk: _Chunk, number: int, total: int) -> list[ChatMessage]:
        """The messages of one summarizer request."""
        summary = fold.summary.render() if not fold.summary.is_empty else ""
        facts = _absent(chunk.facts, fold.summary)
        fold.facts_given += sum(len(facts.entries(key)) for key in _EXACT)
        _, template = _PROMPTS[self.prompt_version]
        user = template.format(
            summary=summary.strip() or "(empty: nothing has been summarized yet)",
            number=number,
            total=total,
            conversation=chunk.text,
            facts=_body(facts) or "(none)",
        )
        return [{"role": "system", "content": self._system}, {"role": "user", "content": user}]

    def _count_request(self, messages: Sequence[ChatMessage]) -> int:
        items = [Message(role="user", content=m["content"]) for m in messages]
        return self.counter.count(items).tokens

    def _finish(self, snapshot: MemorySnapshot, plan: _Plan, fold: _Fold) -> MemorySnapshot:
        """The new snapshot, once the summary passes validation.

        Raises:
            SummarizationError: the summary is empty, over its cap, or not smaller than what it
                replaces.
        """
        counter = self.counter
        cap = self._running_cap if plan.summary_room is None else plan.summary_room
        if self.target_tokens is not None:  # as the digest does: the target may leave less room
            rest = sum(counter.count_item(i) for i in plan.kept) + counter.count_overhead(
                self.tools
            )
            room = self.target_tokens - rest - counter.count_item(summary_message(""))
            cap = max(1, min(cap, room))
        if fold.summary.is_empty:
            raise SummarizationError("the summarizer produced an empty summary")
        fold.untrimmed = fold.summary
        summary = fold.summary.trim_to(cap, counter)
        if self.target_tokens is not None:  # exact: re-trim by what the request is still over
            for _attempt in range(4):
                after = snapshot.model_copy(
                    update={"items": tuple(plan.kept), "summary": summary.render()}
                )
                over = request_tokens(after, counter, self.tools) - self.target_tokens
                if over <= 0 or summary.is_empty:
                    break
                cap = max(1, counter.count_text(summary.render()) - over)
                summary = fold.summary.trim_to(cap, counter)
        fold.trimmed += summary.trimmed - fold.summary.trimmed
        fold.summary = summary
        if summary.is_empty:
            raise SummarizationError(
                f"target_tokens={self.target_tokens} leaves {cap} tokens for the summary after "
                "the items that stay; no entry fits"
            )
        text = summary.render()
        tokens = counter.count_text(text)
        if tokens > cap:
            raise SummarizationError(
                f"the summary is {tokens} tokens, over its cap of {cap} even after trimming"
            )
        new = counter.count_item(summary_message(text))
        if new >= plan.replaced_tokens:
            raise SummarizationError(
                f"the new summary ({new} tokens) is not smaller than what it replaces "
                f"({plan.replaced_tokens} tokens: the old summary and {len(plan.folded)} items); "
                "fold more history at once (a lower keep or target)"
            )
        return snapshot.model_copy(update={"items": tuple(plan.kept), "summary": text})

    # -- results --------------------------------------------------------------------------------
