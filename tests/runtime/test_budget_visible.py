"""``Agent(..., budget_visible=True)``: the model sees its budget (a status line at the end of
every request, never stored) and can ask for a compaction with ``compact_context()``, which
the policy honours at the next step — checked in the requests that reach the (fake) OpenAI
endpoint."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from runtime_support import make_agent, run

from compactkit import ConfigError, InMemoryMemory, Message, counter_for
from compactkit.governance import ContextProjector
from compactkit.governance.status import BudgetStatus, is_budget_status
from compactkit.runtime.governor import Governor
from compactkit.testing import FakeOpenAI, text, tool_call

MODEL = "gpt-4o"
BUDGET = 3000  # default shares: compaction at 80 % (2,400 tokens), down to 50 % (1,500)
LOW = 100  # the provider's reported prompt tokens: low, so the usage trigger never fires
STATUS = re.compile(r"^<context-status>context (\d+)% used; compaction at 80%</context-status>$")


def filled(memory: Any, turns: int = 6) -> None:
    """Turns worth about 60 % of the budget: over the target, under the trigger."""
    for k in range(turns):
        memory.add_user_input(f"subtask {k}: look at file-{k}.py")
        memory.add_output_items(
            [Message(role="assistant", content=f"turn-{k} detail: " + "checked line " * 110)]
        )


def last_message(request: dict[str, Any], api: str) -> dict[str, Any]:
    return request["messages"][-1] if api == "chat" else request["input"][-1]


def content(message: dict[str, Any]) -> str:
    body = message["content"]
    return body if isinstance(body, str) else "".join(part["text"] for part in body)


def shares(fake: FakeOpenAI, api: str) -> list[int]:
    """The used share each request's status line states (every request must end with one)."""
    found = []
    for request in fake.requests:
        last = last_message(request, api)
        assert last["role"] == "user"
        match = STATUS.match(content(last))
        assert match, content(last)
        found.append(int(match.group(1)))
    return found


def tool_answers(request: dict[str, Any], api: str) -> list[str]:
    if api == "chat":
        return [m["content"] for m in request["messages"] if m["role"] == "tool"]
    return [i["output"] for i in request["input"] if i.get("type") == "function_call_output"]


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_requested_compaction_runs_before_the_next_request(mode: str, api: str) -> None:
    fake = FakeOpenAI(
        [
            tool_call("compact_context", {}, prompt_tokens=LOW),
            text("subtask 6 done", prompt_tokens=LOW),
        ]
    )
    agent = make_agent(fake, mode, api=api, budget=BUDGET, budget_visible=True)
    session = agent.new_session()
    filled(session.memory)
    result = run(session, mode, "subtask 6: now the tests")
    assert result.output == "subtask 6 done"
    first, second = fake.requests
    assert "turn-0 detail" in str(first)  # nothing compacted before the request
    assert [t["function"]["name"] if api == "chat" else t["name"] for t in first["tools"]] == [
        "compact_context"
    ]
    (answer,) = tool_answers(second, api)
    assert answer.startswith("Compaction requested: it runs before your next request")
    assert "turn-0 detail" not in str(second)  # folded by the requested compaction
    assert "subtask 6: now the tests" in str(second)  # the newest turn stays whole
    before, after = shares(fake, api)
    assert 50 < before < 80  # over the target, under the trigger: the policy alone would wait
    assert after < before
    assert len(result.compactions) == 1
    # The status line is never stored: not in the memory, not in what a compaction folded.
    stored = [*session.memory.snapshot().items, *session.memory.history()]
    assert not any("<context-status>" in str(item) for item in stored)
    assert "<context-status>" not in (session.memory.snapshot().summary or "")


def test_a_second_request_right_after_is_answered_plainly_and_compacts_nothing() -> None:
    fake = FakeOpenAI(
        [
            tool_call("compact_context", {}, prompt_tokens=LOW),
            text("one", prompt_tokens=LOW),
            tool_call("compact_context", {}, prompt_tokens=LOW),
            text("two", prompt_tokens=LOW),
        ]
    )
    agent = make_agent(fake, "sync", budget=BUDGET, budget_visible=True)
    session = agent.new_session()
    filled(session.memory)
    assert len(session.run("first").compactions) == 1
    again = session.run("second")
    (answer,) = tool_answers(fake.requests[3], "chat")[-1:]
    assert answer.startswith("Nothing to compact: the context is ")
    assert "at or under the compaction target of 50%" in answer
    assert again.compactions == ()
    # The request after the answer extends the one before it: nothing was folded again.
    third, fourth = fake.requests[2]["messages"], fake.requests[3]["messages"]
    assert fourth[: len(third) - 1] == third[:-1]


def test_a_request_with_nothing_to_fold_is_declined() -> None:
    fake = FakeOpenAI([tool_call("compact_context", {}, prompt_tokens=LOW), text("ok")])
    agent = make_agent(fake, "sync", budget=BUDGET, budget_visible=True)
    result = agent.new_session().run("a short task")
    (answer,) = tool_answers(fake.requests[1], "chat")
    assert answer.startswith("Nothing to compact: the context is ")
    assert result.compactions == ()
    assert shares(fake, "chat")[0] < 50


def test_without_budget_visible_no_status_and_no_tool() -> None:
    fake = FakeOpenAI([text("ok")])
    agent = make_agent(fake, "sync", budget=BUDGET)
    agent.new_session().run("hi")
    (request,) = fake.requests
    assert "tools" not in request
    assert "<context-status>" not in str(request)


@pytest.mark.parametrize("compaction", [True, False])
def test_the_status_line_fits_inside_the_budget_and_is_counted(compaction: bool) -> None:
    """Each request with the line, counted by the model's own counter, is within the budget
    (without compaction the history outgrows it and the window fills the budget: the line
    takes room from it), and the line is the only thing added to the projection."""
    counter = counter_for(MODEL)
    if compaction:
        governor = Governor.for_model(MODEL, budget=BUDGET, budget_visible=True)
        plain = Governor.for_model(MODEL, budget=BUDGET)
    else:  # a projector that fills the window up to the budget
        governor = Governor(ContextProjector(counter, budget=BUDGET), status=BudgetStatus())
        plain = Governor(ContextProjector(counter, budget=BUDGET))
    full = 0
    memory, twin = InMemoryMemory(), InMemoryMemory()
    for k in range(70):
        for m in (memory, twin):
            m.add_user_input(f"step {k}: " + "word " * (20 + k * 7 % 40))
            m.add_output_items([Message(role="assistant", content="done " * 20)])
        step = governor.step(memory)
        items = list(step.items)
        assert is_budget_status(items[-1])
        assert counter.count(items).tokens == step.projection.tokens <= BUDGET
        assert not any(is_budget_status(item) for item in memory.snapshot().items)
        # Without the line, the same history projects to the same items bar the line (as long
        # as no compaction or window cut differs between the two governors).
        other = plain.step(twin)
        # a step where the plain prompt plus the line would not have fit: the reserve mattered
        full += other.projection.tokens + counter.count_item(items[-1]) > BUDGET
        if not step.compacted and not other.compacted and len(items) - 1 == len(other.items):
            assert [i.model_dump() for i in items[:-1]] == [i.model_dump() for i in other.items]
    assert full or compaction  # the line fit where it had to take room


def test_the_line_without_compaction_says_only_what_is_used() -> None:
    governor = Governor.for_model(MODEL, budget=BUDGET, compaction=False, budget_visible=True)
    memory = InMemoryMemory()
    memory.add_user_input("hello")
    line = governor.step(memory).items[-1]
    assert isinstance(line, Message)
    assert re.fullmatch(r"<context-status>context \d+% used</context-status>", line.text)
    assert governor.request_compaction(memory).startswith("Compaction is off")


def test_bad_options_are_config_errors() -> None:
    fake = FakeOpenAI([])

    def compact_context() -> str:
        """Mine."""
        return "mine"

    with pytest.raises(ConfigError, match="rename your tool or drop budget_visible"):
        make_agent(fake, "sync", tools=[compact_context], budget_visible=True)
    with pytest.raises(ConfigError, match="budget_visible=True needs the governor"):
        make_agent(fake, "sync", governor=Governor.for_model(MODEL), budget_visible=True)
    with pytest.raises(ConfigError, match="status must be a BudgetStatus"):
        Governor.for_model(MODEL).__class__(
            Governor.for_model(MODEL).projector,
            status="yes",  # type: ignore[arg-type]
        )
    with pytest.raises(ConfigError, match="budget must be a positive int"):
        BudgetStatus(budget=0)


def big_newest(memory: InMemoryMemory, words: int) -> None:
    memory.add_user_input("the big one: " + "token " * words)


def test_a_request_after_a_compaction_that_could_not_reach_its_target_waits_to_rearm() -> None:
    """The newest turn alone is over the target: a compaction cannot get under it, so a
    request is declined (no summarizer paid for no progress) until the context grows."""
    governor = Governor.for_model(MODEL, budget=BUDGET, budget_visible=True)
    memory = InMemoryMemory()
    filled(memory, turns=4)
    big_newest(memory, 1900)
    first = governor.step(memory)
    assert first.compacted  # over the trigger
    answer = governor.request_compaction(memory)
    assert answer.startswith("Not now: the last compaction could not get the context under")
    assert not governor.step(memory).compacted


settings_ = settings(max_examples=40, deadline=None)


@settings_
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("user"), st.integers(1, 400)),
            st.tuples(st.just("assistant"), st.integers(1, 400)),
            st.tuples(st.just("request"), st.just(0)),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_requests_never_loop_and_every_prompt_fits(ops: list[tuple[str, int]]) -> None:
    """Any mix of turns and requests: every prompt (line included) is within the budget and
    ends with the line; a step compacts at most once, and without the trigger firing only when
    a request was accepted just before; an accepted request followed by a step that compacted
    leaves nothing for an immediate second request."""
    counter = counter_for(MODEL)
    governor = Governor.for_model(MODEL, budget=BUDGET, budget_visible=True)
    memory = InMemoryMemory()
    memory.add_user_input("start")
    accepted = False
    for kind, size in ops:
        if kind == "request":
            answer = governor.request_compaction(memory)
            accepted = answer.startswith(("Compaction requested", "A compaction is already"))
            continue
        if kind == "user":
            memory.add_user_input("u " * size)
        else:
            memory.add_output_items([Message(role="assistant", content="a " * size)])
        state_due = None
        step = governor.step(memory)
        compactions = [e for e in step.events if type(e).__name__ == "CompactionEvent"]
        assert len(compactions) <= 1
        if compactions and step.state is not None:
            state_due = governor.policy is not None and governor.policy.should_compact(step.state)
            assert state_due or accepted
        assert counter.count(list(step.items)).tokens == step.projection.tokens <= BUDGET
        assert is_budget_status(step.items[-1])
        if step.compacted and accepted and not state_due:
            assert governor.request_compaction(memory).startswith(("Nothing", "Not now"))
        accepted = False


def test_the_line_names_where_compaction_surely_fires() -> None:
    """A ``cache_cold`` part may never come: the line names the threshold that fires anyway."""
    from compactkit.governance import cache_cold, ratio_over, tokens_over

    trigger = ratio_over(0.8) | (ratio_over(0.5) & cache_cold(after=1800))
    governor = Governor.for_model(
        MODEL, budget=BUDGET, trigger=trigger, target=0.4, budget_visible=True
    )
    memory = InMemoryMemory()
    memory.add_user_input("hello")
    assert governor.step(memory).items[-1].text.endswith("compaction at 80%</context-status>")  # type: ignore[union-attr]
    both = Governor.for_model(
        MODEL,
        budget=BUDGET,
        trigger=tokens_over(900) & tokens_over(1500),
        target=600,
        budget_visible=True,
    )
    assert both.step(memory).items[-1].text.endswith("compaction at 50%</context-status>")  # type: ignore[union-attr]


def is_line(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return message["role"] == "user" and bool(
        re.fullmatch(r"<context-status>.*</context-status>", str(content))
    )


def test_a_plain_message_list_sees_the_line_and_can_ask_for_a_compaction() -> None:
    """``MessageCompactor`` (and ``compact_messages``) with a ``budget_visible`` governor: the
    line ends what is sent, never the history; a request through the compactor's governor and
    memory makes the next call compact."""
    from compactkit.integrations import MessageCompactor, compact_messages

    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(12):
        messages += [
            {"role": "user", "content": f"Read part {n}."},
            {"role": "assistant", "content": f"part {n}: " + "lorem ipsum dolor " * 40},
        ]
    governor = Governor.for_model("gpt-4o", budget=2_500, budget_visible=True)
    compactor = MessageCompactor("gpt-4o", governor=governor)
    turn = compactor(messages)
    assert is_line(turn.send[-1])
    assert not any(is_line(m) for m in turn.history)
    assert len(turn.history) == len(messages)  # nothing compacted yet: under the trigger

    with pytest.raises(ConfigError, match=r"governed_memory\(\) \(called\)"):
        governor.request_compaction(compactor.governed_memory)  # type: ignore[arg-type]
    answer = governor.request_compaction(compactor.governed_memory())
    assert "compact" in answer.lower()
    turn = compactor([*turn.history, {"role": "user", "content": "Now fix part 11."}])
    assert turn.compaction is not None and turn.compaction.changed
    assert len(turn.history) < len(messages)
    assert turn.send[-2]["content"] == "Now fix part 11." and is_line(turn.send[-1])

    stateless = compact_messages(
        messages, model="gpt-4o", governor=Governor.for_model("gpt-4o", budget_visible=True)
    )
    assert is_line(stateless.send[-1])
