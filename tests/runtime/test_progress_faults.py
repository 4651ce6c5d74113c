"""Guaranteed progress (issue 29, item 2), as properties over any sequence of summarizer faults.

Whatever the summarizer answers (a good update, a summary bigger than its source, nothing, a
refusal) or does (HTTP 500s, timeouts), in any order: every prompt fits the budget; a failed
compaction keeps the old summary and every item; no step calls the summarizer more often than
its retries allow; a step runs at most one compaction; and the step after a compaction that was
applied does not compact again (hysteresis). The same faults are played at every entry point by
``tests/contract`` (``test_a_faulty_summarizer_never_breaks_progress``).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.budget import counter_for
from compactkit.compressors import DigestCompressor
from compactkit.compressors.summary import CircuitBreaker, RetryPolicy, SummaryCompressor
from compactkit.errors import SummarizationError
from compactkit.items import FunctionCall
from compactkit.memory import InMemoryMemory
from compactkit.runtime import Governor
from compactkit.runtime.events import CompactionEvent, Event
from compactkit.testing import FunctionLLM

MODEL = "gpt-4o"
BUDGET = 6_000
ATTEMPTS = 2
GOOD = "## Current state\n- reading the report\n\n## Next steps\n- read the next part"
BIG = "## Decisions\n" + "\n".join(f"- decided {n}: option {n} of many" for n in range(600))
FAULTS = ["good", "bigger-than-its-source", "empty", "refusal", "http-500", "timeout"]


def answer_for(fault: str) -> str:
    if fault == "http-500":
        raise SummarizationError("'summarizer' answered HTTP 500: error", transient=True)
    if fault == "timeout":
        raise TimeoutError("the summarizer timed out")
    return {
        "good": GOOD,
        "bigger-than-its-source": BIG,
        "empty": "",
        "refusal": "I'm sorry, I can't.",
    }[fault]


@settings(
    deadline=None, max_examples=12, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(
    faults=st.lists(st.sampled_from(FAULTS), min_size=1, max_size=40),
    sizes=st.lists(st.integers(50, 1_500), min_size=6, max_size=24),
    fallback=st.booleans(),
)
def test_any_sequence_of_faults_keeps_progress(
    faults: list[str], sizes: list[int], fallback: bool
) -> None:
    counter = counter_for(MODEL)
    calls: list[int] = []
    step_number = [0]

    def answer(messages: list[dict[str, str]]) -> str:
        calls.append(step_number[0])
        return answer_for(faults[(len(calls) - 1) % len(faults)])

    compressor = SummaryCompressor(
        FunctionLLM(answer),
        target_tokens=2_500,
        counter=counter,
        retry=RetryPolicy(attempts=ATTEMPTS, initial_wait=0.0, jitter=0.0),
        breaker=CircuitBreaker(failure_threshold=1_000),  # the retries alone bound the calls
        fallback=DigestCompressor(keep_last_groups=2, counter=counter) if fallback else None,
    )
    events: list[Event] = []
    governor = Governor.for_model(
        MODEL, budget=BUDGET, compressor=compressor, on_event=events.append
    )
    memory = InMemoryMemory()
    memory.add_user_input("TASK-7: read every part. Never edit setup.py (rule RULE-1).")
    for turn, size in enumerate(sizes):
        call = FunctionCall(call_id=f"c{turn}", name="read", arguments=f'{{"n": {turn}}}')
        memory.add_output_items([call])
        memory.add_tool_output(f"c{turn}", f"part {turn}: " + "lorem ipsum " * size)
        before = memory.snapshot()
        events.clear()
        step_number[0] += 1
        step = governor.step(memory, instructions="Be brief.")

        assert step.projection.tokens <= BUDGET
        compactions = [e for e in events if isinstance(e, CompactionEvent)]
        assert len(compactions) <= 1  # one compaction per step at most
        assert calls.count(step_number[0]) <= ATTEMPTS  # never a loop of attempts
        after = memory.snapshot()
        if compactions and not compactions[0].applied:  # failed: nothing lost
            assert after.summary == before.summary
            assert [i.id for i in after.items] == [i.id for i in before.items]
        if compactions and compactions[0].applied:
            folded = {item.id for item in compactions[0].result.folded}  # type: ignore[union-attr]
            kept = {item.id for item in after.items}
            assert {item.id for item in before.items} <= folded | kept  # nothing dropped unseen
            assert after.summary  # what was folded is in a summary
            # hysteresis: the very next step, with nothing new, does not compact again
            events.clear()
            step_number[0] += 1
            again = governor.step(memory, instructions="Be brief.")
            assert not again.compacted
            assert again.projection.tokens <= BUDGET
