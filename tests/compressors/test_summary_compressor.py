"""SummaryCompressor: anchored, merged summaries; what reaches the summarizer; every failure mode.

HTTP-level tests run the real ``OpenAIChatLLM`` against respx-mocked endpoints (openai>=3 sends
through httpx2, which respx does not patch, so the SDK gets a classic httpx client).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
import respx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors.digest import DigestCompressor
from compactkit.compressors.masking import MaskingCompressor
from compactkit.compressors.sections import SummaryDocument
from compactkit.compressors.summary import (
    PROMPT_VERSION,
    CircuitBreaker,
    RetryPolicy,
    SummaryCompressor,
    summary_prompt,
)
from compactkit.compressors.summary.llm import OpenAIChatLLM
from compactkit.errors import ConfigError, SummarizationError
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.groups import group_items
from compactkit.items.snapshot import CompactResult, MemorySnapshot, summary_message
from compactkit.testing import FunctionLLM, ScriptedLLM, block_network

API = "https://api.openai.com/v1/chat/completions"
CONSTRAINT = "Never push to main; open a pull request instead."
COUNTER = TiktokenCounter("o200k_base")


@pytest.fixture(autouse=True)
def _no_network() -> Iterator[None]:
    with block_network():
        yield


# -- building histories and answers -------------------------------------------------------------


def session(turns: int = 8, *, output_lines: int = 40) -> list[Item]:
    """A coding session: instructions, a goal, a constraint, then ``turns`` tool round trips."""
    items: list[Item] = [
        Message(role="system", content="You are a careful coding agent."),
        Message(role="user", content="Make the test suite of acme-api pass again."),
        Message(role="assistant", content="I'll start by running the tests."),
        Message(role="user", content=CONSTRAINT),
    ]
    for turn in range(turns):
        call_id = f"call_{turn}"
        items.append(
            FunctionCall(
                call_id=call_id,
                name="bash",
                arguments=json.dumps({"command": f"pytest tests/test_mod{turn}.py -q"}),
            )
        )
        noise = "\n".join(f"collected line {n} of turn {turn}" for n in range(output_lines))
        items.append(
            FunctionCallOutput(
                call_id=call_id,
                output=f"{noise}\nFAILED tests/test_mod{turn}.py::test_x - KeyError: 'k{turn}'",
            )
        )
        items.append(Message(role="assistant", content=f"Turn {turn}: the key k{turn} is unset."))
    items.append(Message(role="user", content="Keep going."))
    return items


UPDATE = """\
## Goal
- Make the test suite of acme-api pass again.

## Constraints and instructions (verbatim)
- "Never push to main; open a pull request instead."

## Decisions and why
- Fix missing keys in the config loader, because every failure is a KeyError.

## Current state
- Several test modules fail with KeyError.

## Next steps
- Add the missing keys, then re-run pytest.
"""


def reply_to(request: list[dict[str, str]], text: str = UPDATE) -> str:
    return text


def user_text(call: list[dict[str, str]]) -> str:
    return call[-1]["content"]


def part(call: list[dict[str, str]], tag: str) -> str:
    match = re.search(rf"<{tag}[^>]*>\n(.*?)\n</{tag}>", user_text(call), re.DOTALL)
    assert match, f"no <{tag}> in the request"
    return match.group(1)


def no_wait(**kwargs: Any) -> tuple[RetryPolicy, list[float]]:
    waits: list[float] = []

    async def async_sleep(seconds: float) -> None:
        waits.append(seconds)

    return RetryPolicy(jitter=0, sleep=waits.append, async_sleep=async_sleep, **kwargs), waits


def compressor(llm: Any, **kwargs: Any) -> SummaryCompressor:
    kwargs.setdefault("keep_last_groups", 2)
    kwargs.setdefault("retry", no_wait()[0])
    kwargs.setdefault("counter", COUNTER)
    return SummaryCompressor(llm, **kwargs)


def assert_untouched(snapshot: MemorySnapshot, copy: MemorySnapshot, res: CompactResult) -> None:
    assert snapshot == copy  # the input was not mutated
    assert res.snapshot is snapshot  # failures hand back the input itself
    assert res.folded == ()


# -- the happy path -----------------------------------------------------------------------------


def test_folds_old_history_into_a_sectioned_summary() -> None:
    items = session()
    snapshot = MemorySnapshot.of(items)
    copy = snapshot.model_copy(deep=True)
    llm = ScriptedLLM([UPDATE])
    res = compressor(llm).compress(snapshot)
    llm.assert_complete()

    assert res.outcome == "compacted", res.error
    assert snapshot == copy
    doc = SummaryDocument.parse(res.snapshot.summary)
    assert doc.entries("constraints") == (f'"{CONSTRAINT}"',)
    assert doc.entries("state") == ("Several test modules fail with KeyError.",)
    assert any("pytest tests/test_mod0.py -q" in e for e in doc.entries("commands"))
    kept = res.snapshot.items
    assert kept[0] == items[0]  # the instructions
    assert kept[-1] == items[-1]  # the latest user input
    assert len(kept) == 1 + 3 + 1 + 1  # + the two newest groups (text, call, output; text)
    assert [*kept[:1], *res.folded, *kept[1:]] == items
    assert res.stats.tokens_after is not None and res.stats.tokens_before is not None
    assert res.stats.tokens_after < res.stats.tokens_before

    details = res.stats.details
    assert details["prompt_version"] == PROMPT_VERSION == "summary-v2"
    assert details["summarizer_calls"] == 1 and details["chunks"] == 1
    assert details["summarizer_input_tokens"] > 0
    assert details["items_seen"] == details["folded_items"] == len(res.folded)
    assert details["breaker"] == "closed"


def test_request_holds_prompt_conversation_and_exact_facts() -> None:
    llm = ScriptedLLM([UPDATE])
    compressor(llm).compress(MemorySnapshot.of(session()))
    (call,) = llm.calls
    assert call[0] == {"role": "system", "content": summary_prompt(cap_tokens=2000)}
    conversation = part(call, "conversation-part")
    assert "[user] Make the test suite of acme-api pass again." in conversation
    assert (
        "[assistant called bash (call call_0)] command=pytest tests/test_mod0.py -q" in conversation
    )
    assert "[bash returned (call call_0)]" in conversation
    facts = part(call, "exact-facts")
    assert CONSTRAINT in facts
    assert "FAILED tests/test_mod3.py::test_x - KeyError: 'k3'" in facts
    assert "(empty: nothing has been summarized yet)" in part(call, "summary-so-far")


def test_prompt_lists_every_section_and_is_versioned() -> None:
    prompt = summary_prompt(cap_tokens=1234)
    for heading in (
        "## Goal",
        "## Constraints and instructions (verbatim)",
        "## Decisions and why",
        "## Files read",
        "## Files modified",
        "## Errors and fixes",
        "## Current state",
        "## Next steps",
    ):
        assert heading in prompt
    assert "1234 tokens" in prompt
    with pytest.raises(ConfigError, match="unknown summary prompt version"):
        summary_prompt("summary-v0")
    with pytest.raises(ConfigError):
        SummaryCompressor(ScriptedLLM(), prompt_version="nope")


def test_previous_summary_reaches_the_summarizer_and_is_merged_not_regenerated() -> None:
    previous = SummaryDocument.of(
        goal=["Make the test suite of acme-api pass again."],
        constraints=['"Use Python 3.10 syntax only."'],
        decisions=["Kept the YAML loader, because the team owns it."],
        state=["Reading the loader."],
    ).render()
    snapshot = MemorySnapshot.of(session()[4:], summary=previous)
    snapshot = snapshot.model_copy(
        update={"items": (Message(role="system", content="sys"), *snapshot.items)}
    )
    update = "## Decisions and why\n- Add defaults for missing keys.\n\n## Current state\n- Done."
    llm = ScriptedLLM([update])
    res = compressor(llm).compress(snapshot)
    assert res.outcome == "compacted", res.error
    assert part(llm.calls[0], "summary-so-far") == previous.strip()
    doc = SummaryDocument.parse(res.snapshot.summary)
    assert doc.entries("constraints")[0] == '"Use Python 3.10 syntax only."'  # kept verbatim
    assert doc.entries("decisions")[:2] == (
        "Kept the YAML loader, because the team owns it.",
        "Add defaults for missing keys.",
    )
    assert doc.entries("state") == ("Done.",)  # replaced, not appended


def test_keeps_pinned_items_pending_calls_and_the_latest_user_input() -> None:
    items = session()
    pinned = items[5].model_copy(update={"pinned": True})  # an old tool output, pinned
    pinned_call = items[4]
    items[5] = pinned
    latest_user = items[-1]
    # The agent's newest step: a call still waiting for its output.
    items.append(FunctionCall(call_id="pending", name="bash", arguments="{}"))
    res = compressor(ScriptedLLM([UPDATE]), keep_last_groups=0).compress(MemorySnapshot.of(items))
    assert res.outcome == "compacted", res.error
    kept = res.snapshot.items
    assert pinned in kept and pinned_call in kept  # its group stays whole
    assert latest_user in kept
    assert kept[-1] == items[-1]  # the pending call


def test_nothing_to_fold_makes_no_call() -> None:
    llm = ScriptedLLM()
    items = session(turns=1)
    res = compressor(llm, keep_last_groups=50).compress(MemorySnapshot.of(items))
    assert res.outcome == "unchanged" and llm.calls == []
    under = compressor(llm, keep_last_groups=None, target_tokens=100_000)
    assert under.compress(MemorySnapshot.of(items)).outcome == "unchanged"
    assert llm.calls == []


def test_target_tokens_decides_how_much_stays() -> None:
    items = session(turns=12)
    snapshot = MemorySnapshot.of(items)
    llm = ScriptedLLM([UPDATE])
    res = compressor(llm, keep_last_groups=None, target_tokens=2500).compress(snapshot)
    assert res.outcome == "compacted", res.error
    assert res.stats.details["target_tokens"] == 2500
    assert res.stats.details["target_met"] is True
    assert res.stats.tokens_after is not None and res.stats.tokens_after <= 2500


# -- exact facts and validation of the answer -----------------------------------------------------


def test_a_dropped_constraint_is_added_back_verbatim() -> None:
    lossy = UPDATE.replace(f'- "{CONSTRAINT}"', "- Be careful with git.")
    res = compressor(ScriptedLLM([lossy])).compress(MemorySnapshot.of(session()))
    assert res.outcome == "compacted", res.error
    constraints = SummaryDocument.parse(res.snapshot.summary).entries("constraints")
    # A paraphrase is not what the user wrote: refused from the constraints, and counted.
    assert "Be careful with git." not in constraints
    assert res.stats.details["rejected_constraints"] == 1
    assert CONSTRAINT in constraints  # re-added exactly as the user wrote it
    assert res.stats.details["facts_readded"] >= 1


def test_facts_the_answer_mentions_are_not_duplicated() -> None:
    errors = "\n".join(
        f"- FAILED tests/test_mod{t}.py::test_x - KeyError: 'k{t}' — fixed by adding k{t}"
        for t in range(7)  # turns 0-6 are folded (turn 7 stays)
    )
    commands = "\n".join(f"- `pytest tests/test_mod{t}.py -q` → failed" for t in range(7))
    answer = UPDATE + f"\n## Errors and fixes\n{errors}\n\n## Commands run\n{commands}\n"
    res = compressor(ScriptedLLM([answer])).compress(MemorySnapshot.of(session()))
    doc = SummaryDocument.parse(res.snapshot.summary)
    assert len(doc.entries("errors")) == 7
    assert len(doc.entries("commands")) == 7
    assert res.stats.details["facts_readded"] == 0


@pytest.mark.parametrize(
    "answer",
    [
        "Error generating summary: 503 Service Unavailable",
        "I'm sorry, but I can't help with that.",
        "   \n\n",
    ],
    ids=["error-text", "refusal", "blank"],
)
def test_unusable_answers_fail_and_store_nothing(answer: str) -> None:
    snapshot = MemorySnapshot.of(session(), summary="")
    copy = snapshot.model_copy(deep=True)
    res = compressor(ScriptedLLM([answer])).compress(snapshot)
    assert res.outcome == "failed"
    assert_untouched(snapshot, copy, res)
    assert res.snapshot.summary == ""
    assert isinstance(res.cause, SummarizationError)
    assert "summarizer failed" in (res.error or "")


def test_a_prose_answer_is_accepted_as_the_current_state_with_the_exact_facts_readded() -> None:
    # A model that answers in prose (weak, local, or just different) used to make every
    # compaction fail: the prose is now where the work stands, and the digest's facts are added.
    prose = "The agent ran the test suite; several modules fail with KeyError in the loader."
    snapshot = MemorySnapshot.of(session())
    res = compressor(ScriptedLLM([prose])).compress(snapshot)
    assert res.outcome == "compacted"
    doc = SummaryDocument.parse(res.snapshot.summary)
    assert doc.entries("state") == (prose,)
    assert doc.entries("goal") == ("Make the test suite of acme-api pass again.",)
    assert any(CONSTRAINT.strip('"') in entry for entry in doc.entries("constraints"))
    assert res.stats.details["facts_readded"] > 0


@pytest.mark.parametrize("answer", [None, {"content": UPDATE}, 42], ids=["none", "dict", "int"])
def test_an_answer_that_is_not_text_fails_instead_of_raising(answer: object) -> None:
    # A user's LLM returning None (a message without content) used to raise TypeError out of
    # compress/acompress — which must never raise for a run-time failure.
    snapshot = MemorySnapshot.of(session(), summary="## Goal\n- keep this summary")
    copy = snapshot.model_copy(deep=True)
    for run in ("sync", "async"):
        breaker = CircuitBreaker(failure_threshold=5)
        summarizer = compressor(FunctionLLM(lambda messages: answer), breaker=breaker)
        res = (
            summarizer.compress(snapshot)
            if run == "sync"
            else asyncio.run(summarizer.acompress(snapshot))
        )
        assert res.outcome == "failed", run
        assert_untouched(snapshot, copy, res)
        assert res.snapshot.summary == "## Goal\n- keep this summary"
        assert isinstance(res.cause, SummarizationError)
        assert f"returned {type(answer).__name__}, not text" in (res.error or "")
        assert breaker.consecutive_failures == 1  # counted as a failed request


@pytest.mark.parametrize("llm", [None, "gpt-4o", object()])
def test_an_llm_without_complete_is_a_config_error(llm: object) -> None:
    with pytest.raises(ConfigError, match="LLM protocol"):
        SummaryCompressor(llm)  # type: ignore[arg-type]


def test_a_memory_instead_of_a_snapshot_is_a_config_error() -> None:
    from compactkit.memory import InMemoryMemory

    memory = InMemoryMemory()
    memory.add_user_input("hello")
    summarizer = compressor(ScriptedLLM([]))
    with pytest.raises(ConfigError, match=r"memory\.snapshot\(\)"):
        summarizer.compress(memory)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="MemorySnapshot"):
        asyncio.run(summarizer.acompress(memory.items))  # type: ignore[arg-type]


def test_preamble_and_empty_markers_are_dropped() -> None:
    answer = "Sure! Here is the update:\n\n## Goal\n- (none)\n\n" + UPDATE.split("\n\n", 1)[1]
    res = compressor(ScriptedLLM([answer])).compress(MemorySnapshot.of(session()))
    assert res.outcome == "compacted", res.error
    assert "Sure!" not in res.snapshot.summary
    assert "(none)" not in res.snapshot.summary


def test_summary_not_smaller_than_what_it_replaces_fails() -> None:
    items = [
        Message(role="user", content="hi"),
        Message(role="assistant", content="hello"),
        Message(role="user", content="ok?"),
    ]
    long_answer = (
        UPDATE
        + "\n## Decisions and why\n"
        + "\n".join(
            f"- decision number {n} with a long explanation of why it was made" for n in range(30)
        )
    )
    res = compressor(ScriptedLLM([long_answer]), keep_last_groups=0).compress(
        MemorySnapshot.of(items)
    )
    assert res.outcome == "failed"
    assert "not smaller than what it replaces" in (res.error or "")


@respx.mock
def test_answer_over_the_cap_is_trimmed_to_it() -> None:
    bulky = (
        UPDATE
        + "\n## Decisions and why\n"
        + "\n".join(
            f"- decision {n}: chose option {n} over option {n + 1} because it was measured faster"
            for n in range(200)
        )
    )
    respx.post(API).respond(200, json=completion(bulky))
    res = compressor(http_llm(), summary_cap_tokens=600).compress(
        MemorySnapshot.of(session(turns=20))
    )
    assert res.outcome == "compacted", res.error
    assert COUNTER.count_text(res.snapshot.summary) <= 600
    assert res.stats.details["trimmed_entries"] > 0
    doc = SummaryDocument.parse(res.snapshot.summary)
    assert CONSTRAINT in "\n".join(doc.entries("constraints"))  # trimmed last
    assert "trimmed to keep this summary within its token cap" in res.snapshot.summary


# -- what reaches the summarizer -----------------------------------------------------------------


def test_large_spans_are_chunked_and_the_running_summary_is_carried_forward() -> None:
    answers = iter(
        f"## Decisions and why\n- decision from part {n}\n\n## Current state\n- part {n} done"
        for n in range(1, 100)
    )
    llm = FunctionLLM(lambda messages: next(answers))
    snapshot = MemorySnapshot.of(session(turns=30, output_lines=60))
    res = compressor(llm, summarizer_window_tokens=6000, max_item_tokens=400).compress(snapshot)
    assert res.outcome == "compacted", res.error
    chunks = res.stats.details["chunks"]
    assert chunks == len(llm.calls) > 2
    for number, call in enumerate(llm.calls[1:], 2):
        assert f'number="{number}" of="{chunks}"' in user_text(call)
        assert f"decision from part {number - 1}" in part(call, "summary-so-far")
        assert COUNTER.count_text(user_text(call) + call[0]["content"]) <= 6000
    decisions = SummaryDocument.parse(res.snapshot.summary).entries("decisions")
    assert [d for d in decisions if d.startswith("decision from part")] == [
        f"decision from part {n}" for n in range(1, chunks + 1)
    ]
    assert res.stats.details["items_seen"] == len(res.folded)


def test_huge_outputs_are_cut_with_a_note_but_their_facts_survive() -> None:
    lines = [f"log line {n}" for n in range(3000)]
    lines[1500] = "ValueError: the secret middle error 0xDEAD"
    items = [
        Message(role="user", content="Investigate the crash."),
        FunctionCall(call_id="c1", name="read_log", arguments=json.dumps({"path": "logs/app.log"})),
        FunctionCallOutput(call_id="c1", output="\n".join(lines)),
        Message(role="assistant", content="Found it."),
        Message(role="user", content="Fix it."),
    ]
    llm = ScriptedLLM([UPDATE])
    res = compressor(llm, keep_last_groups=0, max_item_tokens=500).compress(
        MemorySnapshot.of(items)
    )
    assert res.outcome == "compacted", res.error
    conversation = part(llm.calls[0], "conversation-part")
    assert "log line 0" in conversation and "log line 2999" in conversation
    assert "tokens cut here" in conversation
    assert "secret middle error" not in conversation
    assert "ValueError: the secret middle error 0xDEAD" in part(llm.calls[0], "exact-facts")
    assert "ValueError: the secret middle error 0xDEAD" in res.snapshot.summary


def test_long_call_arguments_are_shortened_not_skipped() -> None:
    content = "x" * 5000
    items = [
        Message(role="user", content="Write the file."),
        FunctionCall(
            call_id="w",
            name="write_file",
            arguments=json.dumps({"path": "a.txt", "content": content}),
        ),
        FunctionCallOutput(call_id="w", output="ok"),
        Message(role="user", content="Thanks, next."),
    ]
    llm = ScriptedLLM([UPDATE])
    compressor(llm, keep_last_groups=0).compress(MemorySnapshot.of(items))
    conversation = part(llm.calls[0], "conversation-part")
    assert "[assistant called write_file (call w)] path=a.txt, content=xxx" in conversation
    assert "[+4,600 chars]" in conversation


def test_masked_outputs_are_read_from_the_originals() -> None:
    items = session(turns=4, output_lines=80)
    snapshot = MemorySnapshot.of(items)
    masked = MaskingCompressor(keep_last_groups=0, counter=COUNTER).compress(snapshot)
    assert masked.outcome == "compacted"
    originals = {i.call_id: i for i in items if isinstance(i, FunctionCallOutput)}
    llm = ScriptedLLM([UPDATE])
    compressor(llm).compress_with_originals(masked.snapshot, originals)
    conversation = part(llm.calls[0], "conversation-part")
    assert "collected line 1 of turn 0" in conversation
    assert "[masked output of" not in conversation


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.lists(
        st.tuples(
            st.sampled_from(["user", "assistant", "call", "parallel", "pinned"]),
            st.integers(min_value=0, max_value=2500),
        ),
        min_size=1,
        max_size=40,
    ),
    keep=st.integers(min_value=0, max_value=6),
    window=st.sampled_from([5500, 8000, 40_000]),
)
def test_every_folded_item_reaches_some_summarizer_request(
    shape: list[tuple[str, int]], keep: int, window: int
) -> None:
    items: list[Item] = [Message(role="system", content="sys")]
    for n, (kind, size) in enumerate(shape):
        marker = f"MARK{n:03d}"
        filler = " filler" * size
        if kind in ("user", "pinned"):
            items.append(Message(role="user", content=marker + filler, pinned=kind == "pinned"))
        elif kind == "assistant":
            items.append(Message(role="assistant", content=marker + filler))
        else:
            calls = 2 if kind == "parallel" else 1
            for c in range(calls):
                args = json.dumps({"query": f"{marker}c{c}"})
                items.append(FunctionCall(call_id=f"{marker}c{c}", name="search", arguments=args))
            for c in range(calls):
                items.append(
                    FunctionCallOutput(call_id=f"{marker}c{c}", output=f"{marker}o{c}{filler}")
                )
    snapshot = MemorySnapshot.of(items)
    copy = snapshot.model_copy(deep=True)
    llm = FunctionLLM(reply_to)
    res = compressor(llm, keep_last_groups=keep, summarizer_window_tokens=window).compress(snapshot)
    assert snapshot == copy
    requests = "\n".join(part(call, "conversation-part") for call in llm.calls)
    for item in res.folded:
        text = item.arguments if isinstance(item, FunctionCall) else item.text
        marker = re.search(r"MARK\d{3}(?:c\d|o\d)?", text)
        assert marker and marker.group(0) in requests, f"{item!r} never reached the summarizer"
    if res.outcome == "compacted":
        kept = res.snapshot.items
        assert all(i in kept for i in items if i.pinned)
        latest_user = [i for i in items if isinstance(i, Message) and i.role == "user"][-1:]
        assert all(i in kept for i in latest_user)
        assert sorted(map(id, [*kept, *res.folded])) == sorted(map(id, items))
        regrouped = group_items(kept, 1)
        assert all(not g.pending for g in regrouped)  # no call separated from its output
        assert res.stats.details["items_seen"] == len(res.folded)
    else:
        assert res.outcome in ("unchanged", "failed")
        assert res.snapshot is snapshot


# -- the real client over HTTP: retries, breaker, failures --------------------------------------


def completion(content: str | None, finish_reason: str = "stop") -> dict[str, Any]:
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


def http_llm() -> OpenAIChatLLM:
    return OpenAIChatLLM(
        "gpt-test",
        client=openai.OpenAI(api_key="k", max_retries=0, http_client=httpx.Client()),
        async_client=openai.AsyncOpenAI(
            api_key="k", max_retries=0, http_client=httpx.AsyncClient()
        ),
    )


@respx.mock
def test_429_then_success_honours_retry_after() -> None:
    route = respx.post(API)
    route.side_effect = [
        httpx.Response(429, headers={"Retry-After": "3"}, json={"error": {"message": "slow"}}),
        httpx.Response(200, json=completion(UPDATE)),
    ]
    retry, waits = no_wait()
    res = compressor(http_llm(), retry=retry).compress(MemorySnapshot.of(session()))
    assert res.outcome == "compacted", res.error
    assert waits == [3.0]
    assert res.stats.details["summarizer_calls"] == 2
    assert res.stats.details["retry_wait_seconds"] == 3.0
    body = json.loads(route.calls.last.request.content)
    assert body["model"] == "gpt-test" and body["messages"][0]["role"] == "system"


@pytest.mark.parametrize(
    ("response", "calls", "message"),
    [
        ({"status_code": 500, "json": {"error": {"message": "boom"}}}, 3, "HTTP 500"),
        ({"side_effect": httpx.ReadTimeout("slow")}, 3, "timed out"),
        (
            {
                "status_code": 200,
                "text": "{not json",
                "headers": {"content-type": "application/json"},
            },
            1,
            "malformed",
        ),
        ({"status_code": 200, "json": completion("")}, 1, "empty answer"),
        ({"status_code": 200, "json": completion(UPDATE, "length")}, 1, "cut off"),
        ({"status_code": 401, "json": {"error": {"message": "bad key"}}}, 1, "HTTP 401"),
    ],
    ids=["persistent-500", "timeout", "malformed-json", "empty", "truncated", "unauthorized"],
)
@respx.mock
def test_http_failures_leave_the_snapshot_unchanged(
    response: dict[str, Any], calls: int, message: str
) -> None:
    route = respx.post(API)
    if "side_effect" in response:
        route.mock(side_effect=response["side_effect"])
    else:
        route.respond(**response)
    snapshot = MemorySnapshot.of(
        session(), summary="# Conversation summary (compactkit)\n\n## Goal\n- x\n"
    )
    copy = snapshot.model_copy(deep=True)
    retry, waits = no_wait(initial_wait=0.25)
    res = compressor(http_llm(), retry=retry).compress(snapshot)
    assert res.outcome == "failed"
    assert_untouched(snapshot, copy, res)
    assert message in (res.error or "")
    assert isinstance(res.cause, SummarizationError)
    assert route.call_count == calls
    assert res.stats.details["summarizer_calls"] == calls
    assert waits == [0.25, 0.5][: calls - 1]


@respx.mock
def test_failure_with_a_fallback_runs_the_digest() -> None:
    respx.post(API).respond(503, json={"error": {"message": "overloaded"}})
    snapshot = MemorySnapshot.of(session())
    fallback = DigestCompressor(keep_last_groups=2, counter=COUNTER)
    res = compressor(http_llm(), fallback=fallback).compress(snapshot)
    assert res.outcome == "fallback"
    assert "HTTP 503" in (res.error or "") and "fell back to digest" in (res.error or "")
    assert res.stats.compressor == "summary>digest"
    assert res.stats.details["summary"]["summarizer_calls"] == 3
    assert CONSTRAINT in res.snapshot.summary  # the digest kept it
    assert res.folded and res.snapshot is not snapshot


def test_fallback_that_changes_nothing_is_still_a_failure() -> None:
    llm = ScriptedLLM([SummarizationError("down")])
    fallback = DigestCompressor(keep_last_groups=100, counter=COUNTER)
    snapshot = MemorySnapshot.of(session())
    res = compressor(llm, fallback=fallback).compress(snapshot)
    assert res.outcome == "failed" and res.snapshot is snapshot
    assert "the fallback digest changed nothing" in (res.error or "")


@respx.mock
def test_breaker_opens_and_later_compactions_fail_fast() -> None:
    route = respx.post(API).respond(500, json={"error": {"message": "down"}})
    breaker = CircuitBreaker(failure_threshold=3, cooldown=60, clock=lambda: 0.0)
    comp = compressor(http_llm(), breaker=breaker, retry=no_wait(attempts=2)[0])
    snapshot = MemorySnapshot.of(session())
    first = comp.compress(snapshot)
    assert first.outcome == "failed" and route.call_count == 2
    second = comp.compress(snapshot)
    assert second.outcome == "failed" and route.call_count == 3  # the third failure opens it
    assert second.stats.details["breaker"] == "open"
    third = comp.compress(snapshot)
    assert route.call_count == 3  # no request at all
    assert third.outcome == "failed" and third.stats.details["circuit_open"] is True
    assert "circuit open" in (third.error or "")
    assert third.stats.details["summarizer_calls"] == 0


def test_foreign_exceptions_from_a_custom_llm_are_failures() -> None:
    res = compressor(ScriptedLLM([RuntimeError("socket closed")])).compress(
        MemorySnapshot.of(session())
    )
    assert res.outcome == "failed"
    assert "RuntimeError: socket closed" in (res.error or "")


# -- async ---------------------------------------------------------------------------------------


@respx.mock
def test_async_path_over_http() -> None:
    route = respx.post(API)
    route.side_effect = [
        httpx.Response(502, json={"error": {"message": "bad gateway"}}),
        httpx.Response(200, json=completion(UPDATE)),
    ]
    retry, waits = no_wait()
    res = asyncio.run(compressor(http_llm(), retry=retry).acompress(MemorySnapshot.of(session())))
    assert res.outcome == "compacted", res.error
    assert waits == [1.0] and route.call_count == 2
    assert CONSTRAINT in res.snapshot.summary


def test_sync_and_async_give_the_same_result() -> None:
    snapshot = MemorySnapshot.of(session(turns=20, output_lines=50))
    sync_llm, async_llm = FunctionLLM(reply_to), FunctionLLM(reply_to)
    options = {"summarizer_window_tokens": 7000, "max_item_tokens": 300}
    sync = compressor(sync_llm, **options).compress(snapshot)
    asynchronous = asyncio.run(compressor(async_llm, **options).acompress(snapshot))
    assert sync.snapshot == asynchronous.snapshot
    assert sync_llm.calls == async_llm.calls
    assert sync.stats.details == asynchronous.stats.details


def test_async_failure_is_an_outcome() -> None:
    llm = ScriptedLLM([SummarizationError("nope", transient=False)])
    snapshot = MemorySnapshot.of(session())
    res = asyncio.run(compressor(llm).acompress(snapshot))
    assert res.outcome == "failed" and res.snapshot is snapshot


# -- configuration -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"keep_last_groups": -1},
        {"target_tokens": 0},
        {"summary_cap_tokens": 0},
        {"max_item_tokens": 0},
        {"summarizer_window_tokens": 1000},
        # an explicit cap the window cannot carry (a default cap shrinks to a third of it)
        {"summarizer_window_tokens": 3000, "summary_cap_tokens": 2000},
    ],
)
def test_misuse_is_a_config_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        SummaryCompressor(ScriptedLLM(), **kwargs)


def test_cap_defaults_follow_the_digest() -> None:
    assert SummaryCompressor(ScriptedLLM()).cap == 2000
    # 60% of the target (SUMMARY_SHARE), at least 300 tokens: the summary grows by need.
    assert SummaryCompressor(ScriptedLLM(), target_tokens=40_000).cap == 24_000
    assert SummaryCompressor(ScriptedLLM(), target_tokens=8_000).cap == 4_800
    assert SummaryCompressor(ScriptedLLM(), target_tokens=400).cap == 300
    assert "summary-v2" in repr(SummaryCompressor(ScriptedLLM()))


def test_a_target_that_leaves_no_room_for_a_summary_fails_cleanly() -> None:
    items = session(turns=6)
    items[-1] = Message(role="user", content="Keep going. " + "Details follow. " * 600)
    rest = COUNTER.count_item(items[0]) + COUNTER.count_item(items[-1]) + COUNTER.count_overhead()
    target = rest + COUNTER.count_item(summary_message("")) + 1  # one token left for it
    snapshot = MemorySnapshot.of(items)
    res = compressor(ScriptedLLM([UPDATE]), keep_last_groups=None, target_tokens=target).compress(
        snapshot
    )
    assert res.outcome == "failed" and res.snapshot is snapshot
    assert "leaves 1 tokens for the summary" in (res.error or "")


def test_a_tight_target_shrinks_the_summary_to_fit() -> None:
    items = session(turns=10)
    snapshot = MemorySnapshot.of(items)
    kept_tokens = sum(COUNTER.count_item(i) for i in (items[0], items[-1]))
    target = kept_tokens + COUNTER.count_overhead() + 250
    res = compressor(ScriptedLLM([UPDATE]), keep_last_groups=None, target_tokens=target).compress(
        snapshot
    )
    assert res.outcome == "compacted", res.error
    assert res.stats.tokens_after is not None and res.stats.tokens_after <= target
    assert res.stats.details["target_met"] is True
    assert res.stats.details["trimmed_entries"] > 0
