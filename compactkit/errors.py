"""The exceptions compactkit raises.

One small tree. Misuse (a wrong argument, a malformed transcript, an unknown model) is a
``ConfigError`` and is never retried; the others are run-time failures a caller may handle::

    CompactkitError
    ├── ConfigError            misuse: bad arguments, configuration or input
    │   ├── FormatError        input that is not a valid conversation in the named format
    │   ├── RecallUnsupportedError  the memory offers no recall(query)/expand(ref)
    │   └── ArchiveDroppedError  expand(ref) of items the archive's bound dropped
    ├── BudgetError            the irreducible part of a prompt does not fit the budget
    ├── SummarizationError     the summarizer failed (after retries) or gave an unusable answer
    │   └── CircuitOpenError   the summarizer kept failing; it is not called until a cool-down ends
    ├── StorageError           a memory or session store could not read or write
    │   ├── ConcurrencyError   another writer changed the session first; nothing was written
    │   │   ├── SessionBusyError  another run holds the session's lease (names it, and since when)
    │   │   └── LeaseLostError    this run's lease was taken over; its write was not applied
    │   └── SessionNotFoundError  no session with that id (also a KeyError)
    ├── EncodingUnavailableError  a tokenizer's rank file is not installed (a ConfigError too)
    ├── ModelError             the agent's model call failed (after retries)
    │   └── ContextOverflowError  the provider refused the prompt as too long, even compacted
    └── MaxStepsError          an agent run reached max_steps without a final answer

Backend exceptions are mapped at the boundary with ``raise ... from exc`` so the original
cause stays attached.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from datetime import datetime

__all__ = [
    "ArchiveDroppedError",
    "BudgetError",
    "CircuitOpenError",
    "CompactkitError",
    "ConcurrencyError",
    "ConfigError",
    "ContextOverflowError",
    "EncodingUnavailableError",
    "FormatError",
    "LeaseLostError",
    "MaxStepsError",
    "ModelError",
    "RecallUnsupportedError",
    "SessionBusyError",
    "SessionNotFoundError",
    "StorageError",
    "SummarizationError",
]


class CompactkitError(Exception):
    """Root of every exception compactkit raises on purpose."""


class ConfigError(CompactkitError, ValueError):
    """Misuse: a bad argument, configuration value or input. Fix the call; do not retry."""

    @classmethod
    def unknown_options(cls, owner: str, given: Iterable[str], known: Iterable[str]) -> ConfigError:
        """The error for keyword options ``owner`` does not take, naming the closest known one."""
        known = sorted(known)
        problems = []
        for name in given:
            close = difflib.get_close_matches(name, known, n=1)
            problems.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        return cls(f"{owner} has no option {', '.join(problems)}; its options: {', '.join(known)}")


class FormatError(ConfigError):
    """The input is not a valid conversation in the format it claims (or was detected as)."""


class RecallUnsupportedError(ConfigError):
    """The memory does not offer ``recall(query)`` and ``expand(ref)`` (see
    ``compactkit.memory.Recallable``); use a backend that does."""


class ArchiveDroppedError(ConfigError):
    """``expand(ref)`` names archived items the memory no longer holds: its archive bound
    (``max_archived_items`` / ``max_archived_bytes``) dropped them, oldest first."""


class EncodingUnavailableError(ConfigError):
    """The tokenizer a model needs cannot be loaded without a network download."""


class BudgetError(CompactkitError):
    """The part of a prompt that may never be dropped does not fit the token budget.

    Attributes:
        part: Which irreducible part is too large (for example ``"latest user input"``).
        tokens: Its size in tokens.
        budget: The budget it had to fit.
    """

    def __init__(self, message: str, *, part: str = "", tokens: int = 0, budget: int = 0) -> None:
        super().__init__(message)
        self.part = part
        self.tokens = tokens
        self.budget = budget


class SummarizationError(CompactkitError):
    """The summarizer failed after its retries, or its answer failed validation.

    Attributes:
        transient: Whether trying again later may succeed (rate limit, timeout, 5xx, lost
            connection). Permanent failures (bad request, authentication, an unusable answer)
            are never retried.
        retry_after: The wait in seconds the server asked for (``Retry-After``), when it did.
    """

    def __init__(
        self, message: str, *, transient: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.retry_after = retry_after


class StorageError(CompactkitError):
    """A memory or session store could not read or write; stored state is unchanged."""


class ConcurrencyError(StorageError):
    """Another writer changed the session since it was read; this write changed nothing."""


class SessionBusyError(ConcurrencyError):
    """Another run (in this or another process) holds the session's lease.

    Attributes:
        session_id: The session.
        holder: Who holds the lease (host, process id and a per-run tag unless you named it).
        since: When it took the lease (UTC), when the store knows.
    """

    def __init__(
        self, message: str, *, session_id: str, holder: str, since: datetime | None
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.holder = holder
        self.since = since


class LeaseLostError(ConcurrencyError):
    """This run's lease on the session was taken over by another run (it expired while this
    one stalled, or was broken by hand); the write that found out was not applied."""


class CircuitOpenError(SummarizationError):
    """The circuit breaker is open: the summarizer failed repeatedly and was not called."""


class SessionNotFoundError(StorageError, KeyError):
    """The store holds no session with this id."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no saved session with id {session_id!r}")
        self.session_id = session_id

    def __str__(self) -> str:
        return str(self.args[0])  # KeyError would show the message's repr


class ModelError(CompactkitError):
    """The agent loop's model call failed, after its retries; the session's memory is intact
    and the session can be resumed.

    Attributes:
        transient: Whether trying again later may succeed (rate limit, timeout, 5xx).
        status: The HTTP status, when the server answered.
        retry_after: The wait in seconds the server asked for, when it did.
    """

    def __init__(
        self,
        message: str,
        *,
        transient: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.status = status
        self.retry_after = retry_after
        self.attempts = 1  # requests sent before giving up (set by the agent loop)


class ContextOverflowError(ModelError):
    """The provider refused the prompt as longer than the model's context window.

    The agent loop forces a compaction and retries once; this is raised when that did not fit
    either (the memory keeps every item).

    Attributes:
        reported_tokens: The prompt size the provider reported, when its message said.
        projected_tokens: The prompt size by the local counter.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = 400,
        reported_tokens: int | None = None,
        projected_tokens: int | None = None,
    ) -> None:
        super().__init__(message, status=status)
        self.reported_tokens = reported_tokens
        self.projected_tokens = projected_tokens


class MaxStepsError(CompactkitError):
    """An agent run made ``max_steps`` model calls without a final answer.

    Every recorded tool call has its output, so the session can be run again (``run(None)``
    continues). ``result`` holds what the run did.
    """

    def __init__(self, message: str, *, steps: int, result: object = None) -> None:
        super().__init__(message)
        self.steps = steps
        self.result = result
