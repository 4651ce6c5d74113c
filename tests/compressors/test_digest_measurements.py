"""What runs measured reaches the model: numbers with units, test counts, amounts, under the
command that measured them, the newest run's first; and dead ends are kept as decisions."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors import DigestCompressor, SummaryDocument
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.snapshot import MemorySnapshot

COUNTER = TiktokenCounter("o200k_base")
BENCH = "python scripts/bench_retry.py --requests 5000"


def bash(n: int, command: str, output: str) -> list[Item]:
    return [
        FunctionCall(call_id=f"c{n}", name="bash", arguments=json.dumps({"command": command})),
        FunctionCallOutput(call_id=f"c{n}", output=output),
    ]


def bench_output(p95: int) -> str:
    return f"benchmark: retry_path\nrequests: 5000\np50 latency {p95 // 3} ms\np95 latency {p95} ms"


def session() -> list[Item]:
    items: list[Item] = [Message(role="user", content="Make the retry path faster.")]
    items += bash(1, BENCH, bench_output(225))
    items += bash(2, "cat src/retry.py", "def retry():\n    timeout = 30 s  # 12 passed\n")
    items += [
        Message(
            role="assistant",
            content="I tried caching the session in a module global, but that broke the "
            "fork-safety test, so I reverted it.",
        )
    ]
    items += bash(3, "pytest -q", "....\n12 passed, 3 failed in 2.10s")
    items += bash(4, BENCH, bench_output(310))
    for n in range(5, 25):  # more work after the measurements
        items += bash(n, f"grep -n retry src/mod{n}.py", "\n".join(f"line {k}" for k in range(40)))
    items.append(Message(role="user", content="Go on."))
    return items


def sent(result_snapshot: MemorySnapshot) -> str:
    return "\n".join(i.text for i in result_snapshot.render_items() if hasattr(i, "text"))


def test_measurements_reach_the_model_under_their_command_newest_first() -> None:
    snapshot = MemorySnapshot.from_items(session())
    result = DigestCompressor(keep_last_groups=1, counter=COUNTER).compress(snapshot)
    doc = SummaryDocument.parse(result.snapshot.summary or "")
    measured = doc.entries("measurements")
    bench = next(e for e in measured if e.startswith(f"`{BENCH}`"))
    newest, _, earlier = bench.partition(" — earlier: ")
    assert "`p95 latency 310 ms`" in newest and "225" not in newest
    assert "`p95 latency 225 ms`" in earlier  # the earlier run, kept as earlier
    assert any("`12 passed, 3 failed in 2.10s`" in e for e in measured)
    # a file's content is not a measurement, and counts without a unit are not either
    assert not any("timeout" in e or "requests: 5000" in e for e in measured)
    text = sent(result.snapshot)
    assert "## Measurements" in text and "p95 latency 310 ms" in text
    assert "fork-safety test, so I reverted it." in "\n".join(doc.entries("decisions"))


def test_measurements_outlast_the_commands_under_pressure() -> None:
    snapshot = MemorySnapshot.from_items(session())
    before = COUNTER.count(snapshot.render_items()).tokens
    result = DigestCompressor(target_tokens=before // 8, counter=COUNTER).compress(snapshot)
    doc = SummaryDocument.parse(result.snapshot.summary or "")
    assert result.outcome == "compacted"
    assert not any(e.startswith(f"`{BENCH}` →") for e in doc.entries("commands"))
    assert "p95 latency 310 ms" in sent(result.snapshot)


_LINE = st.one_of(
    st.from_regex(
        r"[a-z]{2,8} [a-z0-9]{0,6}:? ?[0-9]{1,5}(\.[0-9]{1,2})? ?(ms|s|%|MB|EUR)", fullmatch=True
    ),
    st.from_regex(r"[0-9]{1,3} passed, [0-9]{1,2} failed", fullmatch=True),
    st.text(alphabet="abc 0123456789:.%/-", max_size=30),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(_LINE, min_size=1, max_size=8), min_size=1, max_size=5))
def test_every_measurement_is_copied_from_the_output_it_came_from(runs: list[list[str]]) -> None:
    items: list[Item] = [Message(role="user", content="Measure it.")]
    for n, lines in enumerate(runs):
        items += bash(n, "make bench", "\n".join(lines))
    items.append(Message(role="user", content="Go on."))
    result = DigestCompressor(keep_last_groups=0, counter=COUNTER).compress(
        MemorySnapshot.from_items(items)
    )
    doc = SummaryDocument.parse(result.snapshot.summary or "")
    outputs = ["\n".join(lines) for lines in runs]
    for entry in doc.entries("measurements"):
        values = entry.partition(" → ")[2]
        for value in re.findall(r"`([^`]+)`", values):
            assert any(value in output for output in outputs), (value, outputs)
