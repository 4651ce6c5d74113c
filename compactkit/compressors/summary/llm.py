"""The LLM behind a summary: a two-method protocol and its implementation on the ``openai`` SDK.

Anything with ``complete(messages) -> str`` and ``async acomplete(messages) -> str`` is an
``LLM``: ``messages`` is a list of Chat Completions messages (``{"role": ..., "content": ...}``).
``OpenAIChatLLM`` talks to OpenAI or any OpenAI-compatible server (vLLM, Ollama, LiteLLM, Azure
gateways) through the official SDK.

One attempt per call: retries and the circuit breaker live in one place, the compressor that
calls the LLM (``RetryPolicy``, ``CircuitBreaker``). SDK failures are mapped here, at the boundary,
to ``SummarizationError`` with ``transient`` (worth retrying) and ``retry_after`` (what the server
asked for)::

    transient   RateLimitError (429), InternalServerError (5xx), 408, 409,
                APITimeoutError, APIConnectionError
    permanent   400, 401, 403, 404, 422 and other 4xx, a malformed or empty answer,
                an answer cut off at max_output_tokens, a refusal or content filter
"""

from __future__ import annotations

import asyncio
import email.utils
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from compactkit.errors import ConfigError, SummarizationError

if TYPE_CHECKING:  # the SDK loads on first use, so `import compactkit` does not pay for it
    import openai

__all__ = ["LLM", "ChatMessage", "OpenAIChatLLM"]

ChatMessage: TypeAlias = Mapping[str, str]
"""A Chat Completions message: ``{"role": "system" | "user" | "assistant", "content": str}``."""

_TRANSIENT_STATUS = frozenset({408, 409, 429})


@runtime_checkable
class LLM(Protocol):
    """What a summarizer needs from a model: text in, text out, sync and async.

    Implementations raise ``SummarizationError`` (``transient=True`` when a retry may help) for
    failures; any other exception is treated as a permanent failure by the compressors.
    """

    def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The model's reply to ``messages``."""
        ...

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        """The model's reply to ``messages``, without blocking the event loop."""
        ...


class OpenAIChatLLM:
    """An ``LLM`` on the official ``openai`` SDK (Chat Completions), for any compatible server.

    When compactkit builds the SDK clients it sets ``max_retries=0``: retries happen once, in the
    compressor's ``RetryPolicy``. A client you pass in keeps its own retry setting, and its
    retries then run *inside* every attempt of ours (3 SDK retries x 3 of ours = up to 12
    requests per call); build it with ``max_retries=0`` unless you want that.

    Args:
        model: The model name the server knows (``"gpt-4.1-mini"``, ``"qwen3:8b"``, ...).
        client: An ``openai.OpenAI`` client to use instead of building one.
        async_client: An ``openai.AsyncOpenAI`` client to use instead of building one. When
            only ``client`` is given, ``acomplete`` runs it in a worker thread.
        base_url: The server's API root (``https://api.openai.com/v1`` for OpenAI itself);
            defaults to the SDK's (``OPENAI_BASE_URL`` or OpenAI).
        api_key: The key; defaults to ``OPENAI_API_KEY``. Servers that need none still need a
            non-empty string here (for example ``"unused"``).
        max_output_tokens: Ceiling on the reply's length, sent with every request.
        temperature: Sampling temperature; ``None`` sends none (reasoning models refuse one).
        timeout: Seconds before one request is abandoned (a transient failure).
        output_tokens_parameter: How the ceiling is named on the wire:
            ``"max_completion_tokens"`` (OpenAI's current name) or ``"max_tokens"`` (older
            OpenAI-compatible servers).
        extra_body: Extra JSON fields for servers that take more (``{"reasoning_effort": ...}``).
    """

    def __init__(
        self,
        model: str,
        *,
        client: openai.OpenAI | None = None,
        async_client: openai.AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_output_tokens: int = 2048,
        temperature: float | None = None,
        timeout: float = 60.0,
        output_tokens_parameter: Literal[
            "max_completion_tokens", "max_tokens"
        ] = "max_completion_tokens",
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not model:
            raise ConfigError("model must be a non-empty model name")
        if max_output_tokens <= 0:
            raise ConfigError(f"max_output_tokens must be positive, got {max_output_tokens!r}")
        if timeout <= 0:
            raise ConfigError(f"timeout must be positive seconds, got {timeout!r}")
        if client is None and async_client is None:
            api_key = api_key or os.environ.get("OPENAI_API_KEY")
            if not api_key:
                raise ConfigError(
                    "no API key: pass api_key= or set OPENAI_API_KEY (servers that need no "
                    "key still need a non-empty string, for example api_key='unused')"
                )
        self.model = model
        self.base_url = base_url
        self.max_output_tokens = max_output_tokens
        self.temperature = temperature
        self.timeout = timeout
        self.output_tokens_parameter = output_tokens_parameter
        self.extra_body = dict(extra_body) if extra_body else None
        self._api_key = api_key
        self._client = client
        self._async_client = async_client
        self._builds_clients = client is None and async_client is None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAIChatLLM(model={self.model!r}, base_url={self.base_url!r})"

    def complete(self, messages: Sequence[ChatMessage]) -> str:
        """One Chat Completions request; the reply's text.

        Raises:
            SummarizationError: the request failed or the answer is unusable (see the module
                docstring for which failures are ``transient``).
        """
        import openai

        client = self._sync_client()
        try:
            response = client.chat.completions.create(**self._request(messages))
        except (openai.OpenAIError, ValueError) as exc:
            raise _map_error(exc, self.model) from exc
        return _reply_text(response, self.model, self.max_output_tokens)

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        """``complete`` without blocking the event loop."""
        import openai

        client = self._async()
        if client is None:  # only a sync client was given: keep the loop free
            return await asyncio.to_thread(self.complete, messages)
        try:
            response = await client.chat.completions.create(**self._request(messages))
        except (openai.OpenAIError, ValueError) as exc:
            raise _map_error(exc, self.model) from exc
        return _reply_text(response, self.model, self.max_output_tokens)

    def _request(self, messages: Sequence[ChatMessage]) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            self.output_tokens_parameter: self.max_output_tokens,
        }
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.extra_body:
            request["extra_body"] = self.extra_body
        return request

    def _sync_client(self) -> openai.OpenAI:
        import openai

        with self._lock:
            if self._client is None:
                if not self._builds_clients:
                    raise ConfigError(
                        "OpenAIChatLLM was given only async_client=; use acomplete(), or pass "
                        "client= as well"
                    )
                self._client = openai.OpenAI(
                    api_key=self._api_key,
                    base_url=self.base_url,
                    timeout=self.timeout,
                    max_retries=0,  # retries live in the compressor's RetryPolicy
                )
            return self._client

    def _async(self) -> openai.AsyncOpenAI | None:
        import openai

        with self._lock:
            if self._async_client is None and self._builds_clients:
                self._async_client = openai.AsyncOpenAI(
                    api_key=self._api_key,
                    base_url=self.base_url,
                    timeout=self.timeout,
                    max_retries=0,
                )
            return self._async_client


def _reply_text(response: object, model: str, max_output_tokens: int) -> str:
    """The text of the first choice, or a permanent ``SummarizationError`` saying what is wrong."""
    from openai.types.chat import ChatCompletion

    if not isinstance(response, ChatCompletion) or not isinstance(response.choices, list):
        raise SummarizationError(
            f"malformed response from {model!r}: not a chat completion "
            f"(got {type(response).__name__}); check base_url points at an OpenAI-compatible API"
        )
    if not response.choices:
        raise SummarizationError(f"malformed response from {model!r}: no choices")
    choice = response.choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    refusal = getattr(message, "refusal", None)
    if refusal:
        raise SummarizationError(f"{model!r} refused to summarize: {refusal!r}")
    if choice.finish_reason == "content_filter":
        raise SummarizationError(f"{model!r}'s answer was withheld by its content filter")
    if choice.finish_reason == "length":
        raise SummarizationError(
            f"{model!r}'s answer was cut off at max_output_tokens={max_output_tokens}; raise "
            "max_output_tokens or lower the summary's token cap"
        )
    if not isinstance(content, str) or not content.strip():
        raise SummarizationError(f"{model!r} returned an empty answer")
    return content


def _map_error(exc: Exception, model: str) -> SummarizationError:
    """An SDK exception as a ``SummarizationError`` that says whether retrying may help."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return SummarizationError(f"request to {model!r} timed out", transient=True)
    if isinstance(exc, openai.APIConnectionError):
        return SummarizationError(f"cannot reach the server for {model!r}: {exc}", transient=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        transient = status_is_transient(exc)
        hint = _STATUS_HINTS.get(status, "")
        return SummarizationError(
            f"{model!r} answered HTTP {status}: {api_error_field(exc, 'message')}{hint}",
            transient=transient,
            retry_after=parse_retry_after(exc.response.headers) if transient else None,
        )
    if isinstance(exc, ValueError):  # the SDK could not decode the body (not JSON)
        return SummarizationError(f"malformed response from {model!r}: {exc}")
    return SummarizationError(f"request to {model!r} failed: {exc}")


_STATUS_HINTS = {
    401: " (check the API key)",
    403: " (the key may not have access to this model)",
    404: " (check the model name and base_url)",
}


def status_is_transient(exc: openai.APIStatusError) -> bool:
    """Whether retrying an HTTP error may help: 408/409/429 and 5xx, unless the server's
    ``x-should-retry`` header says otherwise (shared by the summarizer and the agent loop)."""
    transient = exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
    should_retry = exc.response.headers.get("x-should-retry")
    if should_retry in ("true", "false"):  # the server's explicit word wins
        transient = should_retry == "true"
    return transient


def api_error_field(exc: openai.APIStatusError, key: str) -> str | None:
    """``error.<key>`` of an OpenAI-style error body (``message``, ``code``); for ``message``
    the SDK's own message when the body has none."""
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get(key), str):
            return str(error[key])
    return exc.message if key == "message" else getattr(exc, key, None)


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The wait a response asks for, in seconds: ``retry-after-ms``, then ``Retry-After``
    (seconds or an HTTP date). ``None`` when absent or unreadable."""
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(header)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        when = email.utils.mktime_tz(parsed)
    except (TypeError, ValueError, OverflowError):
        return None
    return max(0.0, when - (time.time() if now is None else now))
