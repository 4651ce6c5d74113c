"""``LadderCompressor``: cheap to expensive, re-counting after each step, until the target fits.

The default ladder is::

    mask (old bulky tool outputs → placeholders, oldest first, only as many as needed)
    → digest (fold old groups into the exact-fact digest, keeping what fits the target)
    → summary (an LLM summary, only when one is given with ``summary=``)
    → window (drop the oldest groups; the last resort, it forgets what it drops, so its
      result is kept only when it reaches the target)

After every step the whole request is counted again (instructions, summary message,
conversation, tool schemas, reply priming) and the ladder stops as soon as it fits
``target_tokens``. A step that fails (a dead summarizer) is skipped and the next one runs; when
a later step reaches the target the outcome is ``fallback`` and ``error`` says what failed.

All or nothing: when no step can reach the target — the instructions, the summary, the latest
user input, pinned items, pending calls and the newest group are never reduced — the outcome is
``failed``, the error names those parts and their sizes, and **the input snapshot is returned
unchanged**: a ladder that cannot meet its target loses nothing. The one exception: when what
is left after the steps is only those parts (everything else was folded into the summary), the
reduction is kept (``compacted``, ``details["target_unreachable"]`` says why the target was
missed): the newest group alone may be larger than a target, and refusing would stop every
compaction until it is no longer the newest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors._args import check_sizes, snapshot_arg
from compactkit.compressors._plan import (
    Layout,
    Measured,
    default_counter,
    irreducible,
    request_tokens,
    result,
)
from compactkit.compressors.base import MemoryCompressor
from compactkit.compressors.masking import MaskingCompressor
from compactkit.errors import ConfigError
from compactkit.items import FunctionCallOutput, Tool
from compactkit.items.snapshot import CompactResult, MemorySnapshot

if TYPE_CHECKING:  # loaded when the ladder first climbs: a call under its target never needs them
    pass

__all__ = ["LadderCompressor"]


@dataclass(frozen=True)
class LadderCompressor:
    """Run compressors cheap → expensive until the whole request fits ``target_tokens``.

    Args:
        target_tokens: The whole-request size to get under.
        steps: The compressors to run, in order; default mask → digest → (``summary``) →
            window, each sized from the target.
        summary: An LLM summary compressor to run after the digest (ignored with ``steps``).
        keep_last_groups: Groups the default masking step never masks.
        summary_cap_tokens: The default digest's summary ceiling (default: derived from the
            target, see ``DigestCompressor``).
        counter: Counts tokens the way the model's API bills them (default: o200k_base).
        tools: The tool schemas sent with the request (they count toward the target).
        forget: Whether the default steps end with the window, which forgets what it drops
            (ignored with ``steps``). A ``Governor``'s own ladder has none: its projector
            leaves out of a prompt what the budget cannot hold without deleting it, so a
            group no step could fold stays in the memory for a later compaction to fold.

    Raises:
        ConfigError: a target below 1 or an empty ``steps``.
    """

    target_tokens: int
    steps: Sequence[MemoryCompressor] | None = None
    summary: MemoryCompressor | None = None
    keep_last_groups: int = 10
    summary_cap_tokens: int | None = None
    counter: TokenCounter = field(default_factory=default_counter)
    tools: Sequence[Tool] = ()
    forget: bool = True

    name = "ladder"

    def __post_init__(self) -> None:
        check_sizes("LadderCompressor", ["target_tokens"], target_tokens=self.target_tokens)
        if isinstance(self.target_tokens, bool) or self.target_tokens < 1:
            raise ConfigError(f"target_tokens must be positive, got {self.target_tokens!r}")
        if self.steps is not None and not self.steps:
            raise ConfigError("steps must hold at least one compressor (or be None)")

    def rungs(self) -> list[MemoryCompressor]:
        """The compressors this ladder runs, in order."""
        if self.steps is not None:
            return list(self.steps)
        from compactkit.compressors.digest import DigestCompressor
        from compactkit.compressors.window import WindowedCompressor

        common: dict[str, Any] = {"counter": self.counter, "tools": self.tools}
        rungs: list[MemoryCompressor] = [
            MaskingCompressor(
                keep_last_groups=self.keep_last_groups, target_tokens=self.target_tokens, **common
            ),
            DigestCompressor(
                target_tokens=self.target_tokens,
                summary_cap_tokens=self.summary_cap_tokens,
                **common,
            ),
        ]
        if self.summary is not None:
            rungs.append(self.summary)
        if self.forget:
            rungs.append(WindowedCompressor(max_tokens=self.target_tokens, **common))
        return rungs

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        """Climb the ladder; never raises for run time (a failing step is recorded, skipped)."""
        snapshot = snapshot_arg(self, snapshot)
        counter, target = self.counter, self.target_tokens
        before = request_tokens(snapshot, counter, self.tools)
        details: dict[str, Any] = {"target_tokens": target, "steps": []}
        if before <= target:
            details["target_met"] = True
            return result(
                self.name,
                snapshot,
                None,
                counter,
                self.tools,
                tokens_before=before,
                details=details,
            )
        current, tokens, used, failures = self._climb(snapshot, before, details)
        return self._conclude(snapshot, before, current, tokens, used, failures, details)

    def _conclude(
        self,
        snapshot: MemorySnapshot,
        before: int,
        current: MemorySnapshot,
        tokens: int,
        used: list[str],
        failures: list[tuple[str, str, BaseException | None]],
        details: dict[str, Any],
    ) -> CompactResult:
        """The ladder's result: compacted (a fallback when a rung failed on the way), the
        reduction kept when only never-reducible parts remain over the target, else failed."""
        counter, target = self.counter, self.target_tokens
        details["target_met"] = tokens <= target
        error = self._short_of_target(before, current, tokens, used, failures, details)
        if error is not None:
            cause = failures[-1][2] if failures else None
            return result(
                self.name,
                snapshot,
                None,
                counter,
                self.tools,
                tokens_before=before,
                details=details,
                error=error,
                cause=cause,
            )
        done = result(
            f"{self.name}>{'+'.join(used)}",
            snapshot,
            current,
            counter,
            self.tools,
            tokens_before=before,
            tokens_after=tokens,
            details=details,
        )
        if failures:
            error = "; ".join(f"{name} failed: {why}" for name, why, _ in failures)
            return done.model_copy(
                update={"outcome": "fallback", "error": error, "cause": failures[-1][2]}
            )
        return done

    def _short_of_target(
        self,
        before: int,
        current: MemorySnapshot,
        tokens: int,
        used: list[str],
        failures: list[tuple[str, str, BaseException | None]],
        details: dict[str, Any],
    ) -> str | None:
        """When ``tokens`` is over the target: the error of a failed climb, or ``None`` when
        only parts no compressor may reduce remain (the reduction is kept, and said in
        ``details``). ``None`` too when the target is met."""
        target = self.target_tokens
        if tokens <= target:
            return None
        parts = sorted(irreducible(current, self.counter, self.tools), key=lambda p: -p[1])
        details["irreducible"] = dict(parts)
        listing = ", ".join(f"{name} ({size:,} tokens)" for name, size in parts)
        if used and tokens < before and sum(t for _, t in parts) >= tokens:
            # Everything that could be reduced was: what is left may never be (the newest
            # group, the latest input, pins). Keep the reduction rather than none at all.
            details["target_unreachable"] = (
                f"the parts no compressor may reduce take {tokens:,} tokens, over the target "
                f"{target:,}: " + listing
            )
            return None
        error = (
            f"cannot reach target {target:,} tokens: {tokens:,} remain after "
            f"{', '.join(used) or 'every step'}; what cannot be reduced: {listing}"
        )
        if failures:
            error += "; " + "; ".join(f"{name} failed: {why}" for name, why, _ in failures)
        return error

    def _climb(
        self, snapshot: MemorySnapshot, before: int, details: dict[str, Any]
    ) -> tuple[MemorySnapshot, int, list[str], list[tuple[str, str, BaseException | None]]]:
        """Run the rungs in order until the target is met: the snapshot reached, its tokens,
        the rungs that changed it and those that failed (each recorded in ``details``)."""
        from compactkit.compressors.digest import DigestCompressor
        from compactkit.compressors.window import WindowedCompressor

        counter, target = self.counter, self.target_tokens
        originals = {i.call_id: i for i in snapshot.items if isinstance(i, FunctionCallOutput)}
        current, tokens = snapshot, before
        # The default steps count with this ladder's counter and tools: each is handed what was
        # measured already (the tokens, the layout) instead of measuring the history again.
        measured: Measured | None = (
            Measured(snapshot, before, Layout.of(snapshot.items)) if self.steps is None else None
        )
        used: list[str] = []
        failures: list[tuple[str, str, BaseException | None]] = []
        for step in self.rungs():
            label = str(getattr(step, "name", type(step).__name__))
            try:
                outcome, masked = _run_rung(step, current, measured, originals)
            except Exception as exc:  # a step breaking its contract must not lose the input
                failures.append((label, f"{type(exc).__name__}: {exc}", exc))
                details["steps"].append({"step": label, "outcome": "failed", "error": str(exc)})
                continue
            record = {"step": label, "outcome": outcome.outcome, **outcome.stats.details}
            if outcome.outcome == "failed":
                failures.append((label, outcome.error or "failed", outcome.cause))
                record["error"] = outcome.error
            elif outcome.changed:
                counted = outcome.stats.tokens_after
                if masked is not None:
                    after = masked.tokens
                elif measured is not None and isinstance(step, DigestCompressor) and counted:
                    after = counted  # the digest counted it with this ladder's counter and tools
                else:
                    after = request_tokens(outcome.snapshot, counter, self.tools)
                if isinstance(step, WindowedCompressor) and after > target:
                    # A window forgets what it drops: worth it only to reach the target. Short
                    # of it, the groups it would drop are kept (nothing folded them anywhere).
                    record.update(outcome="not kept", why="forgets without reaching the target")
                else:
                    current, tokens = outcome.snapshot, after
                    measured = masked
                    used.append(label)
            record["tokens_after"] = tokens
            details["steps"].append(record)
            if tokens <= target:
                break
        return current, tokens, used, failures


def _run_rung(
    step: MemoryCompressor,
    current: MemorySnapshot,
    measured: Measured | None,
    originals: dict[str, FunctionCallOutput],
) -> tuple[CompactResult, Measured | None]:
    """One rung's result, and what it measured when it is a default step handed the ladder's
    measurement (``measured``); the original outputs go to a step that reads them."""
    from compactkit.compressors.digest import DigestCompressor

    if measured is not None and isinstance(step, MaskingCompressor):
        return step._compress_measured(measured)
    if measured is not None and isinstance(step, DigestCompressor):
        return step._compress_measured(measured, originals), None
    with_originals = getattr(step, "compress_with_originals", None)
    if callable(with_originals):
        outcome: CompactResult = with_originals(current, originals)
        return outcome, None
    return step.compress(current), None
