"""OpenAIChatLLM against respx-mocked OpenAI endpoints; retries and the circuit breaker.

openai>=3 sends through ``httpx2``, which respx does not patch; the SDK still accepts a classic
``httpx`` client, so the tests hand it one (``_client``) and respx sees every request.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
import respx

from compactkit.compressors.summary._resilience import (
    CallStats,
    CircuitBreaker,
    CircuitOpenError,
    Guard,
    RetryPolicy,
)
from compactkit.compressors.summary.llm import LLM, OpenAIChatLLM, parse_retry_after
from compactkit.errors import ConfigError, SummarizationError
from compactkit.testing import ScriptedLLM, block_network

API = "https://api.openai.com/v1"
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    with block_network():
        yield


def completion(content: str | None = "hello", finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content},
            }
        ],
    }


def make_llm(base_url: str = API, **kwargs: Any) -> OpenAIChatLLM:
    client = openai.OpenAI(
        api_key="sk-test", base_url=base_url, max_retries=0, http_client=httpx.Client()
    )
    async_client = openai.AsyncOpenAI(
        api_key="sk-test", base_url=base_url, max_retries=0, http_client=httpx.AsyncClient()
    )
    return OpenAIChatLLM("gpt-test", client=client, async_client=async_client, **kwargs)


def no_wait(**kwargs: Any) -> tuple[RetryPolicy, list[float]]:
    waits: list[float] = []

    async def async_sleep(seconds: float) -> None:
        waits.append(seconds)

    policy = RetryPolicy(
        initial_wait=0.5, jitter=0, sleep=waits.append, async_sleep=async_sleep, **kwargs
    )
    return policy, waits


# -- the request and a good answer ------------------------------------------------------------


@respx.mock
def test_sends_model_messages_and_output_cap() -> None:
    route = respx.post(f"{API}/chat/completions").respond(200, json=completion("summary"))
    llm = make_llm(max_output_tokens=321, temperature=0.0)
    assert isinstance(llm, LLM)
    assert llm.complete(MESSAGES) == "summary"
    body = json.loads(route.calls.last.request.content)
    assert body["model"] == "gpt-test"
    assert body["messages"] == MESSAGES
    assert body["max_completion_tokens"] == 321
    assert body["temperature"] == 0.0


@respx.mock
def test_custom_base_url_and_legacy_output_parameter() -> None:
    route = respx.post("http://127.0.0.1:8000/v1/chat/completions").respond(
        200, json=completion("ok")
    )
    llm = make_llm("http://127.0.0.1:8000/v1", output_tokens_parameter="max_tokens")
    assert llm.complete(MESSAGES) == "ok"
    body = json.loads(route.calls.last.request.content)
    assert body["max_tokens"] == 2048
    assert "max_completion_tokens" not in body
    assert "temperature" not in body


@respx.mock
def test_async_path() -> None:
    respx.post(f"{API}/chat/completions").respond(200, json=completion("async summary"))
    assert asyncio.run(make_llm().acomplete(MESSAGES)) == "async summary"


@respx.mock
def test_async_with_only_a_sync_client_runs_in_a_thread() -> None:
    respx.post(f"{API}/chat/completions").respond(200, json=completion("threaded"))
    client = openai.OpenAI(api_key="k", max_retries=0, http_client=httpx.Client())
    llm = OpenAIChatLLM("gpt-test", client=client)
    assert asyncio.run(llm.acomplete(MESSAGES)) == "threaded"


def test_only_an_async_client_refuses_sync_calls() -> None:
    client = openai.AsyncOpenAI(api_key="k", http_client=httpx.AsyncClient())
    with pytest.raises(ConfigError, match="only async_client"):
        OpenAIChatLLM("gpt-test", async_client=client).complete(MESSAGES)


def test_built_client_disables_sdk_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = OpenAIChatLLM("gpt-test", api_key="k", base_url="http://127.0.0.1:1/v1", timeout=5)
    client = llm._sync_client()
    assert client.max_retries == 0
    assert str(client.base_url).startswith("http://127.0.0.1:1/v1")
    assert llm._async() is not None and llm._async().max_retries == 0  # type: ignore[union-attr]


def test_missing_api_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIChatLLM("gpt-test")
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert OpenAIChatLLM("gpt-test")._api_key == "from-env"


@pytest.mark.parametrize(
    "kwargs", [{"max_output_tokens": 0}, {"timeout": 0}], ids=["output", "timeout"]
)
def test_bad_settings_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        OpenAIChatLLM("gpt-test", api_key="k", **kwargs)


# -- error mapping ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "transient"),
    [
        *[(status, False) for status in (400, 401, 403, 404, 422)],
        *[(status, True) for status in (408, 409, 429, 500, 502, 503)],
    ],
)
@respx.mock
def test_http_status_mapping(status: int, transient: bool) -> None:
    respx.post(f"{API}/chat/completions").respond(
        status, json={"error": {"message": f"boom {status}"}}
    )
    with pytest.raises(SummarizationError, match=f"HTTP {status}: boom {status}") as info:
        make_llm().complete(MESSAGES)
    assert info.value.transient is transient
    assert isinstance(info.value.__cause__, openai.APIStatusError)


@respx.mock
def test_rate_limit_carries_retry_after() -> None:
    respx.post(f"{API}/chat/completions").respond(
        429, headers={"Retry-After": "7"}, json={"error": {"message": "slow down"}}
    )
    with pytest.raises(SummarizationError) as info:
        make_llm().complete(MESSAGES)
    assert info.value.transient and info.value.retry_after == 7.0
    assert isinstance(info.value.__cause__, openai.RateLimitError)


@respx.mock
def test_server_can_say_do_not_retry() -> None:
    respx.post(f"{API}/chat/completions").respond(
        500, headers={"x-should-retry": "false"}, json={"error": {"message": "no"}}
    )
    with pytest.raises(SummarizationError) as info:
        make_llm().complete(MESSAGES)
    assert not info.value.transient


@respx.mock
def test_timeout_is_transient() -> None:
    respx.post(f"{API}/chat/completions").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(SummarizationError, match="timed out") as info:
        make_llm().complete(MESSAGES)
    assert info.value.transient
    assert isinstance(info.value.__cause__, openai.APITimeoutError)


@respx.mock
def test_connection_error_is_transient() -> None:
    respx.post(f"{API}/chat/completions").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(SummarizationError, match="cannot reach") as info:
        asyncio.run(make_llm().acomplete(MESSAGES))
    assert info.value.transient


@pytest.mark.parametrize(
    ("response", "message"),
    [
        ({"text": "not json{", "headers": {"content-type": "application/json"}}, "malformed"),
        ({"text": "<html>proxy</html>", "headers": {"content-type": "text/html"}}, "malformed"),
        ({"json": {"unexpected": True}}, "malformed"),
        ({"json": {"choices": []}}, "no choices"),
        ({"json": completion(None)}, "empty answer"),
        ({"json": completion("   \n")}, "empty answer"),
        ({"json": completion("half a summ", "length")}, "cut off at max_output_tokens=2048"),
        ({"json": completion("x", "content_filter")}, "content filter"),
    ],
    ids=["bad-json", "html", "no-choices-key", "no-choices", "null", "blank", "length", "filter"],
)
@respx.mock
def test_unusable_answers_are_permanent(response: dict[str, Any], message: str) -> None:
    respx.post(f"{API}/chat/completions").respond(200, **response)
    for run in (
        lambda llm: llm.complete(MESSAGES),
        lambda llm: asyncio.run(llm.acomplete(MESSAGES)),
    ):
        with pytest.raises(SummarizationError, match=message) as info:
            run(make_llm())
        assert not info.value.transient


@respx.mock
def test_refusal_is_permanent() -> None:
    body = completion(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that"
    respx.post(f"{API}/chat/completions").respond(200, json=body)
    with pytest.raises(SummarizationError, match="refused"):
        make_llm().complete(MESSAGES)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Thu, 01 Jan 1970 00:01:40 GMT"}, 40.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-1"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], seconds: float | None) -> None:
    assert parse_retry_after(headers, now=60.0) == seconds


# -- retries and the breaker around a real OpenAIChatLLM --------------------------------------


def guarded(llm: LLM, guard: Guard, stats: CallStats | None = None) -> str:
    return guard.call(lambda: llm.complete(MESSAGES), stats or CallStats())


@respx.mock
def test_429_then_success_waits_what_the_server_asked() -> None:
    route = respx.post(f"{API}/chat/completions")
    route.side_effect = [
        httpx.Response(429, headers={"Retry-After": "2"}, json={"error": {"message": "slow"}}),
        httpx.Response(200, json=completion("done")),
    ]
    policy, waits = no_wait()
    stats = CallStats()
    assert guarded(make_llm(), Guard(policy, None), stats) == "done"
    assert waits == [2.0]
    assert stats.requests == 2 and stats.waited == 2.0


@respx.mock
def test_persistent_500_gives_up_after_the_attempts() -> None:
    route = respx.post(f"{API}/chat/completions").respond(500, json={"error": {"message": "x"}})
    policy, waits = no_wait(attempts=4)
    with pytest.raises(SummarizationError, match="HTTP 500"):
        guarded(make_llm(), Guard(policy, None))
    assert route.call_count == 4
    assert waits == [0.5, 1.0, 2.0]  # exponential backoff without jitter


@respx.mock
def test_permanent_errors_are_not_retried() -> None:
    route = respx.post(f"{API}/chat/completions").respond(401, json={"error": {"message": "key"}})
    policy, waits = no_wait()
    with pytest.raises(SummarizationError, match="check the API key"):
        guarded(make_llm(), Guard(policy, None))
    assert route.call_count == 1 and waits == []


@respx.mock
def test_retry_after_beyond_the_limit_fails_now() -> None:
    route = respx.post(f"{API}/chat/completions").respond(
        429, headers={"Retry-After": "3600"}, json={"error": {"message": "quota"}}
    )
    policy, waits = no_wait(max_retry_after=60)
    with pytest.raises(SummarizationError) as info:
        guarded(make_llm(), Guard(policy, None))
    assert info.value.retry_after == 3600
    assert route.call_count == 1 and waits == []


@respx.mock
def test_async_retries_use_the_async_sleep() -> None:
    route = respx.post(f"{API}/chat/completions")
    route.side_effect = [
        httpx.ReadTimeout("slow"),
        httpx.Response(503, json={"error": {"message": "busy"}}),
        httpx.Response(200, json=completion("late")),
    ]
    policy, waits = no_wait()
    llm = make_llm()
    stats = CallStats()
    answer = asyncio.run(Guard(policy, None).acall(lambda: llm.acomplete(MESSAGES), stats))
    assert answer == "late"
    assert waits == [0.5, 1.0] and stats.requests == 3


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@respx.mock
def test_breaker_opens_fails_fast_and_recovers_half_open() -> None:
    route = respx.post(f"{API}/chat/completions")
    route.side_effect = [httpx.Response(500, json={"error": {"message": "down"}})] * 3 + [
        httpx.Response(500, json={"error": {"message": "still down"}}),
        httpx.Response(200, json=completion("back")),
    ]
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=3, cooldown=30, clock=clock)
    guard = Guard(no_wait(attempts=5)[0], breaker)
    llm = make_llm()

    with pytest.raises(CircuitOpenError, match="3 consecutive"):
        guarded(llm, guard)  # three failed requests, then the open circuit stops the retries
    assert route.call_count == 3 and breaker.state == "open"

    with pytest.raises(CircuitOpenError) as info:
        guarded(llm, guard)
    assert route.call_count == 3  # failed fast: no request
    assert info.value.retry_after == 30

    clock.now += 30
    assert breaker.state == "half_open"
    with pytest.raises(CircuitOpenError):
        guarded(llm, guard)  # the trial request fails: open again, no retry behind it
    assert route.call_count == 4 and breaker.state == "open"

    clock.now += 31
    assert guarded(llm, guard) == "back"
    assert breaker.state == "closed" and breaker.consecutive_failures == 0


def test_half_open_lets_one_trial_through() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failure_threshold=1, cooldown=5, clock=clock)
    breaker.record_failure()
    clock.now += 5
    breaker.before_request()  # the trial
    with pytest.raises(CircuitOpenError):
        breaker.before_request()  # a concurrent second caller fails fast
    breaker.record_success()
    breaker.before_request()
    assert "closed" in repr(breaker)


def test_foreign_exceptions_become_permanent_failures() -> None:
    llm = ScriptedLLM([KeyError("boom"), "never"])
    policy, waits = no_wait()
    with pytest.raises(SummarizationError, match="KeyError") as info:
        guarded(llm, Guard(policy, None))
    assert isinstance(info.value.__cause__, KeyError)
    assert len(llm.calls) == 1 and waits == []


def test_transient_errors_from_any_llm_are_retried() -> None:
    llm = ScriptedLLM([SummarizationError("flaky", transient=True), "fine"])
    policy, waits = no_wait()
    assert guarded(llm, Guard(policy, None)) == "fine"
    llm.assert_complete()
    assert waits == [0.5]


def test_retry_policy_validation_and_jitter() -> None:
    with pytest.raises(ConfigError):
        RetryPolicy(attempts=0)
    with pytest.raises(ConfigError):
        RetryPolicy(initial_wait=-1)
    with pytest.raises(ConfigError):
        CircuitBreaker(failure_threshold=0)
    assert RetryPolicy.never().attempts == 1
    policy = RetryPolicy(initial_wait=1, max_wait=4, jitter=0.5)
    for retry in range(1, 6):
        wait = policy.wait_for(retry, None)
        base = min(4, 2 ** (retry - 1))
        assert base <= wait <= base * 1.5
