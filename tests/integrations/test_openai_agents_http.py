"""The Agents SDK's real ``OpenAIResponsesModel`` over a mocked HTTP transport, governed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from agents import (
    Agent,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from pydantic import BaseModel, Field

from compactkit import MemorySnapshot, Message, Tool
from compactkit.formats import responses_to_items, tools_from_responses, validate_responses
from compactkit.integrations import CompactkitSession
from compactkit.testing import block_network

MODEL = "gpt-4"  # the budget compactkit governs to: 6,021 input tokens


@pytest.fixture(autouse=True)
def _offline() -> Iterator[None]:
    set_tracing_disabled(True)
    with block_network():
        yield


@function_tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return "\n".join(f"{path}:{n}: value = {n}" for n in range(300))


def reply(number: int, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 1,
        "model": "gpt-4.1",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": output,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


class FakeResponsesAPI:
    """Answers ``POST /v1/responses``: ``reads`` tool calls, then a message; records requests."""

    def __init__(self, reads: int) -> None:
        self.reads = reads
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/responses"
        body = json.loads(request.content)
        self.requests.append(body)
        n = len(self.requests)
        if n <= self.reads:
            output = [
                {
                    "type": "function_call",
                    "id": f"fc_{n}",
                    "call_id": f"call_{n}",
                    "name": "read_file",
                    "arguments": json.dumps({"path": f"src/m{n}.py"}),
                    "status": "completed",
                }
            ]
        else:
            output = [
                {
                    "type": "message",
                    "id": f"msg_{n}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "all fixed", "annotations": []}],
                }
            ]
        return httpx2.Response(200, json=reply(n, output))


def fixer(api: FakeResponsesAPI, **options: Any) -> Agent[Any]:
    """The fixing agent, its model the SDK's ``OpenAIResponsesModel`` over ``api``."""
    client = AsyncOpenAI(
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(api)),
    )
    return Agent(
        name="fixer",
        instructions="Fix the failing tests.",
        model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client),
        tools=[read_file],
        **options,
    )


def test_every_request_of_a_long_tool_loop_fits_the_budget() -> None:
    api = FakeResponsesAPI(reads=15)
    store = SQLiteSession("http")
    session = CompactkitSession(store, model=MODEL)
    agent = fixer(api)
    result = asyncio.run(
        Runner.run(
            agent,
            "fix the tests",
            session=session,
            run_config=RunConfig(call_model_input_filter=session.input_filter()),
            max_turns=30,
        )
    )
    assert result.final_output == "all fixed"
    assert len(api.requests) == 16
    governor = session.governor
    budget = governor.projector.budget
    assert budget is not None
    counter = governor.projector.counter
    for body in api.requests:
        assert body["instructions"] == "Fix the failing tests."
        assert [tool["name"] for tool in body["tools"]] == ["read_file"]
        validate_responses(body["input"], mode="raise")  # every call with its output
        # What went over the wire, counted as compactkit counts it, fit the budget.
        items = [Message(role="system", content=body["instructions"])]
        items += responses_to_items(body["input"])
        tools = tools_from_responses(body["tools"])
        assert counter.count(items, tools=tools).tokens <= budget
    # The second request is the real round trip: the user input, the call, its output.
    second = api.requests[1]["input"]
    assert [item.get("type", "message") for item in second] == [
        "message",
        "function_call",
        "function_call_output",
    ]
    # Later requests hold the summary instead of the oldest reads; the session kept them all.
    assert MemorySnapshot.from_items(responses_to_items(api.requests[-1]["input"])).summary
    stored = asyncio.run(store.get_items())
    assert sum(item.get("type") == "function_call_output" for item in stored) == 15


def test_reported_usage_calibrates_the_count_through_the_hooks() -> None:
    """A provider that counts 30% more than compactkit: the hooks feed its numbers back, the
    governor calibrates, and the requests it reported on stay within the real budget."""
    counter = CompactkitSession(SQLiteSession("c"), model=MODEL).governor.counter

    class Overcounting(FakeResponsesAPI):
        def __init__(self, reads: int) -> None:
            super().__init__(reads)
            self.reported: list[int] = []

        def __call__(self, request: httpx2.Request) -> httpx2.Response:
            response = super().__call__(request)
            body = self.requests[-1]
            items = [Message(role="system", content=body["instructions"])]
            counted = counter.count([*items, *responses_to_items(body["input"])]).tokens
            data = json.loads(response.content)
            data["usage"]["input_tokens"] = int(counted * 1.3)
            data["usage"]["total_tokens"] = int(counted * 1.3) + 5
            self.reported.append(int(counted * 1.3))
            return httpx2.Response(200, json=data)

    api = Overcounting(reads=15)
    session = CompactkitSession(SQLiteSession("calibrated"), model=MODEL)
    governed = session.input_filter()
    agent = fixer(api)
    asyncio.run(
        Runner.run(
            agent,
            "fix the tests",
            session=session,
            run_config=RunConfig(call_model_input_filter=governed),
            hooks=governed.hooks(),
            max_turns=30,
        )
    )
    assert governed.governor.calibration > 1.2  # learned from the reported usage
    budget = governed.governor.projector.budget
    assert budget is not None
    # Once calibrated (a few calls in), what the provider counts fits the budget too.
    assert max(api.reported[5:]) <= budget


class Verdict(BaseModel):
    """What was fixed."""

    summary: str = Field(
        description="What was fixed. "
        + " ".join(
            f"Rule {n}: name the test, the module and the line that changed, section {n}."
            for n in range(100)
        )
    )


class StructuredResponsesAPI(FakeResponsesAPI):
    """The same endpoint, whose final message is a ``Verdict`` as JSON."""

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        response = super().__call__(request)
        body = json.loads(response.content)
        for item in body["output"]:
            if item["type"] == "message":
                item["content"][0]["text"] = json.dumps({"summary": "all fixed"})
        return httpx2.Response(200, json=body)


def test_handoffs_and_the_output_schema_count_in_the_budget() -> None:
    # The SDK sends a tool per handoff and the output type's JSON schema with every call,
    # beside the agent's tools: ~1,000 tokens here, counted by the filter.
    api = StructuredResponsesAPI(reads=15)
    session = CompactkitSession(SQLiteSession("handoffs"), model=MODEL)
    specialists = [
        Agent(name=f"specialist {n}", handoff_description=f"Knows module {n} well. " * 20)
        for n in range(3)
    ]
    agent = fixer(api, handoffs=specialists, output_type=Verdict)
    result = asyncio.run(
        Runner.run(
            agent,
            "fix the tests",
            session=session,
            run_config=RunConfig(call_model_input_filter=session.input_filter()),
            max_turns=30,
        )
    )
    assert result.final_output == Verdict(summary="all fixed")
    budget = session.governor.projector.budget
    assert budget is not None
    counter = session.governor.projector.counter
    for body in api.requests:
        tools = tools_from_responses(body["tools"])
        assert len(tools) == 4  # read_file and a tool per handoff
        schema = body["text"]["format"]  # the response format: counted as one function's schema
        tools.append(Tool(name=schema["name"], parameters=schema["schema"]))
        items = [Message(role="system", content=body["instructions"])]
        items += responses_to_items(body["input"])
        assert counter.count(items, tools=tools).tokens <= budget
