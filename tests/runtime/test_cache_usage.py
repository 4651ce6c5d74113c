"""The agent loop reports the provider's cached prompt tokens, and its prompts keep their prefix."""

from __future__ import annotations

import json
from typing import Any

from runtime_support import NO_WAIT

from compactkit import Agent
from compactkit.runtime import ModelCallEvent
from compactkit.runtime.events import Event, ProjectionEvent
from compactkit.testing import FakeOpenAI, _httpx, text, tool_call


def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: Which file.
    """
    return f"contents of {path}: " + "def parse(text): ... " * 20


def test_model_call_events_carry_the_cached_tokens_the_provider_reports() -> None:
    fake = FakeOpenAI([tool_call("read_file", {"path": "a.py"}), text("done")])
    http = _httpx()
    bodies: list[dict[str, Any]] = []

    def handler(request: Any) -> Any:
        bodies.append(json.loads(request.content))
        answer = json.loads(fake.handle(request).content)
        # A provider that served the whole previous request from its cache says so.
        cached = len(json.dumps(bodies[-2]["messages"])) // 4 if len(bodies) > 1 else 0
        answer["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
        return http.Response(200, json=answer)

    import openai

    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://fake-openai.test/v1",
        http_client=http.Client(transport=http.MockTransport(handler)),
        max_retries=0,
    )
    events: list[Event] = []
    agent = Agent("gpt-4o", client, tools=[read_file], retry=NO_WAIT, on_event=events.append)
    result = agent.new_session().run("Read a.py")
    assert result.output == "done"
    calls = [e for e in events if isinstance(e, ModelCallEvent)]
    assert [e.cached_tokens for e in calls] == [0, len(json.dumps(bodies[0]["messages"])) // 4]
    assert result.usage.cached_tokens == calls[1].cached_tokens
    # gpt-4o caches prompts: the second prompt is the first one plus the call and its output.
    first, second = (b["messages"] for b in bodies)
    assert second[: len(first)] == first
    projections = [e for e in events if isinstance(e, ProjectionEvent)]
    assert [e.cached_prefix_tokens > 0 for e in projections] == [False, True]
