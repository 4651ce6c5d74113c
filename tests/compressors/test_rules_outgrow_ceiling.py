"""A digest with no target (``DigestCompressor(target_tokens=None)``) whose user's rules alone
outgrow the summary's own ceiling: kept whole they would make a summary the projection can never
send (it never cuts one), so the digest trims again without keeping them, newest kept. The
check is on the summary the compressor hands back: within its ceiling, and the newest rule in it."""

from __future__ import annotations

from compactkit.budget import counter_for
from compactkit.compressors import DigestCompressor
from compactkit.items import FunctionCall, FunctionCallOutput, Message
from compactkit.items.snapshot import MemorySnapshot

RULE = (
    "Always run the tests of module {n} before committing, and never touch file_{n}.py or its "
    "fixtures without asking me first."
)


def session(turns: int) -> MemorySnapshot:
    items: list[object] = [
        Message(role="user", content="Port the scheduler to the new queue; keep the API stable.")
    ]
    for n in range(turns):
        items.append(Message(role="user", content=RULE.format(n=n)))
        items += [
            FunctionCall(call_id=f"c{n}", name="bash", arguments=f'{{"command": "cat m_{n}.py"}}'),
            FunctionCallOutput(call_id=f"c{n}", output=f"def f_{n}():\n    return {n}\n" * 40),
            Message(role="assistant", content=f"Use a heap for queue {n}: it is faster."),
        ]
    items.append(Message(role="user", content="Now finish."))
    return MemorySnapshot.of(items)  # type: ignore[arg-type]


def test_rules_that_outgrow_the_ceiling_are_trimmed_like_the_rest_newest_kept() -> None:
    compressor = DigestCompressor(target_tokens=None, summary_cap_tokens=None)
    result = compressor.compress(session(300))
    summary = result.snapshot.summary or ""
    # kept whole, the 300 rules alone are ~4x the ceiling (the summary's text is held to it)
    assert counter_for("gpt-4o").count_text(summary) <= compressor.cap
    assert 0 < summary.count("Always run the tests of module") < 300
    assert RULE.format(n=0) not in summary  # the oldest rules went first...
    assert RULE.format(n=296) in summary  # ...the newest stayed
