"""What a compaction costs (issue 29, item 3): the summarizer's calls over HTTP at its model's
prices, the change in the next request's cost with the prompt cache counted, the run's total;
and the ``cache_cold`` trigger."""

from __future__ import annotations

import pytest

from compactkit.budget import Prices, ProfileRegistry, counter_for, get_profile
from compactkit.compressors.preview import preview_compaction
from compactkit.compressors.summary import SummaryCompressor
from compactkit.compressors.summary.llm import OpenAIChatLLM
from compactkit.errors import ConfigError
from compactkit.governance import CompactPolicy, cache_cold, ratio_over, tokens_over
from compactkit.governance.cost import next_request_change
from compactkit.items import FunctionCall, Message
from compactkit.memory import InMemoryMemory
from compactkit.runtime import Governor
from compactkit.runtime.background import BackgroundCompaction
from compactkit.runtime.events import BackgroundCompactionEvent, CompactionEvent, Event
from compactkit.testing import FakeOpenAI, ScriptedLLM, http_error

MODEL = "gpt-4o"
ANSWER = "## Current state\n- the tests of file_0.py to file_5.py are fixed\n"


def fill(memory: InMemoryMemory, turns: int, start: int = 0) -> None:
    for turn in range(start, start + turns):
        memory.add_user_input(f"step {turn}: read file_{turn}.py and fix the failing test")
        call = FunctionCall(call_id=f"c{turn}", name="read_file", arguments=f'{{"n": {turn}}}')
        memory.add_output_items([call])
        memory.add_tool_output(f"c{turn}", f"def f_{turn}():\n" + "    return 1\n" * 150)
        memory.add_output_items([Message(role="assistant", content=f"fixed file_{turn}.py")])


def summarizer(fake: FakeOpenAI, model: str = "gpt-4o-mini") -> SummaryCompressor:
    llm = OpenAIChatLLM(model, client=fake.client())
    return SummaryCompressor(llm, target_tokens=2_000, counter=counter_for(MODEL))


def test_a_summary_compaction_reports_what_its_answered_requests_cost() -> None:
    fake = FakeOpenAI([http_error(500), ANSWER], model="gpt-4o-mini")
    compressor = summarizer(fake)
    memory = InMemoryMemory()
    fill(memory, 6)
    preview = preview_compaction(compressor, memory.snapshot())
    seen: list[Event] = []
    governor = Governor.for_model(MODEL, compressor=compressor, on_event=seen.append)

    governor.step(memory, force=True)

    assert len(fake.requests) == 2  # a 500, then the answer: one chunk, retried once
    assert preview.summarizer_calls == 1
    (event,) = [e for e in seen if isinstance(e, CompactionEvent)]
    assert event.applied and event.cost is not None
    details = event.result.stats.details if event.result else {}
    mini = get_profile("gpt-4o-mini").prices
    assert mini is not None
    counter = counter_for(MODEL)
    # the 500 was not answered, so not billed: half the input tokens sent, and the one answer
    billed_input = details["summarizer_input_tokens"] // 2
    assert details["summarizer_output_tokens"] == counter.count_text(ANSWER)
    expected = mini.cost(input=billed_input, output=counter.count_text(ANSWER))
    assert event.cost.summarizer == pytest.approx(expected, rel=1e-12)
    assert details["summarizer_cost"] == event.cost.summarizer
    # the preview's figure is an upper bound of the real one, at the same prices
    assert preview.cost is not None and preview.cost >= event.cost.summarizer
    assert preview.cost >= mini.cost(input=preview.summarizer_input_tokens)


def test_the_next_request_change_counts_the_cache_the_compaction_gives_up() -> None:
    fake = FakeOpenAI([ANSWER], model="gpt-4o-mini")
    memory = InMemoryMemory()
    fill(memory, 6)
    seen: list[Event] = []
    governor = Governor.for_model(MODEL, compressor=summarizer(fake), on_event=seen.append)

    governor.step(memory, force=True)

    (event,) = [e for e in seen if isinstance(e, CompactionEvent)]
    assert event.cost is not None and event.tokens_before and event.tokens_after
    before, after = event.tokens_before, event.tokens_after
    # gpt-4o: $2.50 input, $1.25 cached, per 1M; OpenAI caches 1,024 tokens, then 128 at a time
    cached = 1024 + (before - 1024) // 128 * 128
    without = ((before - cached) * 2.50 + cached * 1.25) / 1e6
    assert event.cost.next_request_change == pytest.approx(after * 2.50 / 1e6 - without)
    assert event.cost.net == pytest.approx(
        event.cost.summarizer + event.cost.next_request_change  # type: ignore[operator]
    )


def test_cost_is_none_only_where_a_price_is_unknown() -> None:
    memory = InMemoryMemory()
    fill(memory, 6)
    llm = ScriptedLLM([ANSWER])  # a model without a name, so without prices
    compressor = SummaryCompressor(llm, target_tokens=2_000, counter=counter_for(MODEL))
    assert preview_compaction(compressor, memory.snapshot()).cost is None
    seen: list[Event] = []
    Governor.for_model(MODEL, compressor=compressor, on_event=seen.append).step(memory, force=True)
    (event,) = [e for e in seen if isinstance(e, CompactionEvent)]
    assert event.applied and event.cost is not None
    assert event.cost.summarizer is None and event.cost.net is None
    assert event.cost.next_request_change is not None  # gpt-4o's prices are known

    # a deterministic compaction makes no summarizer call: it costs nothing, a known zero
    other = InMemoryMemory()
    fill(other, 6)
    seen.clear()
    Governor.for_model(MODEL, on_event=seen.append).step(other, force=True)
    (event,) = [e for e in seen if isinstance(e, CompactionEvent)]
    assert event.cost is not None and event.cost.summarizer == 0.0
    assert event.cost.net is not None


def test_prices_given_to_the_compressor_win_and_a_bad_one_is_refused() -> None:
    prices = Prices(input=1.0, output=2.0, source="https://example.test/pricing")
    memory = InMemoryMemory()
    fill(memory, 6)
    compressor = SummaryCompressor(
        ScriptedLLM([ANSWER]), target_tokens=2_000, counter=counter_for(MODEL), prices=prices
    )
    result = compressor.compress(memory.snapshot())
    details = result.stats.details
    assert details["summarizer_cost"] == pytest.approx(
        (details["summarizer_input_tokens"] * 1.0 + details["summarizer_output_tokens"] * 2.0) / 1e6
    )
    with pytest.raises(ConfigError, match="Prices"):
        SummaryCompressor(ScriptedLLM(), prices={"input": 1.0})  # type: ignore[arg-type]


def test_cache_cold_fires_only_after_the_idle_time_and_composes() -> None:
    now = [0.0]
    trigger = ratio_over(0.95) | (tokens_over(3_000) & cache_cold(after=600))
    policy = CompactPolicy(trigger, target=1_500, budget=100_000, model=MODEL)
    seen: list[Event] = []
    governor = Governor.for_model(MODEL, policy=policy, on_event=seen.append, clock=lambda: now[0])
    memory = InMemoryMemory()
    fill(memory, 4)

    first = governor.step(memory)  # no previous step: never idle
    now[0] += 599
    second = governor.step(memory)  # idle 599 s: the cache may still be warm
    assert not first.compacted and not second.compacted
    assert second.state is not None and second.state.idle_seconds == 599
    now[0] += 601
    third = governor.step(memory)  # idle 601 s: the cache is cold, compacting is free

    assert third.compacted
    (event,) = [e for e in seen if isinstance(e, CompactionEvent)]
    assert event.cost is not None and event.tokens_before and event.tokens_after
    # a cold cache credits nothing to the request without compaction
    gpt4o = get_profile(MODEL)
    assert gpt4o.prices is not None
    assert event.cost.next_request_change == pytest.approx(
        next_request_change(
            gpt4o.prices,
            gpt4o.prompt_cache,
            tokens_before=event.tokens_before,
            tokens_after=event.tokens_after,
            cache_warm=False,
        )
    )
    assert event.cost.next_request_change == pytest.approx(
        (event.tokens_after - event.tokens_before) * 2.50 / 1e6
    )


@pytest.mark.parametrize("after", [0, -5, float("inf"), True, "30m"])
def test_cache_cold_needs_a_lifetime(after: object) -> None:
    with pytest.raises(ConfigError, match="cache_cold"):
        cache_cold(after=after)  # type: ignore[arg-type]


def test_the_registry_given_to_the_governor_prices_its_compactions() -> None:
    """A model priced only in the registry passed to ``Governor.for_model`` (not the
    process-wide one) gets a cost, at those prices, in both foreground and background events."""
    registry = ProfileRegistry.bundled()
    base = get_profile(MODEL)
    registry.register(
        base.model_copy(
            update={
                "name": "acme-coder",
                "prices": Prices(input=3.0, output=9.0, source="https://acme.example/pricing"),
            }
        )
    )
    for background in (None, "background"):
        memory = InMemoryMemory()
        fill(memory, 11 if background else 30)  # background: between its start and the trigger
        seen: list[Event] = []
        options: dict[str, object] = {"registry": registry, "on_event": seen.append}
        options["budget"] = 12_000
        governor = Governor.for_model("acme-coder", **options)  # type: ignore[arg-type]
        if background:
            assert governor.policy is not None
            governor = Governor(
                governor.projector,
                policy=governor.policy,
                on_event=seen.append,
                background=BackgroundCompaction(soft=governor.policy.target_tokens() + 1),
            )
            governor.step(memory)
            assert governor.background is not None and governor.background.join(memory)
            governor.step(memory)
            applied = [e for e in seen if isinstance(e, BackgroundCompactionEvent)]
            assert [e.status for e in applied] == ["started", "applied"]
        else:
            governor.step(memory, force=True)
        (event,) = [e for e in seen if isinstance(e, CompactionEvent) and e.applied]
        assert event.cost is not None
        assert event.cost.next_request_change is not None  # priced (None: no known prices)
    with pytest.raises(ConfigError):
        get_profile("acme-coder")  # the process-wide registry never heard of it
