"""Provider-native compaction: OpenAI ``compaction`` items and Anthropic compaction blocks go
through converters, memories (SQL included), projection and compaction byte-exact, and
``ProviderCompactor`` delegates to the provider's endpoint — tested against in-process fakes of
the real endpoints whose answers are built from the SDKs' own types."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from anthropic.types.beta import BetaCompactionBlock, BetaMessage, BetaTextBlock, BetaUsage
from openai.types.responses import (
    CompactedResponse,
    ResponseCompactionItem,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from sql_support import Database, database, postgres  # noqa: F401

from compactkit import DigestCompressor, InMemoryMemory, items_to_chat
from compactkit.compressors import ProviderCompactor, export_portable
from compactkit.errors import FormatError
from compactkit.formats import (
    anthropic_to_items,
    items_to_anthropic,
    items_to_responses,
    responses_to_items,
    validate_anthropic,
    validate_responses,
)
from compactkit.integrations import compact_messages
from compactkit.items import Message as Message_
from compactkit.items import ProviderCompaction
from compactkit.sql import SQLMemory

SECRET = "gAAAAB" + "q" * 3000  # the provider's encrypted content: opaque, never read


def openai_compaction(item_id: str = "cmp_1") -> dict[str, Any]:
    item = ResponseCompactionItem(
        id=item_id, type="compaction", encrypted_content=SECRET, created_by="user_123"
    )
    return item.model_dump(mode="json", exclude_none=True)


def anthropic_block() -> dict[str, Any]:
    block = BetaCompactionBlock(
        type="compaction",
        content="## Goal\n- Migrate the billing service to Postgres 16.",
        encrypted_content="opaque-metadata",
        signature="sig-abc",
    )
    return block.model_dump(mode="json", exclude_none=True)


def coding_history(steps: int = 4, prefix: str = "call") -> list[dict[str, Any]]:
    """A Responses history: a task with a rule, tool calls writing files, a newer request."""
    out: list[dict[str, Any]] = [
        {"role": "user", "content": "Port src/billing.py to asyncio. Never touch tests/."}
    ]
    for n in range(steps):
        out.append(
            {
                "type": "function_call",
                "call_id": f"{prefix}_{n}",
                "name": "write_file",
                "arguments": json.dumps({"path": f"src/mod_{n}.py", "content": "x = 1"}),
            }
        )
        out.append(
            {"type": "function_call_output", "call_id": f"{prefix}_{n}", "output": "ok " * 300}
        )
    out.append({"role": "user", "content": "Now run the test suite."})
    return out


# --- pass-through ----------------------------------------------------------------------------


def test_a_responses_compaction_item_round_trips_byte_exact() -> None:
    history = [{"role": "user", "content": "hi"}, openai_compaction(), *coding_history(1)]
    items = responses_to_items(history)
    assert isinstance(items[1], ProviderCompaction) and items[1].pinned
    assert items_to_responses(items) == [
        {"type": "message", "role": "user", "content": "hi"},
        history[1],
        *items_to_responses(responses_to_items(coding_history(1))),
    ]
    assert items_to_responses(items)[1] == history[1]
    assert validate_responses(items_to_responses(items)) is not None


def test_sdk_objects_are_accepted_as_they_come() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("hi")
    sdk_item = ResponseCompactionItem(
        id="cmp_9", type="compaction", encrypted_content=SECRET, created_by="user_123"
    )
    memory.add_output_items([sdk_item])
    (stored,) = [i for i in memory.snapshot().items if isinstance(i, ProviderCompaction)]
    assert items_to_responses([stored]) == [sdk_item.model_dump(mode="json", exclude_none=True)]


def test_an_anthropic_compaction_block_round_trips_in_its_assistant_message() -> None:
    messages = [
        {"role": "user", "content": "Migrate billing."},
        {"role": "assistant", "content": [anthropic_block(), {"type": "text", "text": "On it."}]},
        {"role": "user", "content": "Go on."},
    ]
    items = anthropic_to_items(messages, system="You are careful.")
    assert [i.type for i in items] == ["message", "message", "compaction", "message", "message"]
    prompt = items_to_anthropic(items)
    assert prompt.system == "You are careful." and prompt.messages == messages
    validate_anthropic(prompt.messages)


@pytest.mark.parametrize("target", ["chat", "anthropic"])
def test_a_format_that_cannot_carry_it_names_the_item(target: str) -> None:
    items = responses_to_items([{"role": "user", "content": "hi"}, openai_compaction()])
    convert: Callable[..., Any] = items_to_chat if target == "chat" else items_to_anthropic
    with pytest.raises(FormatError, match="compaction"):
        convert(items)
    dropped: list[str] = []
    convert(items, lossy=True, on_drop=lambda item, why: dropped.append(item.type))
    assert dropped == ["compaction"]


def test_sql_memories_keep_it_byte_exact_for_a_fresh_reader(
    database: Database,  # noqa: F811
) -> None:
    history = [{"role": "user", "content": "hi"}, openai_compaction(), *coding_history(1)]
    writer = SQLMemory(database.url, "s1", table_prefix=database.prefix)
    writer.add_user_input("hi")
    writer.add_output_items([history[1]])
    reader = SQLMemory(database.url, "s1", table_prefix=database.prefix)  # what is stored
    assert items_to_responses(reader.snapshot().items)[1] == history[1]


def test_projection_and_the_digest_never_drop_or_read_it() -> None:
    history = [*coding_history(2, "old"), openai_compaction(), *coding_history(8, "new")]
    result = compact_messages(history, model="gpt-4", format="responses")  # an 8k window
    assert not [e for e in result.events if e.kind == "passthrough"]  # modelled, not passed
    sent = result.send
    assert history[len(coding_history(2))] in sent  # the compaction item is sent, untouched
    assert result.tokens <= result.budget
    memory = InMemoryMemory()
    memory.add_output_items(history)
    outcome = memory.compact(DigestCompressor(keep_last_groups=1))
    assert outcome.outcome == "compacted"
    kept = [i for i in memory.snapshot().items if isinstance(i, ProviderCompaction)]
    assert len(kept) == 1 and kept[0].payload == history[len(coding_history(2))]
    assert SECRET[:40] not in memory.summary  # its encrypted content never reaches a summary


# --- ProviderCompactor against fakes of the real endpoints -----------------------------------


class FakeOpenAICompact:
    """``POST /v1/responses/compact`` as OpenAI answers it (``CompactedResponse``)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.fail = fail

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/responses/compact"
        body = json.loads(request.content)
        self.bodies.append(body)
        if self.fail:
            return httpx2.Response(500, json={"error": {"message": "boom", "type": "server"}})
        users = [i for i in body["input"] if i.get("role") == "user"]
        compacted = CompactedResponse(
            id="cmp_resp_1",
            created_at=1_770_000_000,
            object="response.compaction",
            output=[ResponseCompactionItem(**openai_compaction("cmp_new"))],
            usage=ResponseUsage(
                input_tokens=1_234,
                input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
                output_tokens=321,
                output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
                total_tokens=1_555,
            ),
        ).model_dump(mode="json")
        # "a list of all user messages, followed by a single compaction item" (the SDK's doc;
        # its output union has no user-message model, so they are written as the API does)
        retained = [
            {
                "id": f"msg_{n}",
                "type": "message",
                "role": "user",
                "status": "completed",
                "content": [{"type": "input_text", "text": u["content"]}],
            }
            for n, u in enumerate(users)
        ]
        compacted["output"] = [*retained, *compacted["output"]]
        return httpx2.Response(200, json=compacted)

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(
            api_key="sk-test",
            base_url="http://fake-openai.test/v1",
            http_client=httpx2.Client(transport=httpx2.MockTransport(self.handler)),
            max_retries=0,
        )


def test_openai_compaction_keeps_the_newest_group_and_archives_what_it_replaced() -> None:
    fake = FakeOpenAICompact()
    memory = InMemoryMemory()
    memory.add_output_items(coding_history(4))
    before = memory.snapshot()
    result = memory.compact(ProviderCompactor(fake.client(), model="gpt-5.1-codex"))
    assert result.outcome == "compacted", result.error
    (body,) = fake.bodies
    assert body["model"] == "gpt-5.1-codex"
    assert {"role": "user", "content": "Now run the test suite."} not in body["input"]
    items = memory.snapshot().items
    assert items[-1].type == "message" and "Now run the test suite." in items[-1].text  # type: ignore[union-attr]
    assert sum(isinstance(i, ProviderCompaction) for i in items) == 1
    assert result.stats.details["usage"]["input_tokens"] == 1_234  # the provider's cost
    # nothing lost: every item sent for compaction is in the archive
    archived = {i.seq for i in memory.history()}
    assert {i.seq for i in before.items[:-1]} <= archived


def test_a_failing_provider_changes_nothing() -> None:
    memory = InMemoryMemory()
    memory.add_output_items(coding_history(3))
    before = memory.snapshot()
    result = memory.compact(ProviderCompactor(FakeOpenAICompact(fail=True).client(), model="m"))
    assert result.outcome == "failed" and "provider compaction failed" in (result.error or "")
    after = memory.snapshot()
    assert tuple(after.items) == tuple(before.items) and after.summary == before.summary


def test_export_portable_turns_the_compaction_into_a_plaintext_summary() -> None:
    memory = InMemoryMemory()
    memory.add_output_items(coding_history(4))
    memory.compact(ProviderCompactor(FakeOpenAICompact().client(), model="gpt-5.1-codex"))
    portable = export_portable(memory)
    assert not any(isinstance(i, ProviderCompaction) for i in portable.items)
    assert "Never touch tests/." in portable.summary and "src/mod_0.py" in portable.summary
    items_to_chat(portable.items)  # now any provider can take it
    items_to_anthropic(portable.items)
    moved = InMemoryMemory()
    moved.restore(portable)
    assert moved.summary == portable.summary


def test_export_portable_refuses_an_encrypted_compaction_without_its_archive() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("hi")
    memory.add_output_items([openai_compaction()])
    with pytest.raises(FormatError, match="encrypted"):
        export_portable(memory)


class FakeAnthropicCompact:
    """``POST /v1/messages`` with the ``compact_20260112`` edit, as Anthropic answers it."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        body = json.loads(request.content)
        (edit,) = body["context_management"]["edits"]
        assert edit["type"] == "compact_20260112" and edit["pause_after_compaction"] is True
        message = BetaMessage(
            id="msg_1",
            type="message",
            role="assistant",
            model=body["model"],
            content=[BetaCompactionBlock(**anthropic_block()), BetaTextBlock(type="text", text="")],
            stop_reason="compaction",
            stop_sequence=None,
            usage=BetaUsage(input_tokens=900, output_tokens=120),
        )
        return httpx2.Response(200, json=message.model_dump(mode="json"))

    def client(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            api_key="sk-ant-test",
            base_url="http://fake-anthropic.test",
            http_client=httpx2.Client(transport=httpx2.MockTransport(self.handler)),
            max_retries=0,
        )


def test_anthropic_compaction_through_the_context_edit() -> None:
    fake = FakeAnthropicCompact()
    memory = InMemoryMemory()
    history = anthropic_to_items(
        [
            {"role": "user", "content": "Migrate billing to Postgres 16. Keep the old schema."},
            {"role": "assistant", "content": "Reading the schema."},
            {"role": "user", "content": "Also update the docs."},
        ]
    )
    memory.add_output_items(history)
    result = memory.compact(ProviderCompactor(fake.client(), model="claude-sonnet-4-5"))
    assert result.outcome == "compacted", result.error
    (request,) = fake.requests
    assert "compact-2026-01-12" in request.headers["anthropic-beta"]
    items = memory.snapshot().items
    assert [i.type for i in items] == ["compaction", "message"]
    prompt = items_to_anthropic(items)
    assert prompt.messages[0] == {"role": "assistant", "content": [anthropic_block()]}
    assert result.stats.details["usage"]["input_tokens"] == 900


def test_the_agent_stores_a_compaction_the_provider_returned_and_sends_it_back() -> None:
    from compactkit import Agent
    from compactkit.testing import FakeOpenAI, text

    fake = FakeOpenAI([text("first answer"), text("second answer")])
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        answer = json.loads(fake.handle(request).content)
        if len(bodies) == 1:  # context_management compacted server-side during this request
            answer["output"].insert(0, openai_compaction("cmp_auto"))
        return httpx2.Response(200, json=answer)

    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://fake-openai.test/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
        max_retries=0,
    )
    session = Agent("gpt-4o", client, api="responses").new_session()
    assert session.run("Migrate billing.").output == "first answer"
    assert session.run("Go on.").output == "second answer"
    second = bodies[1]["input"]
    assert openai_compaction("cmp_auto") in second  # byte-exact, in place, on the next request
    at = second.index(openai_compaction("cmp_auto"))
    assert second[at + 1]["role"] == "assistant" and second[-1]["content"] == "Go on."


@pytest.mark.parametrize("fake", ["openai", "anthropic"])
def test_a_single_task_then_a_long_tool_loop_is_compacted_and_the_task_kept_verbatim(
    fake: str,
) -> None:
    task = "Port src/billing.py to asyncio. Never touch tests/."
    memory = InMemoryMemory()
    memory.add_output_items(coding_history(6)[:-1])  # the task, then the agent's own loop only
    client = FakeOpenAICompact().client() if fake == "openai" else FakeAnthropicCompact().client()
    result = memory.compact(ProviderCompactor(client, model="m"))
    assert result.outcome == "compacted", result.error
    items = memory.snapshot().items
    tasks = [i for i in items if isinstance(i, Message_) and i.role == "user"]
    assert [t.text for t in tasks] == [task]  # once, verbatim, the stored item itself
    assert tasks[0].seq == 1
    assert len(items) < 13 and items[-1].type == "function_call_output"  # the newest group
    if fake == "anthropic":  # Anthropic reads nothing before its block: the task comes after
        assert [i.type for i in items[:2]] == ["compaction", "message"]


def test_it_is_a_rung_of_the_ladder() -> None:
    from compactkit import LadderCompressor, MaskingCompressor

    fake = FakeOpenAICompact()
    memory = InMemoryMemory()
    memory.add_output_items(coding_history(12))
    ladder = LadderCompressor(
        target_tokens=1_500,
        steps=[MaskingCompressor(keep_last_groups=10), ProviderCompactor(fake.client(), model="m")],
    )
    result = memory.compact(ladder)
    assert result.outcome == "compacted", result.error
    assert [s["step"] for s in result.stats.details["steps"]] == ["mask", "provider"]
    assert len(fake.bodies) == 1
    assert sum(isinstance(i, ProviderCompaction) for i in memory.snapshot().items) == 1
    assert result.stats.tokens_after is not None and result.stats.tokens_after <= 1_500
