"""Calling the model through the official ``openai`` SDK: Chat Completions or Responses.

``ModelCaller`` turns a projected prompt into one request, retries provider faults (429, 5xx,
408/409, timeouts, lost connections) with one tenacity policy (``RetryPolicy``: the server's
``Retry-After`` or an exponential backoff), and turns the reply into items. Failures leave as
typed errors: ``ContextOverflowError`` when the provider refuses the prompt as too long (the loop
compacts and retries), ``ModelError`` otherwise (``transient`` says whether later may work).

Calls the model sent without an id get ``tool_step_<step>_<index>``, the same id on the call and
later on its output.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from compactkit.compressors.summary import RetryPolicy
from compactkit.compressors.summary.llm import (
    api_error_field,
    parse_retry_after,
    status_is_transient,
)
from compactkit.errors import ConfigError, ContextOverflowError, FormatError, ModelError
from compactkit.formats import (
    chat_to_items,
    items_to_chat,
    items_to_responses,
    responses_to_items,
    tools_to_chat,
    tools_to_responses,
)
from compactkit.items import FunctionCall, Item, Message, Tool
from compactkit.runtime._wire import WireCache
from compactkit.runtime.events import EventHandler, ModelRetryEvent, emit
from compactkit.runtime.result import Usage

if TYPE_CHECKING:
    import openai

__all__ = ["Api", "Client", "ModelCaller", "ModelReply", "renamed_calls"]

Api: TypeAlias = Literal["chat", "responses"]
Client: TypeAlias = "openai.OpenAI | openai.AsyncOpenAI"

_OVERFLOW = re.compile(
    r"context[_ ]length|context window|maximum context|too many tokens|prompt is too long|"
    r"input is too long|reduce the length",
    re.I,
)
_REPORTED = re.compile(
    r"(?:resulted in|requested|prompt has|input has|you have)\s+([\d,]+)\s+tokens", re.I
)


@dataclass(frozen=True)
class ModelReply:
    """One model reply, as items ready to store."""

    items: tuple[Item, ...]
    """The output items (messages, calls, reasoning), call ids filled in."""
    usage: Usage
    """What the provider reported for this call."""
    reported: bool
    """Whether the provider reported usage at all."""
    attempts: int
    """Requests sent, retries included."""

    @property
    def calls(self) -> tuple[FunctionCall, ...]:
        """The tool calls, in the order the model sent them."""
        return tuple(item for item in self.items if isinstance(item, FunctionCall))

    @property
    def text(self) -> str:
        """The assistant's text (its messages joined)."""
        return "".join(
            item.text
            for item in self.items
            if isinstance(item, Message) and item.role == "assistant"
        )


class ModelCaller:
    """Sends prompts for one model over one API, with the retry policy.

    Args:
        model: The model name sent to the provider.
        api: ``"chat"`` (Chat Completions) or ``"responses"``.
        client: An ``openai.OpenAI`` or ``openai.AsyncOpenAI``; ``None`` builds one from the
            environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``) with the SDK's own retries
            off, at the first call.
        settings: Extra request parameters (``temperature``, ``max_tokens``, …).
        retry: The retry policy for provider faults.
    """

    def __init__(
        self,
        model: str,
        api: Api,
        client: Client | None,
        *,
        settings: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        import openai  # the SDK loads when an agent is built, not with compactkit

        if api not in ("chat", "responses"):
            raise ConfigError(f"api must be 'chat' or 'responses', got {api!r}")
        if client is not None and not isinstance(client, openai.OpenAI | openai.AsyncOpenAI):
            raise ConfigError(
                f"client must be an openai.OpenAI or openai.AsyncOpenAI, got {type(client).__name__}"
            )
        reserved = {"model", "messages", "input", "tools", "stream"} & set(settings or {})
        if reserved:
            raise ConfigError(
                f"model_settings cannot set {sorted(reserved)}: the agent sends them itself"
            )
        self.model, self.api = model, api
        self.settings = dict(settings or {})
        self.retry = retry or RetryPolicy(attempts=4)
        self._sync = client if isinstance(client, openai.OpenAI) else None
        self._async = client if isinstance(client, openai.AsyncOpenAI) else None
        self._owned = client is None

    # -- clients -------------------------------------------------------------------------------

    def _sync_client(self) -> openai.OpenAI:
        import openai

        if self._sync is None:
            if not self._owned:
                raise ConfigError(
                    "the agent's client is an openai.AsyncOpenAI: use `await session.arun(...)`, "
                    "or pass an openai.OpenAI for session.run(...)"
                )
            self._sync = _build(openai.OpenAI)
        return self._sync

    def _async_client(self) -> openai.AsyncOpenAI | None:
        import openai

        if self._async is None and self._owned:
            self._async = _build(openai.AsyncOpenAI)
        return self._async  # None: a sync client, called in a worker thread

    # -- calls ---------------------------------------------------------------------------------

    def call(
        self,
        prompt: Sequence[Item],
        tools: Sequence[Tool],
        step: int,
        on_event: EventHandler | None = None,
        wire: WireCache | None = None,
    ) -> ModelReply:
        """Send ``prompt``; retries transient faults. Raises ``ModelError`` subclasses.

        ``wire`` (one per conversation) converts the prompt incrementally from the last one.
        """
        import openai

        client = self._sync_client()
        request = self._request(prompt, tools, wire)
        create = client.chat.completions.create if self.api == "chat" else client.responses.create
        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            try:
                return create(**request)
            except openai.OpenAIError as exc:
                error = _map_error(exc, self.model)
                error.attempts = attempts
                raise error from exc

        retrying = Retrying(sleep=self.retry.sleep, **self._retrying(step, on_event))
        response = retrying(attempt)
        return self._reply(response, step, attempts)

    async def acall(
        self,
        prompt: Sequence[Item],
        tools: Sequence[Tool],
        step: int,
        on_event: EventHandler | None = None,
        wire: WireCache | None = None,
    ) -> ModelReply:
        """``call`` without blocking the event loop (a sync client runs in a worker thread)."""
        import openai

        client = self._async_client()
        request = self._request(prompt, tools, wire)
        attempts = 0

        async def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            try:
                if client is None:
                    sync = self._sync_client()
                    create: Callable[..., Any] = (
                        sync.chat.completions.create
                        if self.api == "chat"
                        else sync.responses.create
                    )
                    return await asyncio.to_thread(create, **request)
                if self.api == "chat":
                    return await client.chat.completions.create(**request)
                return await client.responses.create(**request)
            except openai.OpenAIError as exc:
                error = _map_error(exc, self.model)
                error.attempts = attempts
                raise error from exc

        retrying = AsyncRetrying(sleep=self.retry.async_sleep, **self._retrying(step, on_event))
        response: Any = await retrying(attempt)
        return self._reply(response, step, attempts)

    # -- helpers -------------------------------------------------------------------------------

    def _retrying(self, step: int, on_event: EventHandler | None) -> dict[str, Any]:
        """What the sync and async retry loops share: when to stop, wait and retry."""
        return {
            "stop": stop_after_attempt(self.retry.attempts),
            "wait": self._wait,
            "retry": retry_if_exception(self._retryable),
            "before_sleep": self._before_sleep(step, on_event),
            "reraise": True,
        }

    def _request(
        self, prompt: Sequence[Item], tools: Sequence[Tool], wire: WireCache | None
    ) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, **self.settings}
        if wire is not None:
            converted = wire.convert(self.api, prompt)
        elif self.api == "chat":
            converted = items_to_chat(prompt, lossy=True)
        else:
            converted = items_to_responses(prompt, lossy=True)
        if self.api == "chat":
            request["messages"] = converted
            if tools:
                request["tools"] = tools_to_chat(tools)
        else:
            request["input"] = converted
            if tools:
                request["tools"] = tools_to_responses(tools)
        return request

    def _retryable(self, error: BaseException) -> bool:
        if not isinstance(error, ModelError) or isinstance(error, ContextOverflowError):
            return False
        if not error.transient:
            return False
        return error.retry_after is None or error.retry_after <= self.retry.max_retry_after

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        return self.retry.wait_for(state.attempt_number, error)

    def _before_sleep(
        self, step: int, on_event: EventHandler | None
    ) -> Callable[[RetryCallState], None]:
        def report(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            wait = state.next_action.sleep if state.next_action else 0.0
            emit(ModelRetryEvent(step, state.attempt_number, str(error), float(wait)), on_event)

        return report

    def _reply(self, response: Any, step: int, attempts: int) -> ModelReply:
        if self.api == "chat":
            items = self._chat_items(response, step)
            usage, reported = _chat_usage(response)
        else:
            items = self._responses_items(response, step)
            usage, reported = _responses_usage(response)
        return ModelReply(tuple(items), usage, reported, attempts)

    def _chat_items(self, response: Any, step: int) -> list[Item]:
        choices = getattr(response, "choices", None)
        if not choices:
            raise ModelError(f"{self.model!r} returned no choices")
        message = choices[0].message
        calls = []
        for index, call in enumerate(message.tool_calls or []):
            function = getattr(call, "function", None)
            if function is None:  # a custom (non-function) tool call: not modelled
                continue
            calls.append(
                {
                    "id": call.id or f"tool_step_{step}_{index}",
                    "type": "function",
                    "function": {"name": function.name, "arguments": function.arguments or "{}"},
                }
            )
        raw: dict[str, Any] = {"role": "assistant", "content": message.content}
        if calls:
            raw["tool_calls"] = calls
        elif message.content is None:
            raw["content"] = getattr(message, "refusal", None) or ""
        try:
            return chat_to_items([raw])
        except FormatError as exc:
            raise ModelError(
                f"{self.model!r} returned a reply compactkit cannot read: {exc}"
            ) from exc

    def _responses_items(self, response: Any, step: int) -> list[Item]:
        raw_items: list[dict[str, Any]] = []
        index = 0
        for output in getattr(response, "output", None) or []:
            raw = (
                output.model_dump(exclude_none=True)
                if hasattr(output, "model_dump")
                else dict(output)
            )
            kind = raw.get("type")
            if kind == "function_call":
                raw.pop("status", None)
                if not raw.get("call_id"):
                    raw["call_id"] = f"tool_step_{step}_{index}"
                index += 1
            elif kind == "message":
                raw.pop("status", None)
                raw["content"] = [
                    {"type": "output_text", "text": part.get("text", "")}
                    if part.get("type") == "output_text"
                    else part
                    for part in raw.get("content", [])
                ]
            elif kind not in ("reasoning", "compaction"):  # (a server-side compaction is kept
                continue  # byte-exact and sent back); built-in tool results are not modelled
            raw_items.append(raw)
        try:
            return responses_to_items(raw_items)
        except FormatError as exc:
            raise ModelError(
                f"{self.model!r} returned a reply compactkit cannot read: {exc}"
            ) from exc


def renamed_calls(items: Sequence[Item], step: int) -> list[Item]:
    """A reply's items with its calls' ids made unique (``tool_step_<step>_<n>``), for a server
    that reuses call ids ("call_0" every turn) the memory already holds."""
    out: list[Item] = []
    index = 0
    for item in items:
        if isinstance(item, FunctionCall):
            item = item.model_copy(update={"call_id": f"tool_step_{step}_{index}"})
            index += 1
        out.append(item)
    return out


def _build(kind: type[Any]) -> Any:
    import openai

    try:
        return kind(max_retries=0)  # the one retry policy is compactkit's
    except openai.OpenAIError as exc:
        raise ConfigError(
            f"cannot build an OpenAI client from the environment ({exc}): set OPENAI_API_KEY "
            "(and OPENAI_BASE_URL for another OpenAI-compatible server), or pass client="
        ) from exc


def _chat_usage(response: Any) -> tuple[Usage, bool]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return Usage(requests=1), False
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0, cached, 1), True


def _responses_usage(response: Any) -> tuple[Usage, bool]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return Usage(requests=1), False
    details = getattr(usage, "input_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return Usage(usage.input_tokens or 0, usage.output_tokens or 0, cached, 1), True


def _map_error(exc: openai.OpenAIError, model: str) -> ModelError:
    """An SDK exception as a typed error that says whether retrying may help."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return ModelError(f"request to {model!r} timed out", transient=True)
    if isinstance(exc, openai.APIConnectionError):
        return ModelError(f"cannot reach the server for {model!r}: {exc}", transient=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        message = api_error_field(exc, "message") or ""
        code = api_error_field(exc, "code")
        if status in (400, 413, 422) and (
            code == "context_length_exceeded" or _OVERFLOW.search(message)
        ):
            found = _REPORTED.search(message)
            reported = int(found.group(1).replace(",", "")) if found else None
            return ContextOverflowError(
                f"{model!r} refused the prompt as too long: {message}",
                status=status,
                reported_tokens=reported,
            )
        transient = status_is_transient(exc)
        return ModelError(
            f"{model!r} answered HTTP {status}: {message}",
            transient=transient,
            status=status,
            retry_after=parse_retry_after(exc.response.headers) if transient else None,
        )
    return ModelError(f"request to {model!r} failed: {exc}")
