"""The exceptions compactkit raises.

One small tree. Misuse (a wrong argument, a malformed transcript, an unknown model) is a
``ConfigError`` and is never retried; the others are run-time failures a caller may handle::

    CompactkitError
    ├── ConfigError            misuse: bad arguments, configuration or input
    │   └── FormatError        input that is not a valid conversation in the named format
    ├── BudgetError            the irreducible part of a prompt does not fit the budget
    ├── SummarizationError     the summarizer failed (after retries) or gave an unusable answer
    │   └── CircuitOpenError   the summarizer kept failing; it is not called until a cool-down ends
    ├── StorageError           a memory or session store could not read or write
    │   ├── ConcurrencyError   another writer changed the session first; nothing was written
    │   └── SessionNotFoundError  no session with that id (also a KeyError)
    └── EncodingUnavailableError  a tokenizer's rank file is not installed (a ConfigError too)

Backend exceptions are mapped at the boundary with ``raise ... from exc`` so the original
cause stays attached.
"""

from __future__ import annotations

__all__ = [
    "BudgetError",
    "CircuitOpenError",
    "CompactkitError",
    "ConcurrencyError",
    "ConfigError",
    "EncodingUnavailableError",
    "FormatError",
    "SessionNotFoundError",
    "StorageError",
    "SummarizationError",
]


class CompactkitError(Exception):
    """Root of every exception compactkit raises on purpose."""


class ConfigError(CompactkitError, ValueError):
    """Misuse: a bad argument, configuration value or input. Fix the call; do not retry."""


class FormatError(ConfigError):
    """The input is not a valid conversation in the format it claims (or was detected as)."""


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


class CircuitOpenError(SummarizationError):
    """The circuit breaker is open: the summarizer failed repeatedly and was not called."""


class SessionNotFoundError(StorageError, KeyError):
    """The store holds no session with this id."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no saved session with id {session_id!r}")
        self.session_id = session_id

    def __str__(self) -> str:
        return str(self.args[0])  # KeyError would show the message's repr
