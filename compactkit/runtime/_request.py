"""An agent's request for a compaction: whether the policy honours it, and the plain answer.

A request makes the next step compact down to the policy's target, unless that could make no
progress:

* the context is already at or under the target (nothing to fold);
* the last compaction left the context at some size (its *floor*, which can sit above the target
  when the newest turn is kept whole), and it has grown by less than a quarter of the trigger's
  distance above the target since: a new compaction would fold next to nothing;
* the last compaction could not reach the target and the context has not grown since by the
  trigger's whole distance (``CompactPolicy.rearm_tokens``).

Each request runs at most one compaction, through the same compressor as any other (its breaker
and fallback included), so a model that keeps asking cannot make a loop of compactions: after
one, the next request is answered plainly until there is something new to fold.
"""

from __future__ import annotations

from dataclasses import dataclass

from compactkit.governance.policy import CompactPolicy

__all__ = ["RequestAnswer", "answer_request", "honoured"]


@dataclass(frozen=True)
class RequestAnswer:
    """Whether a request is taken, and what the agent is told."""

    accepted: bool
    text: str


def min_gain(policy: CompactPolicy) -> int:
    """How much the context must grow after a compaction before a request compacts again: a
    quarter of the trigger's distance above the target (a tenth of the target without a token
    trigger)."""
    target = policy.target_tokens()
    trigger = policy.trigger_tokens()
    band = trigger - target if trigger is not None else target * 2 // 5
    return max(1, band // 4)


def _share(tokens: int, policy: CompactPolicy) -> str:
    budget = policy.budget
    return f"{round(100 * tokens / budget)}%" if budget else f"{tokens:,} tokens"


def answer_request(
    policy: CompactPolicy | None,
    *,
    compressor: bool,
    used: int | None,
    rearm: int | None,
    floor: int | None,
    pending: bool,
) -> RequestAnswer:
    """The answer to a request, from the memory's last measured tokens (``used``)."""
    if not compressor:
        return RequestAnswer(False, "Compaction is off for this conversation: nothing to do.")
    if pending:
        return RequestAnswer(
            True, "A compaction is already requested: it runs before your next request."
        )
    if policy is None or used is None:
        return RequestAnswer(True, "Compaction requested: it runs before your next request.")
    target = policy.target_tokens()
    if used <= target:
        return RequestAnswer(
            False,
            f"Nothing to compact: the context is {_share(used, policy)} used, at or under the "
            f"compaction target of {_share(target, policy)}. Carry on.",
        )
    if rearm is not None and used < rearm:
        return RequestAnswer(
            False,
            "Not now: the last compaction could not get the context under its target (the "
            "newest work alone is too big), so another would make no progress until the "
            f"context grows past {_share(rearm, policy)} (it is {_share(used, policy)}).",
        )
    if floor is not None and used < floor + min_gain(policy):
        return RequestAnswer(
            False,
            f"Nothing to compact yet: the last compaction left the context at "
            f"{_share(floor, policy)} and it is {_share(used, policy)} now, too little new to "
            "fold. Ask again after more work.",
        )
    return RequestAnswer(
        True,
        f"Compaction requested: it runs before your next request, bringing the context from "
        f"{_share(used, policy)} to about {_share(target, policy)} (older turns are folded into "
        "a summary; the newest turn stays whole).",
    )


def honoured(
    policy: CompactPolicy | None, tokens: int, rearm: int | None, floor: int | None
) -> bool:
    """Whether a pending request compacts at a step measuring ``tokens`` (the same rules as
    ``answer_request``, checked again on the step's own measure)."""
    if policy is None:
        return True
    if tokens <= policy.target_tokens():
        return False
    if floor is not None and tokens < floor + min_gain(policy):
        return False
    return rearm is None or tokens >= rearm
