"""The first call on a long list reads only what a prompt can reach (``integrations/_cold.py``),
and sends what reading the whole list sends: the same prompt, tokens, report and events, on
that call and on the calls that follow as the list grows."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget import EstimateCounter
from compactkit.errors import BudgetError
from compactkit.governance import ContextProjector
from compactkit.integrations import CompactedMessages, MessageCompactor, compact_messages
from compactkit.integrations._cold import COLD_FROM, plain_chat_items
from compactkit.integrations._wire import WireConverter
from compactkit.runtime.events import Event

MODEL = "gpt-4o"

STEP = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 60)),
    st.tuples(st.just("tools"), st.lists(st.integers(1, 400), min_size=1, max_size=3)),
    st.tuples(st.just("answer"), st.integers(1, 40)),
)
ODD = st.tuples(st.just("odd"), st.integers(0, 7))


def render(step: tuple[str, Any], n: int) -> list[Any]:
    """Chat messages for one step; ``odd`` ones are what a cold read must not get wrong."""
    kind, size = step
    if kind == "user":
        return [{"role": "user", "content": f"request {n}: " + "detail " * size}]
    if kind == "answer":
        return [{"role": "assistant", "content": "done " * size}]
    if kind == "tools":
        ids = [f"call_{n}_{k}" for k in range(len(size))]
        return [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}}
                    for i in ids
                ],
            },
            *[
                {"role": "tool", "tool_call_id": i, "content": f"{i}\n" + "x line\n" * lines}
                for i, lines in zip(ids, size, strict=True)
            ],
        ]
    odd: list[list[Any]] = [
        [{"role": "function", "name": "legacy", "content": "old style"}],  # passed through
        [{"role": "tool", "tool_call_id": f"lost_{n}", "content": "answers no call"}],
        [  # a call that never gets its output
            {
                "role": "assistant",
                "content": "let me look",
                "tool_calls": [{"id": f"open_{n}", "function": {"name": "ls", "arguments": ""}}],
            }
        ],
        [  # a server that numbers calls per response: the id comes back every turn
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_0", "function": {"name": "ls", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "call_0", "content": "a\nb"},
        ],
        [{"role": "user", "content": [{"type": "text", "text": f"parts {n}"}]}],
        [{"role": "user", "content": f"with extra {n}", "metadata": {"k": 1}}],
        [{"role": "system", "content": f"mid-conversation rule {n}"}],
        [{"role": "user"}],  # no content: passed through
    ]
    return odd[size]


def conversation(steps: list[tuple[str, Any]], system: int) -> list[Any]:
    messages: list[Any] = [{"role": "system", "content": f"rule {k}"} for k in range(system)]
    messages.append({"role": "user", "content": "start"})
    for n, step in enumerate(steps):
        messages += render(step, n)
    return messages


def same(cold: CompactedMessages, whole: CompactedMessages, seen: list[Event]) -> None:
    assert cold.send == whole.send
    assert cold.history == whole.history
    assert cold.tokens == whole.tokens <= cold.budget == whole.budget
    assert cold.report == whole.report
    assert cold.events == whole.events
    assert list(whole.events) == seen  # (what the callback saw is what a result reports)


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(STEP, min_size=180, max_size=220),
    odd=st.lists(st.tuples(st.integers(0, 220), ODD), max_size=3),
    more=st.lists(STEP | ODD, min_size=1, max_size=6),
    system=st.integers(0, 2),
    budget=st.integers(400, 2500),
    estimate=st.booleans(),
)
def test_a_cold_call_sends_what_reading_the_whole_list_sends(
    steps: list[tuple[str, Any]],
    odd: list[tuple[int, tuple[str, Any]]],
    more: list[tuple[str, Any]],
    system: int,
    budget: int,
    estimate: bool,
) -> None:
    for at, step in odd:  # a few odd messages anywhere: the unread part or the read one
        steps = [*steps[:at], step, *steps[at:]]
    messages = conversation(steps, system)

    def options() -> dict[str, Any]:  # a projector each: it remembers its sessions' prompts
        if estimate:
            return {"projector": ContextProjector(EstimateCounter(4.0), budget=budget)}
        return {"budget": budget}

    cold = MessageCompactor(MODEL, compaction=False, **options())
    seen: list[Event] = []
    # A callback sees every event as it happens: such a compactor reads the whole list.
    whole = MessageCompactor(MODEL, compaction=False, on_event=seen.append, **options())
    for n, step in enumerate([None, *more]):
        if step is not None:
            messages = [*messages, *render(step, 1000 + n)]
        seen.clear()
        outcomes = [outcome(compactor, messages) for compactor in (cold, whole)]
        if isinstance(outcomes[0], CompactedMessages):
            assert isinstance(outcomes[1], CompactedMessages)
            same(outcomes[0], outcomes[1], seen)
        else:  # what never fits fails the same way
            assert repr(outcomes[0]) == repr(outcomes[1])
            return


def outcome(compactor: MessageCompactor, messages: list[Any]) -> CompactedMessages | Exception:
    try:
        return compactor(messages)
    except BudgetError as exc:
        return exc


def bench_like(turns: int, ids: str = "c") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"step {n}: fix the failing test " * 3})
        call = {"id": f"{ids}{n}", "function": {"name": "run_tests", "arguments": '{"k": 1}'}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        output = "\n".join(f"test_{n}_{k} PASSED" for k in range(40 if n % 3 else 400))
        messages.append({"role": "tool", "tool_call_id": f"{ids}{n}", "content": output})
        messages.append({"role": "assistant", "content": f"fixed step {n}"})
    return messages


def test_a_long_list_is_read_cold_and_the_loop_goes_on_from_it() -> None:
    messages = bench_like(400)
    assert len(messages) >= COLD_FROM
    compactor = MessageCompactor(MODEL, compaction=False, budget=8_000)
    seen: list[Event] = []
    whole = MessageCompactor(MODEL, compaction=False, budget=8_000, on_event=seen.append)
    turn = compactor(messages)
    # The guard that the comparisons here exercise the cold read: items were left unread.
    assert compactor._unread is not None and compactor._unread[0] > 1000
    same(turn, whole(messages), seen)
    assert turn.send[0] == messages[0] and turn.send[-1] is messages[-1]
    assert turn.report.omitted > 1000
    for n in range(3):  # the loop: [*history, reply, new input]
        messages = [
            *turn.history,
            {"role": "assistant", "content": f"reply {n}"},
            {"role": "user", "content": f"next {n}"},
        ]
        seen.clear()
        turn = compactor(messages)
        same(turn, whole(messages), seen)


def test_compact_messages_reads_cold_too() -> None:
    messages = bench_like(300)
    turn = compact_messages(messages, model=MODEL, compaction=False, budget=6_000)
    whole = MessageCompactor(MODEL, compaction=False, budget=6_000, on_event=lambda _: None)
    reference = whole(messages)
    assert turn.send == reference.send and turn.report == reference.report


@settings(max_examples=300, deadline=None)
@given(
    message=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        *("role", "content", "name", "tool_calls", "tool_call_id"),
                        *("id", "type", "function", "arguments", "extra"),
                    ]
                ),
                inner,
                max_size=5,
            )
        ),
        max_leaves=12,
    ),
    role=st.sampled_from(["system", "developer", "user", "assistant", "tool", "function", None]),
)
def test_what_the_shape_check_passes_converts_without_question(message: Any, role: Any) -> None:
    """The unread messages get a shape check only: whatever passes it must convert, with no
    passthrough and no error, to exactly the items it counted."""
    if isinstance(message, dict) and role is not None:
        message = {**message, "role": role}
    shape = plain_chat_items([message])
    if shape is None:
        return
    passed: list[Any] = []
    items = WireConverter("chat").to_items(message, 0, passed.append)
    assert passed == []
    count, call_ids = shape
    assert len(items) == count
    assert [getattr(item, "call_id", None) for item in items if item.type == "function_call"] == (
        call_ids
    )


def tool_round(n: int, call_id: str, lines: int) -> list[dict[str, Any]]:
    call = {"id": call_id, "function": {"name": "grep", "arguments": f'{{"n": {n}}}'}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": f"hit {n}\n" * lines},
    ]


def test_the_latest_user_input_far_back_is_kept_as_reading_the_whole_list_keeps_it() -> None:
    messages = bench_like(200)
    messages.append({"role": "user", "content": "now grep everything"})
    for n in range(150):  # a long tool loop: the latest user input is far behind the window
        messages += tool_round(n, f"g{n}", 30)
    seen: list[Event] = []
    cold = MessageCompactor(MODEL, compaction=False, budget=3_000)
    whole = MessageCompactor(MODEL, compaction=False, budget=3_000, on_event=seen.append)
    turn = cold(messages)
    assert cold._unread is not None  # (the guard: read cold)
    same(turn, whole(messages), seen)
    assert {"role": "user", "content": "now grep everything"} in turn.send


def test_a_call_id_reused_after_the_unread_part_is_renamed_as_a_whole_read_renames_it() -> None:
    """Servers that number calls per response reuse ids: a call read later with an id of an
    unread call is renamed inside compactkit as if the whole list had been read (a masked
    output's call id in the report shows it)."""
    messages = bench_like(10)
    messages += tool_round(0, "call_0", 2)  # unread, once the list goes on
    messages += bench_like(300, ids="d")[1:]
    seen: list[Event] = []
    cold = MessageCompactor(MODEL, compaction=False, budget=4_000)
    whole = MessageCompactor(MODEL, compaction=False, budget=4_000, on_event=seen.append)
    turn = cold(messages)
    assert cold._unread is not None  # (the guard: read cold)
    same(turn, whole(messages), seen)
    for n in range(3):  # the id again, with outputs large enough to be masked
        messages = [*messages, *tool_round(n, "call_0", 400), {"role": "user", "content": "go"}]
        seen.clear()
        turn = cold(messages)
        same(turn, whole(messages), seen)
    assert any(call_id.startswith("call_0") for call_id in turn.report.masked_call_ids)


def test_a_long_list_that_fits_is_read_whole() -> None:
    """No message is out of reach: nothing is left unread and the prompt is the whole list."""
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    messages += [{"role": "assistant", "content": f"word {n}"} for n in range(400)]
    messages += [{"role": "user", "content": f"q{n}"} for n in range(3)]
    turn = compact_messages(messages, model=MODEL, compaction=False, budget=40_000)
    assert turn.send == messages and turn.report.omitted == 0


def sparse(turns: int) -> list[dict[str, Any]]:
    """Texts of far fewer tokens than characters / 4 (rules of "=" and "-"): the first chunk
    the search guesses from their length is too short, and the reachable end starts before it."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"step {n}: " + "=" * 64 * 30})
        call = {"id": f"s{n}", "function": {"name": "lint", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"s{n}", "content": ("-" * 64 + "\n") * 6})
        messages.append({"role": "assistant", "content": f"ok {n}"})
    return messages


def test_a_reach_longer_than_the_first_guess_is_read_cold_as_the_whole_list_reads() -> None:
    """The unread messages' shape check starts while the tokenizer loads, on the messages
    before the first chunk; the search then reads further back, and the cut falls inside that
    checked part: the items the unread part stands for are counted from where the cut is."""
    messages = sparse(800)
    seen: list[Event] = []
    cold = MessageCompactor(MODEL, compaction=False, budget=30_000)
    whole = MessageCompactor(MODEL, compaction=False, budget=30_000, on_event=seen.append)
    turn = cold(messages)
    assert cold._unread is not None and cold._unread[0] > 0  # (the guard: read cold)
    same(turn, whole(messages), seen)
    for n in range(2):  # and the loop goes on from it
        messages = [*messages, *tool_round(n, f"t{n}", 3), {"role": "user", "content": "go"}]
        seen.clear()
        same(cold(messages), whole(messages), seen)
