"""Invariants of ``MessageCompactor`` on generated agent conversations (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from compactkit import FunctionCall, MemorySnapshot, chat_to_items, counter_for
from compactkit.formats import responses_to_items, to_plain, validate_chat, validate_responses
from compactkit.integrations import MessageCompactor

MODEL = "gpt-4"
COUNTER = counter_for(MODEL)

# One step of a conversation: a user turn, a (parallel) tool round trip with output sizes in
# lines, an unknown provider item, or an assistant answer.
STEP = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 300)),
    st.tuples(st.just("tools"), st.lists(st.integers(1, 250), min_size=1, max_size=3)),
    st.tuples(st.just("unknown"), st.just(0)),
    st.tuples(st.just("answer"), st.integers(1, 100)),
)


def render(format: str, step: tuple[str, Any], n: int) -> list[dict[str, Any]]:
    kind, size = step
    if kind == "user":
        return [{"role": "user", "content": f"request {n}: " + "detail " * size}]
    if kind == "answer":
        if format == "chat":
            return [{"role": "assistant", "content": "done " * size}]
        return [{"type": "message", "role": "assistant", "content": "done " * size}]
    if kind == "unknown":
        if format == "chat":
            return [{"role": "function", "name": "legacy", "content": "old style"}]
        return [{"type": "web_search_call", "id": f"ws_{n}", "status": "completed"}]
    ids = [f"call_{n}_{k}" for k in range(len(size))]
    outputs = [
        "\n".join(f"{i}: line {j}" for j in range(lines))
        for i, lines in zip(ids, size, strict=True)
    ]
    if format == "chat":
        calls = [
            {"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}}
            for i in ids
        ]
        return [
            {"role": "assistant", "content": None, "tool_calls": calls},
            *[
                {"role": "tool", "tool_call_id": i, "content": o}
                for i, o in zip(ids, outputs, strict=True)
            ],
        ]
    return [
        *[{"type": "function_call", "call_id": i, "name": "read", "arguments": "{}"} for i in ids],
        *[
            {"type": "function_call_output", "call_id": i, "output": o}
            for i, o in zip(ids, outputs, strict=True)
        ],
    ]


@settings(max_examples=25, deadline=None)
@given(
    format=st.sampled_from(["chat", "responses"]),
    steps=st.lists(STEP, min_size=1, max_size=40),
    keep_history=st.booleans(),
)
# Pins and the newest group over the ladder's target: the window rung dropped the small group
# between them, with nothing folded anywhere, to save 19 tokens that reached no target.
@example(
    format="chat",
    steps=[("unknown", 0), ("tools", [238]), ("tools", [1]), ("tools", [238])],
    keep_history=False,
)
# The newest group alone near the target: the window forgot the small group before it (19
# tokens) to reach a target the request met within the budget anyway.
@example(format="chat", steps=[("tools", [1]), ("tools", [91, 250, 250])], keep_history=False)
def test_every_call_fits_keeps_pairs_and_loses_nothing(
    format: str, steps: list[tuple[str, Any]], keep_history: bool
) -> None:
    compactor = MessageCompactor(MODEL, format=format)  # type: ignore[arg-type]
    messages: list[Any] = [{"role": "user", "content": "start"}]
    written_calls: set[str] = set()
    unknown: list[Any] = []
    for n, step in enumerate(steps):
        new = render(format, step, n)
        unknown += [m for m in new if m.get("role") == "function" or "web_search" in str(m)]
        written_calls.update(
            m.get("call_id") or c["id"]
            for m in new
            for c in (m.get("tool_calls") or [{"id": None}])
            if m.get("call_id") or c["id"]
        )
        messages = [*messages, *new]
        turn = compactor(messages)
        plain = [to_plain(m) for m in turn.send if not _is_unknown(m, unknown)]
        # 1. A provider would accept it: under budget (counted independently), pairs intact.
        if format == "chat":
            validate_chat(plain, mode="raise")
            items = chat_to_items(plain)
        else:
            validate_responses(plain, mode="raise")
            items = responses_to_items(plain)
        assert turn.tokens <= turn.budget
        counted = COUNTER.count(items).tokens
        assert counted == turn.tokens if not unknown else counted < turn.tokens
        # 2. The latest user message and every unknown item are sent as given.
        latest = next(m for m in reversed(messages) if m.get("role") == "user")
        assert any(m is latest for m in turn.send)
        for item in unknown:
            assert sum(m is item for m in turn.send) == 1
            assert sum(m is item for m in turn.history) == 1
        # 3. Nothing is lost: a call missing from the history was folded into the summary.
        history = [to_plain(m) for m in turn.history if not _is_unknown(m, unknown)]
        read = chat_to_items(history) if format == "chat" else responses_to_items(history)
        kept = {i.call_id for i in read if isinstance(i, FunctionCall)}
        if written_calls - kept:
            assert MemorySnapshot.from_items(read).summary
        if keep_history:
            messages = turn.history


def _is_unknown(message: Any, unknown: list[Any]) -> bool:
    return any(message is item for item in unknown)
