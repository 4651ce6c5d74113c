"""Code names given in the task text (its code sample, backticks, prose) reach the summary."""

from __future__ import annotations

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors import DigestCompressor, digest_items
from compactkit.items import FunctionCall, FunctionCallOutput, Message
from compactkit.items.snapshot import MemorySnapshot

TASK = """Please fix the retry bug in `Client.request()`.

```python
class RetryPolicy:
    def backoff_for(self, attempt):
        return min(self.cap, 2 ** attempt)
```

It is called from `Transport.send()` via ledger/http/pool.py, like `pip` or `tox` would. \
Do not change `max_retries`."""


def test_the_task_code_sample_and_named_code_become_identifiers() -> None:
    doc = digest_items([Message(role="user", content=TASK)])
    identifiers = "\n".join(doc.entries("identifiers"))
    for name in ("RetryPolicy", "backoff_for", "Transport.send()", "ledger/http/pool.py"):
        assert f"`{name}` — named by the user" in identifiers, (name, identifiers)
    assert "`pip`" not in identifiers and "`tox`" not in identifiers  # words, not code names
    # already quoted verbatim by the goal or a constraint: not repeated
    assert "Client.request()" not in identifiers and "max_retries" not in identifiers


def test_a_folded_task_keeps_its_code_names_in_what_the_model_reads() -> None:
    counter = TiktokenCounter("o200k_base")
    items: list[Message | FunctionCall | FunctionCallOutput] = [Message(role="user", content=TASK)]
    for n in range(30):
        items += [
            FunctionCall(call_id=f"c{n}", name="bash", arguments='{"command": "pytest -q"}'),
            FunctionCallOutput(call_id=f"c{n}", output=f"run {n}: " + "ok " * 150),
        ]
    items.append(Message(role="user", content="Go on."))
    snapshot = MemorySnapshot.from_items(items)
    result = DigestCompressor(target_tokens=1500, counter=counter).compress(snapshot)
    assert result.outcome == "compacted"
    text = result.snapshot.render_items()
    seen = "\n".join(str(getattr(i, "text", "")) for i in text)
    assert "RetryPolicy" in seen and "backoff_for" in seen
