"""``FakeOpenAI``: an OpenAI-compatible endpoint in process, answering from a script."""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = ["FakeOpenAI", "FakeReply", "HTTPFault", "http_error", "overflow", "text", "tool_call"]


@dataclass(frozen=True)
class FakeReply:
    """One scripted model reply: text, tool calls, or both.

    ``prompt_tokens`` is the usage to report; ``None`` reports a rough size of the request
    (its JSON length / 4), ``-1`` reports no usage at all.
    """

    text: str | None = None
    calls: tuple[tuple[str, str, str | None], ...] = ()
    """``(name, arguments JSON, call id or None)`` per call; ``None`` sends no id."""
    prompt_tokens: int | None = None
    completion_tokens: int = 5
    cached_tokens: int = 0
    """Prompt tokens to report as read from the provider's cache."""


@dataclass(frozen=True)
class HTTPFault:
    """A scripted HTTP error answer."""

    status: int
    message: str = "error"
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


Script: TypeAlias = "FakeReply | HTTPFault | str | BaseException | Callable[[dict[str, Any]], Any]"


def text(content: str, *, prompt_tokens: int | None = None) -> FakeReply:
    """A final answer."""
    return FakeReply(text=content, prompt_tokens=prompt_tokens)


def tool_call(
    name: str,
    arguments: dict[str, Any] | str | None = None,
    *more: tuple[str, dict[str, Any] | str],
    call_id: str | None = "",
    content: str | None = None,
    prompt_tokens: int | None = None,
) -> FakeReply:
    """A reply calling ``name`` (and each ``(name, arguments)`` in ``more``, in parallel).

    ``arguments`` may be a dict or raw JSON text (malformed on purpose, say). ``call_id=""``
    numbers the calls ``call_1``, ``call_2``, … across the script; ``None`` sends none.
    """
    calls = []
    for call_name, args in ((name, arguments), *more):
        raw = args if isinstance(args, str) else json.dumps(args or {})
        calls.append((call_name, raw, call_id))
    return FakeReply(text=content, calls=tuple(calls), prompt_tokens=prompt_tokens)


def http_error(
    status: int,
    message: str = "error",
    *,
    code: str | None = None,
    retry_after: float | None = None,
) -> HTTPFault:
    """An HTTP error answer (429 with ``retry_after`` seconds, 500, …)."""
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return HTTPFault(status, message, code, headers)


def overflow(tokens: int = 200_000, limit: int = 128_000) -> HTTPFault:
    """The provider's context-length refusal (HTTP 400, ``context_length_exceeded``)."""
    return HTTPFault(
        400,
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages.",
        "context_length_exceeded",
    )


class FakeOpenAI:
    """An in-process OpenAI-compatible endpoint that plays back a script.

    Args:
        replies: What to answer, in order: ``FakeReply`` (see ``text``, ``tool_call``), a plain
            string (a final answer), ``HTTPFault`` (see ``http_error``, ``overflow``), an
            exception to raise in the transport (``httpx2.ReadTimeout(...)``: the SDK reports a
            timeout), or a function of the request body returning one of those.
        model: The model name reported in answers.
        default: What to answer when the script is used up (``None``: fail the request loudly).

    Attributes:
        requests: Every request body received (parsed JSON), oldest first.
        paths: The URL path of each request.
    """

    def __init__(
        self,
        replies: Iterable[Script] = (),
        *,
        model: str = "gpt-4o",
        default: Script | None = None,
    ) -> None:
        self._script: deque[Script] = deque(replies)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.model = model
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []

    def add(self, *replies: Script) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(replies)

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet."""
        return len(self._script)

    def client(self, **options: Any) -> Any:
        """An ``openai.OpenAI`` wired to this endpoint (SDK retries off)."""
        import openai

        http = _httpx()
        transport = http.MockTransport(self.handle)
        options.setdefault("max_retries", 0)
        return openai.OpenAI(
            api_key="sk-test",
            base_url="http://fake-openai.test/v1",
            http_client=http.Client(transport=transport),
            **options,
        )

    def async_client(self, **options: Any) -> Any:
        """An ``openai.AsyncOpenAI`` wired to this endpoint (SDK retries off)."""
        import openai

        http = _httpx()
        transport = http.MockTransport(self.handle)
        options.setdefault("max_retries", 0)
        return openai.AsyncOpenAI(
            api_key="sk-test",
            base_url="http://fake-openai.test/v1",
            http_client=http.AsyncClient(transport=transport),
            **options,
        )

    @contextmanager
    def serve(self, host: str = "127.0.0.1") -> Iterator[str]:
        """Serve this endpoint over real HTTP on a loopback port, in a thread, while the
        ``with`` block runs; yields the base URL (``http://127.0.0.1:<port>/v1``) to give any
        OpenAI-compatible client (``OPENAI_BASE_URL``)."""
        import http.server

        http_lib = _httpx()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # the http.server naming
                length = int(self.headers.get("content-length") or 0)
                request = http_lib.Request(
                    "POST", f"http://{host}{self.path}", content=self.rfile.read(length)
                )
                response = fake.handle(request)
                body = response.content
                self.send_response(response.status_code)
                for name, value in response.headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet

        server = http.server.ThreadingHTTPServer((host, 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://{host}:{server.server_address[1]}/v1"
        finally:
            server.shutdown()
            server.server_close()
            thread.join()

    def handle(self, request: Any) -> Any:
        """Answer one HTTP request (the transport's handler)."""
        http = _httpx()
        body = json.loads(request.content or b"{}")
        path = request.url.path
        with self._lock:
            self.requests.append(body)
            self.paths.append(path)
            reply = self._script.popleft() if self._script else self.default
        if reply is None:
            return http.Response(
                500,
                json={
                    "error": {
                        "message": f"FakeOpenAI ran out of replies at request "
                        f"{len(self.requests)}; add more replies"
                    }
                },
                headers={"x-should-retry": "false"},
            )
        if isinstance(reply, BaseException):
            raise reply  # a transport failure: a timeout, a refused connection
        if callable(reply) and not isinstance(reply, FakeReply | HTTPFault | str):
            reply = reply(body)
        if isinstance(reply, str):
            reply = FakeReply(text=reply)
        if isinstance(reply, HTTPFault):
            error = {"message": reply.message, "type": "error", "code": reply.code}
            return http.Response(reply.status, json={"error": error}, headers=reply.headers)
        if not isinstance(reply, FakeReply):
            raise TypeError(f"FakeOpenAI cannot answer with {reply!r}")
        if path.endswith("/chat/completions"):
            return http.Response(200, json=self._chat(reply, body))
        if path.endswith("/responses"):
            return http.Response(200, json=self._responses(reply, body))
        return http.Response(404, json={"error": {"message": f"no route {path}"}})

    def _call_id(self, call_id: str | None) -> str | None:
        return f"call_{next(self._ids)}" if call_id == "" else call_id

    def _usage(self, reply: FakeReply, body: dict[str, Any]) -> int | None:
        if reply.prompt_tokens == -1:
            return None
        if reply.prompt_tokens is not None:
            return reply.prompt_tokens
        return len(json.dumps(body)) // 4

    def _chat(self, reply: FakeReply, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": self._call_id(call_id),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
                for name, arguments, call_id in reply.calls
            ]
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.calls else "stop",
                }
            ],
        }
        prompt = self._usage(reply, body)
        if prompt is not None:
            answer["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": prompt + reply.completion_tokens,
            }
            if reply.cached_tokens:
                answer["usage"]["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
        return answer

    def _responses(self, reply: FakeReply, body: dict[str, Any]) -> dict[str, Any]:
        output: list[dict[str, Any]] = []
        if reply.text is not None:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{len(self.requests)}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        for index, (name, arguments, call_id) in enumerate(reply.calls):
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{len(self.requests)}_{index}",
                    "call_id": self._call_id(call_id) or "",
                    "name": name,
                    "arguments": arguments,
                    "status": "completed",
                }
            )
        answer: dict[str, Any] = {
            "id": f"resp_{len(self.requests)}",
            "object": "response",
            "created_at": 1,
            "model": self.model,
            "status": "completed",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": output,
        }
        prompt = self._usage(reply, body)
        if prompt is not None:
            answer["usage"] = {
                "input_tokens": prompt,
                "output_tokens": reply.completion_tokens,
                "total_tokens": prompt + reply.completion_tokens,
                "input_tokens_details": {"cached_tokens": reply.cached_tokens},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
        return answer


def _httpx() -> Any:
    """The HTTP library the installed ``openai`` sends through (httpx2 from openai 3)."""
    try:
        import httpx2

        return httpx2
    except ImportError:  # openai < 3
        import httpx

        return httpx
