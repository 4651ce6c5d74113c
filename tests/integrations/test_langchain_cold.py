"""``CompactkitMiddleware(cold_start="quick")``'s first call on a long thread
(``_langchain_cold.py``): it reads only the end a compaction keeps and digests the user's words before it, and what the LangChain chat
model receives still holds the request contract (rows a-g, tests/contract_support.py): under
budget, the newest group verbatim and last, the task and every rule present, no call without
its output, the summary once. Anything the shape check does not vouch for reads the thread
whole, as the default (``cold_start="full"``) always does: its first summary lists what the whole
thread's compaction lists."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from contract_support import RequestChecker
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from pydantic import Field

from compactkit.budget import counter_for
from compactkit.errors import ConfigError
from compactkit.integrations import _langchain_convert
from compactkit.integrations._langchain_cold import COLD_FROM
from compactkit.integrations.langchain import CompactkitMiddleware
from compactkit.items import Item, Message
from compactkit.testing import block_network

MODEL = "gpt-4o-mini"
BUDGET = 6_000
SYSTEM = "You fix the parser. Be brief."
TASK = "TASK-7"
RULES = ["RULE-A: always run pytest with -q.", "RULE-B: never edit setup.cfg."]


@pytest.fixture(autouse=True)
def _offline() -> Iterator[None]:
    with block_network():
        yield


class Recording(GenericFakeChatModel):
    """A chat model that answers "done." and keeps every message list it was called with."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def thread(
    turns: int, sizes: list[int], rule_turns: tuple[int, int] = (3, 40)
) -> list[BaseMessage]:
    """A finished coding thread: ``turns`` user turns, each a tool round and an answer; the
    first asks the task, two of them give a rule each."""
    out: list[BaseMessage] = []
    for n in range(turns):
        text = f"{TASK}: fix the parser in src/app.py." if n == 0 else f"question {n} on the parser"
        if n in rule_turns:
            text += " " + RULES[rule_turns.index(n)]
        out.append(HumanMessage(text))
        call = {"name": "read", "args": {"n": n}, "id": f"call_{n}", "type": "tool_call"}
        out.append(AIMessage("", tool_calls=[call]))  # type: ignore[list-item]
        size = sizes[n % len(sizes)]
        out.append(
            ToolMessage(f"result {n}: " + "line of output\n" * size, tool_call_id=f"call_{n}")
        )
        out.append(AIMessage(f"answer {n}: the parser reads line {n}."))
    out.append(HumanMessage("What is left to do?"))
    return out


def as_items(messages: list[BaseMessage]) -> list[Item]:
    """What the model received, as compactkit items (the summary as its sealed message)."""
    items: list[Item] = []
    for message in messages:
        converted = _langchain_convert.to_items(message, lambda reason: None)
        if isinstance(converted, str):
            items.append(Message(role="user", content=message.text))
        else:
            items += [item for item in converted if not isinstance(item, str)]
    return items


def first_call(
    messages: list[BaseMessage], monkeypatch: pytest.MonkeyPatch, **options: Any
) -> tuple[list[BaseMessage], int, Recording]:
    """The messages the chat model got on the agent's first call over ``messages``, and how
    many messages compactkit converted."""
    converted = [0]
    real = _langchain_convert.to_items

    def counting(message: BaseMessage, warn: Any) -> Any:
        converted[0] += 1
        return real(message, warn)

    monkeypatch.setattr(_langchain_convert, "to_items", counting)
    model = Recording(messages=iter([AIMessage("done.")] * 3))
    options.setdefault("cold_start", "quick")
    middleware = CompactkitMiddleware(MODEL, budget=BUDGET, **options)
    agent = create_agent(model, tools=[], system_prompt=SYSTEM, middleware=[middleware])
    agent.invoke({"messages": messages})
    return model.seen[0], converted[0], model


def checker() -> RequestChecker:
    return RequestChecker(
        model=MODEL,
        budget=BUDGET,
        instructions=SYSTEM,
        task=TASK,
        rules=list(RULES),
        newest=["What is left to do?"],
    )


def test_a_long_threads_first_call_reads_its_end_and_holds_the_contract(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    messages = thread(120, [5, 80, 20])
    assert len(messages) >= COLD_FROM
    sent, converted, _ = first_call(messages, monkeypatch)
    checker().check(as_items(sent), where="cold first call")
    assert converted < len(messages) // 4, "the whole thread was converted"
    assert sum(_langchain_convert.is_summary(m) for m in sent) == 1


def test_ainvoke_reads_cold_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """``awrap_model_call`` prepares the call in a worker thread: the same cold read."""
    messages = thread(120, [5, 80, 20])
    converted = [0]
    real = _langchain_convert.to_items

    def counting(message: BaseMessage, warn: Any) -> Any:
        converted[0] += 1
        return real(message, warn)

    monkeypatch.setattr(_langchain_convert, "to_items", counting)
    model = Recording(messages=iter([AIMessage("done.")]))
    middleware = CompactkitMiddleware(MODEL, budget=BUDGET, cold_start="quick")
    agent = create_agent(model, tools=[], system_prompt=SYSTEM, middleware=[middleware])
    asyncio.run(agent.ainvoke({"messages": messages}))
    assert converted[0] < len(messages) // 4
    checker().check(as_items(model.seen[0]), where="ainvoke")


def test_the_next_call_continues_from_the_cold_read(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = thread(120, [5, 80, 20])
    model = Recording(messages=iter([AIMessage("done.")] * 4))
    middleware = CompactkitMiddleware(MODEL, budget=BUDGET, cold_start="quick")
    agent = create_agent(model, tools=[], system_prompt=SYSTEM, middleware=[middleware])
    state = agent.invoke({"messages": messages})
    grown = [*state["messages"], HumanMessage("And the tests? RULE-C: keep it short.")]
    agent.invoke({"messages": grown})
    check = checker()
    check.check(as_items(model.seen[0]), where="first")
    check.rules.append("RULE-C: keep it short.")
    check.newest = ["And the tests? RULE-C: keep it short."]
    check.check(as_items(model.seen[1]), where="second")


def test_later_compactions_fold_into_the_cold_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next compactions (the thread grows past the trigger) merge into the summary the cold
    read wrote: the task and the rules stay on every call."""
    messages = thread(120, [5, 80, 20])
    model = Recording(messages=iter([AIMessage("done.")] * 40))
    middleware = CompactkitMiddleware(MODEL, budget=BUDGET, cold_start="quick")
    agent = create_agent(model, tools=[], system_prompt=SYSTEM, middleware=[middleware])
    state = agent.invoke({"messages": messages})
    check = checker()
    for n in range(30):
        ask = f"question {200 + n}: and now? " + "context line. " * 40
        call = {"name": "read", "args": {"n": n}, "id": f"late_{n}", "type": "tool_call"}
        grown = [
            *state["messages"],
            HumanMessage(ask),
            AIMessage("", tool_calls=[call]),  # type: ignore[list-item]
            ToolMessage("late output line\n" * 120, tool_call_id=f"late_{n}"),
        ]
        state = agent.invoke({"messages": grown})
    assert len(model.seen) == 31
    summaries = {m.text for sent in model.seen for m in sent if m.text.startswith("<compactkit_")}
    assert len(summaries) > 2, "the thread never compacted again"
    check.check(as_items(model.seen[0]), where="cold")
    for index, sent in enumerate(model.seen[1:], 1):
        check.newest = ["late output line\n" * 120]
        check.check(as_items(sent), where=f"call {index}")


def test_call_ids_reused_after_the_cold_read_are_renamed_as_in_a_whole_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scripted and test models reuse call ids across runs: a later call reusing an id of the
    kept part is renamed for the memory, as the mirror does it on a whole read (the model still
    gets the thread's own ids: both calls named ``call_119``, as on a whole read)."""
    messages = thread(120, [5, 80, 20])
    model = Recording(messages=iter([AIMessage("done.")] * 5))
    middleware = CompactkitMiddleware(MODEL, budget=BUDGET, cold_start="quick")
    agent = create_agent(model, tools=[], system_prompt=SYSTEM, middleware=[middleware])
    state = agent.invoke({"messages": messages})
    check = checker()
    check.check(as_items(model.seen[0]), where="cold")
    for n in range(3):
        call = {"name": "read", "args": {"n": n}, "id": "call_119", "type": "tool_call"}
        grown = [
            *state["messages"],
            HumanMessage(f"again {n}"),
            AIMessage("", tool_calls=[call]),  # type: ignore[list-item]
            ToolMessage(f"output {n}", tool_call_id="call_119"),
        ]
        state = agent.invoke({"messages": grown})
        sent = model.seen[-1]
        assert isinstance(sent[-1], ToolMessage) and sent[-1].text == f"output {n}"
        joined = "\n".join(m.text for m in sent)
        assert TASK in joined and all(rule in joined for rule in RULES)
        tokens = counter_for(MODEL).count(as_items(sent)).tokens
        assert tokens <= BUDGET


def test_assistant_content_blocks_do_not_stop_the_cold_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An AIMessage's content as blocks (as ChatAnthropic returns it) reads without question."""
    messages = [
        AIMessage([{"type": "text", "text": m.text}], tool_calls=m.tool_calls)
        if isinstance(m, AIMessage)
        else m
        for m in thread(120, [5, 80, 20])
    ]
    sent, converted, _ = first_call(messages, monkeypatch)
    assert converted < len(messages) // 4
    checker().check(as_items(sent), where="content blocks")


@settings(deadline=None, max_examples=12)
@given(
    turns=st.integers(70, 160),
    sizes=st.lists(st.integers(0, 400), min_size=1, max_size=5),
    rule_turns=st.tuples(st.integers(0, 60), st.integers(1, 69)).filter(lambda t: t[0] != t[1]),
)
def test_the_contract_holds_on_any_long_threads_first_call(
    turns: int, sizes: list[int], rule_turns: tuple[int, int]
) -> None:
    messages = thread(turns, sizes, rule_turns)
    with pytest.MonkeyPatch.context() as monkeypatch:
        sent, _, _ = first_call(messages, monkeypatch)
    checker().check(as_items(sent), where=f"{turns} turns, sizes {sizes}")


@pytest.mark.parametrize(
    "change",
    ["unknown kind", "summary in the thread", "short thread", "the default"],
)
def test_what_the_shape_check_cannot_vouch_for_reads_the_thread_whole(
    change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = thread(120, [5, 80, 20])
    options: dict[str, Any] = {}
    if change == "unknown kind":
        messages.insert(9, ChatMessage(content="a note", role="critic"))
    elif change == "summary in the thread":
        summary = _langchain_convert.summary_message(f"## Goal\n- {TASK}\n{RULES[0]}\n{RULES[1]}")
        messages = [summary, *messages[4:]]
    elif change == "the default":
        options["cold_start"] = "full"
    else:
        messages = thread(20, [5, 80, 20], (3, 10))
    sent, converted, _ = first_call(messages, monkeypatch, **options)
    assert converted >= len(messages)
    checker().check(as_items(sent), where=change)


def test_leading_system_messages_stay_first_and_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [SystemMessage("Answer in English."), *thread(120, [5, 80, 20])]
    sent, converted, _ = first_call(messages, monkeypatch)
    assert converted < len(messages) // 4
    assert [m.text for m in sent[:2]] == [SYSTEM, "Answer in English."]
    check = checker()
    check.instructions = "Answer in English."
    check.check(as_items(sent[1:]), where="leading system message")


def test_the_default_first_call_lists_the_unread_parts_files_a_quick_one_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the quick read trades away, at the chat model: a file the agent edited early in the
    thread is in the default first call's summary (as in a warm process's), not in the quick
    one's (docs/integrations.md says so)."""
    messages = thread(120, [5, 80, 20])
    edit = {
        "name": "edit_file",
        "args": {"path": "src/legacy_lexer.py", "text": "x = 1"},
        "id": "call_edit",
        "type": "tool_call",
    }
    messages[5:5] = [
        AIMessage("", tool_calls=[edit]),  # type: ignore[list-item]
        ToolMessage("edited src/legacy_lexer.py", tool_call_id="call_edit"),
    ]
    summaries = {}
    for cold_start in ("full", "quick"):
        sent, converted, _ = first_call(messages, monkeypatch, cold_start=cold_start)
        checker().check(as_items(sent), where=cold_start)
        summaries[cold_start] = "".join(m.text for m in sent if _langchain_convert.is_summary(m))
        assert (converted >= len(messages)) is (cold_start == "full")
    assert "src/legacy_lexer.py" in summaries["full"]
    assert "src/legacy_lexer.py" not in summaries["quick"]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"mode": "compact"}, 'mode="compact"'),
        ({"on_event": print}, "on_event="),
        ({"before_compaction": lambda request: True}, "before_compaction="),
        ({"budget_visible": True}, "budget_visible=True"),
    ],
)
def test_a_quick_start_that_would_hide_a_fold_is_refused(
    options: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        CompactkitMiddleware(MODEL, budget=BUDGET, cold_start="quick", **options)


def test_cold_start_takes_full_or_quick() -> None:
    with pytest.raises(ConfigError, match='"full" or "quick"'):
        CompactkitMiddleware(MODEL, budget=BUDGET, cold_start="fast")  # type: ignore[arg-type]
