"""Retries and a circuit breaker around an LLM call: the one place compactkit retries.

``RetryPolicy`` retries transient failures only (``SummarizationError.transient``), waiting what
the server asked for (``Retry-After``) or an exponential backoff. ``CircuitBreaker`` stops calling
a summarizer that keeps failing: after ``failure_threshold`` consecutive failed requests it opens
and every call fails fast, without a request, for ``cooldown`` seconds; then one trial request is
let through (half-open) and its result closes or re-opens the circuit.
"""

from __future__ import annotations

import asyncio
import math
import random
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, NoReturn, TypeAlias, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
)

from compactkit.errors import CircuitOpenError, ConfigError, SummarizationError

__all__ = ["BreakerState", "CircuitBreaker", "RetryPolicy"]

T = TypeVar("T")
BreakerState: TypeAlias = Literal["closed", "open", "half_open"]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a transient summarizer failure is retried.

    Args:
        attempts: Requests per call, the first included (1 disables retries).
        initial_wait: Backoff before the first retry, in seconds.
        multiplier: Backoff growth per retry.
        max_wait: Ceiling of one backoff wait.
        jitter: Up to this fraction of each backoff wait is added at random (0 in tests).
        max_retry_after: A server asking to wait longer than this (``Retry-After``) is not
            retried: the call fails now rather than stall the agent.
        sleep: How to wait (injectable for tests).
        async_sleep: How to wait in ``acompress`` (injectable for tests).
    """

    attempts: int = 3
    initial_wait: float = 1.0
    multiplier: float = 2.0
    max_wait: float = 20.0
    jitter: float = 0.25
    max_retry_after: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    async_sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise ConfigError(f"attempts must be a whole number, got {self.attempts!r}")
        if self.attempts < 1:
            raise ConfigError(f"attempts must be at least 1, got {self.attempts!r}")
        for name in ("initial_wait", "multiplier", "max_wait", "jitter", "max_retry_after"):
            value = getattr(self, name)
            # NaN passes every `< 0` check and would make every wait NaN: refused by finiteness.
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ConfigError(
                    f"RetryPolicy({name}={value!r}): must be a finite number of seconds >= 0 "
                    f"(a factor for multiplier), for example {name}=1.0"
                )

    @classmethod
    def never(cls) -> RetryPolicy:
        """One attempt, no retry."""
        return cls(attempts=1)

    def wait_for(self, retry_number: int, error: BaseException | None) -> float:
        """Seconds to wait before retry ``retry_number`` (1-based) after ``error``."""
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            return float(retry_after)
        backoff = min(self.max_wait, self.initial_wait * self.multiplier ** (retry_number - 1))
        return backoff * (1 + self.jitter * random.random())  # jitter, not crypto

    def _should_retry(self, error: BaseException) -> bool:
        if isinstance(error, CircuitOpenError) or not isinstance(error, SummarizationError):
            return False
        if not error.transient:
            return False
        return error.retry_after is None or error.retry_after <= self.max_retry_after

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        return self.wait_for(state.attempt_number, error)


class CircuitBreaker:
    """Fails fast while a summarizer keeps failing (thread-safe; share one per endpoint).

    Args:
        failure_threshold: Consecutive failed requests that open the circuit.
        cooldown: Seconds the circuit stays open before one trial request is allowed.
        clock: Monotonic seconds (injectable for tests).
    """

    def __init__(
        self,
        failure_threshold: int = 5,
        cooldown: float = 60.0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failure_threshold < 1:
            raise ConfigError(f"failure_threshold must be at least 1, got {failure_threshold!r}")
        if cooldown < 0:
            raise ConfigError(f"cooldown must not be negative, got {cooldown!r}")
        self.failure_threshold = failure_threshold
        self.cooldown = cooldown
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_running = False

    def __repr__(self) -> str:
        return (
            f"CircuitBreaker(failure_threshold={self.failure_threshold}, "
            f"cooldown={self.cooldown}, state={self.state!r})"
        )

    @property
    def state(self) -> BreakerState:
        """``closed`` (calls go through), ``open`` (they fail fast) or ``half_open`` (one trial
        call may go through)."""
        with self._lock:
            return self._state()

    @property
    def consecutive_failures(self) -> int:
        """Failed requests since the last success."""
        return self._failures

    def before_request(self) -> None:
        """Let a request through, or raise ``CircuitOpenError`` without making it."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return
            if state == "half_open" and not self._trial_running:
                self._trial_running = True
                return
            assert self._opened_at is not None
            remaining = max(0.0, self._opened_at + self.cooldown - self._clock())
            raise CircuitOpenError(
                f"circuit open after {self._failures} consecutive summarizer failures; "
                f"not calling it for another {remaining:.1f}s",
                transient=True,
                retry_after=remaining,
            )

    def record_success(self) -> None:
        """A request succeeded: close the circuit."""
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_running = False

    def record_failure(self) -> None:
        """A request failed: count it, and open the circuit at the threshold (or re-open it
        when the trial request failed)."""
        with self._lock:
            self._failures += 1
            if self._trial_running or self._failures >= self.failure_threshold:
                self._opened_at = self._clock()
            self._trial_running = False

    def reset(self) -> None:
        """Close the circuit and forget past failures."""
        self.record_success()

    def _state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._clock() - self._opened_at >= self.cooldown:
            return "half_open"
        return "open"


@dataclass
class CallStats:
    """What guarded calls cost: requests made and seconds spent waiting between them."""

    requests: int = 0
    waited: float = 0.0


class Guard:
    """Runs one logical call under a ``RetryPolicy`` and an optional ``CircuitBreaker``."""

    def __init__(self, retry: RetryPolicy, breaker: CircuitBreaker | None) -> None:
        self.retry = retry
        self.breaker = breaker

    def _stop(self) -> stop_after_attempt:
        return stop_after_attempt(self.retry.attempts)

    def _attempt_started(self, stats: CallStats) -> None:
        if self.breaker is not None:
            self.breaker.before_request()
        stats.requests += 1

    def _attempt_ended(self, error: SummarizationError | None) -> None:
        if self.breaker is not None:
            if error is None:
                self.breaker.record_success()
            else:
                self.breaker.record_failure()

    def _fail(self, exc: Exception) -> NoReturn:
        """Count a failed request and raise it as a ``SummarizationError`` (any other exception
        from a user's LLM is a permanent failure, its cause kept)."""
        if isinstance(exc, SummarizationError):
            self._attempt_ended(exc)
            raise exc
        error = SummarizationError(f"the summarizer raised {type(exc).__name__}: {exc}")
        self._attempt_ended(error)
        raise error from exc

    def call(self, request: Callable[[], T], stats: CallStats) -> T:
        """``request()`` with retries; raises ``SummarizationError`` when it finally fails."""

        def sleep(seconds: float) -> None:
            stats.waited += seconds
            self.retry.sleep(seconds)

        retrying = Retrying(
            sleep=sleep,
            stop=self._stop(),
            wait=self.retry._wait,
            retry=retry_if_exception(self.retry._should_retry),
            reraise=True,
        )
        for attempt in retrying:
            with attempt:
                self._attempt_started(stats)
                try:
                    result = request()
                except Exception as exc:
                    self._fail(exc)
                self._attempt_ended(None)
                return result
        raise AssertionError("unreachable: tenacity returns or re-raises")  # pragma: no cover

    async def acall(self, request: Callable[[], Awaitable[T]], stats: CallStats) -> T:
        """``await request()`` with retries (the async twin of ``call``)."""

        async def sleep(seconds: float) -> None:
            stats.waited += seconds
            await self.retry.async_sleep(seconds)

        retrying = AsyncRetrying(
            sleep=sleep,
            stop=self._stop(),
            wait=self.retry._wait,
            retry=retry_if_exception(self.retry._should_retry),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                self._attempt_started(stats)
                try:
                    result = await request()
                except Exception as exc:
                    self._fail(exc)
                self._attempt_ended(None)
                return result
        raise AssertionError("unreachable: tenacity returns or re-raises")  # pragma: no cover
