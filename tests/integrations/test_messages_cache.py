"""The stateless ``compact_messages`` in a loop answers as a fresh compactor does, and the O(1)
check that recognises a list (``SeenList``) agrees with the plain whole-prefix comparison."""

from __future__ import annotations

import itertools
import random
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit.formats import to_plain
from compactkit.integrations import CompactedMessages, MessageCompactor, compact_messages
from compactkit.integrations._seen import SeenList

MODEL = "gpt-4"  # an 8k window: the lists below overflow it and compact
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def chat_turn(rng: random.Random, turn: int) -> list[dict[str, Any]]:
    """A user turn of a coding agent: a question, a tool round trip, an answer."""
    call_id = f"call_{turn}_{rng.randint(0, 9)}"
    call = {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    size = rng.choice([20, 80, 400, 1500])
    return [
        {"role": "user", "content": f"step {turn}: fix test_{turn}.py"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": f"line {turn}\n" * size},
        {"role": "assistant", "content": f"fixed test_{turn}.py"},
    ]


NUMBERS = itertools.count()  # a new conversation per example (equal lists share a compactor)
EDITS = st.lists(
    st.tuples(
        st.sampled_from(["append", "append", "append", "edit", "truncate", "reorder", "keep"]),
        st.integers(0, 10_000),
    ),
    min_size=1,
    max_size=14,
)


def answer(turn: CompactedMessages) -> tuple[Any, ...]:
    """What a user sees of a call: the prompt, the history, the count, whether it compacted."""
    return (
        [to_plain(m) for m in turn.send],
        [to_plain(m) for m in turn.history],
        turn.tokens,
        turn.budget,
        turn.compacted,
    )


def edited(messages: list[Any], edit: str, at: int, rng: random.Random, n: int) -> list[Any]:
    """``messages`` after one edit a loop may make between two calls (a new list)."""
    out = list(messages)
    if edit == "append" or len(out) < 3:
        return [*out, *chat_turn(rng, n)]
    position = at % len(out)
    if edit == "edit":  # a message replaced by another (a redaction, an edited question)
        out[position] = {"role": "user", "content": f"edited {n} at {position}"}
    elif edit == "truncate":  # the last messages dropped (a retry, an undo)
        del out[max(1, position) :]
        out.append({"role": "user", "content": f"again {n}"})
    elif edit == "reorder":
        other = (position * 7 + 3) % len(out)
        out[position], out[other] = out[other], out[position]
        out.append({"role": "user", "content": f"reordered {n}"})
    return out


@settings(max_examples=20, deadline=None)
@given(edits=EDITS, compaction=st.booleans(), keep_history=st.booleans(), seed=st.integers(0, 99))
# The system message replaced by a user message after a compaction: the summary is no longer
# at its own place, so it is read back as quoted text (and memory.restore must take that).
@example(edits=[("append", 0), ("edit", 0)], compaction=True, keep_history=True, seed=0)
# A fresh compactor numbers the returned list afresh: summaries of plain lists carry no
# provenance references (they named the cached mirror's seqs and so differed between paths).
@example(edits=[("append", 0)] * 3, compaction=True, keep_history=True, seed=0)
def test_the_stateless_call_in_a_loop_answers_as_the_uncached_paths(
    edits: list[tuple[str, int]], compaction: bool, keep_history: bool, seed: int
) -> None:
    """Every call answers as the stateful compactor given the same lists does; and, unless a
    compaction's state lives only in the compactor (the loop keeps the full list, not the
    returned history), as a fresh compactor reading the list from the start."""
    rng = random.Random(seed)
    stateful = MessageCompactor(MODEL, compaction=compaction)
    messages: list[Any] = [{"role": "system", "content": f"conversation {next(NUMBERS)}"}]
    for n, (edit, at) in enumerate(edits):
        messages = edited(messages, edit, at, rng, n)
        cached = compact_messages(messages, model=MODEL, tools=TOOLS, compaction=compaction)
        assert answer(cached) == answer(stateful(messages, tools=TOOLS))
        if keep_history or not compaction:
            fresh = MessageCompactor(MODEL, compaction=compaction)(messages, tools=TOOLS)
            assert answer(cached) == answer(fresh)
        if keep_history:
            messages = cached.history


def test_a_loop_of_stateless_calls_reads_each_message_once() -> None:
    """Each call converts only the new messages, for two conversations taking turns: an
    unreadable (passed-through) message is reported when it is read, and not again."""
    conversations: list[list[Any]] = [[{"role": "user", "content": f"start {k}"}] for k in range(2)]
    warnings = []
    for n in range(6):
        for k, messages in enumerate(conversations):
            legacy = {"role": "function", "name": "legacy", "content": f"old {k} {n}"}
            messages = [*messages, legacy, {"role": "user", "content": f"next {n}"}]
            turn = compact_messages(messages, model=MODEL)
            warnings.append(sum(type(e).__name__ == "PassthroughEvent" for e in turn.events))
            conversations[k] = turn.history
    assert warnings == [1] * 12


class Plain:
    """The plain version ``SeenList`` replaces: compare the whole prefix."""

    def __init__(self, messages: list[Any]) -> None:
        self.messages = list(messages)

    def starts(self, messages: list[Any]) -> bool:
        n = len(self.messages)
        return len(messages) >= n and messages[:n] == self.messages


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(1, 300),
    edit=st.sampled_from(["same", "append", "truncate", "recent", "first", "new", "anywhere"]),
    at=st.integers(0, 10_000),
    full_below=st.sampled_from([0, 1_024]),
)
def test_the_sampled_check_agrees_with_the_whole_comparison(
    size: int, edit: str, at: int, full_below: int
) -> None:
    seen = [{"n": k} for k in range(size)]
    sampled, plain = SeenList(seen, full_compare_below=full_below), Plain(seen)
    messages = list(seen)
    if edit == "append":
        messages.append({"n": -1})
    elif edit == "truncate":
        del messages[at % size :]
    elif edit == "recent":  # one of the eight most recent seen messages replaced
        messages[size - 1 - at % min(8, size)] = {"n": -1}
    elif edit == "first":
        messages[0] = {"n": -1}
    elif edit == "new":
        messages = [{"n": -1 - k} for k in range(size + 1)]
    elif edit == "anywhere":
        messages[at % size] = {"n": -1}
    expected = plain.starts(messages)
    if edit != "anywhere":
        assert sampled.starts(messages) == expected
        return
    # An old message replaced: noticed at once, or by a later call within n / 8 calls.
    assert not expected
    calls = max(1, size // 8) + 1
    assert not all(sampled.starts(messages) for _ in range(calls))


def test_equal_messages_rebuilt_each_call_are_recognised() -> None:
    """A loop that rebuilds its dicts (read back from JSON) is read incrementally too."""
    seen = [{"n": k} for k in range(3_000)]
    check = SeenList(seen)
    assert check.starts([dict(m) for m in seen] + [{"n": -1}])
    assert not check.starts([dict(m) for m in seen[:-1]] + [{"n": -1}, {"n": -2}])
