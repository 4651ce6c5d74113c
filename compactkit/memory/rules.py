"""The rules every memory backend shares, for writing your own.

A backend that subclasses ``BaseMemory`` owns storage and locking; these pure helpers decide what
its writes, restores and compactions mean, so that it behaves exactly like the built-in ones
(``InMemoryMemory``, ``SQLMemory``, ``RedisMemory`` all use them):

* ``CallIndex`` — the call ids seen; ``check`` refuses an output without a known call, a second
  output for a call, and a reused call id (``ConfigError``).
* ``assign_seqs`` — numbers new items from the session's counter.
* ``plan_apply`` / ``rebase_point`` / ``Lineage`` — what ``apply(result)`` keeps, replaces and
  archives, and whether a result computed at an older version may be rebased over appends
  (``ConcurrencyError`` otherwise).
* ``plan_restore`` — the state ``restore(snapshot, history=...)`` loads.
* ``require_result``, ``require_seq``, ``not_active_error`` — the argument checks and errors.

Prove a backend built on them with ``compactkit.testing.conformance``.
"""

from compactkit.memory._inputs import CallIndex, assign_seqs
from compactkit.memory._rules import (
    ApplyPlan,
    Lineage,
    RestorePlan,
    check_version,
    not_active_error,
    plan_apply,
    plan_restore,
    rebase_point,
    require_result,
    require_seq,
)

__all__ = [
    "ApplyPlan",
    "CallIndex",
    "Lineage",
    "RestorePlan",
    "assign_seqs",
    "check_version",
    "not_active_error",
    "plan_apply",
    "plan_restore",
    "rebase_point",
    "require_result",
    "require_seq",
]
