"""The incremental mirror behind the LangChain middleware: whatever the state does between model
calls (grow, be rewritten, come back as equal copies from a checkpoint), the memory holds what a
fresh conversion of the current messages would hold."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from compactkit import FunctionCall, FunctionCallOutput
from compactkit.integrations._langchain_convert import to_items, to_messages
from compactkit.integrations._mirror import Mirror
from compactkit.items import Item, summary_message


def turn(n: int, calls: int, reuse_ids: bool, size: int = 0) -> list[BaseMessage]:
    ids = [f"call_{k}" if reuse_ids else f"call_{n}_{k}" for k in range(calls)]
    out: list[BaseMessage] = [HumanMessage(f"question {n}", id=f"h{n}")]
    tool_calls = [{"name": "read", "args": {"n": n}, "id": i, "type": "tool_call"} for i in ids]
    out.append(AIMessage("", tool_calls=tool_calls, id=f"a{n}"))  # type: ignore[arg-type]
    out += [
        ToolMessage(f"result {n} {i}" + " data" * size, tool_call_id=i, id=f"t{n}_{i}") for i in ids
    ]
    out.append(AIMessage(f"answer {n}", id=f"b{n}"))
    return out


def plain(items: tuple[Item, ...] | list[Item]) -> list[tuple[str, str]]:
    """Items without compactkit's bookkeeping (seq, renamed call ids)."""
    out = []
    for item in items:
        if isinstance(item, FunctionCall | FunctionCallOutput):
            out.append((item.type, item.call_id.split("~")[0]))
        else:
            out.append((item.type, str(getattr(item, "text", ""))))
    return out


def fresh(messages: list[BaseMessage]) -> tuple[str, list[tuple[str, str]]]:
    summary, items = "", []
    for message in messages:
        converted = to_items(message, [].append)
        if isinstance(converted, str):
            summary = converted
        else:
            items.extend(e for e in converted if not isinstance(e, str))
    return summary, plain(items)


actions = st.lists(
    st.sampled_from(["grow", "grow", "grow", "reload", "rewrite", "summarise"]), max_size=12
)


@settings(deadline=None, max_examples=60)
@given(actions, st.integers(0, 3), st.booleans())
def test_the_mirror_always_matches_a_fresh_conversion(
    steps: list[str], calls: int, reuse_ids: bool
) -> None:
    mirror: Mirror[BaseMessage] = Mirror(lambda message, warn: to_items(message, warn))
    messages: list[BaseMessage] = []
    turns = 0
    for step in steps:
        if step == "grow":
            messages = [*messages, *turn(turns, calls, reuse_ids)]
            turns += 1
        elif step == "reload":  # a checkpoint load: equal messages, new objects
            messages = [m.model_copy(deep=True) for m in messages]
        elif step == "rewrite" and messages:  # another middleware edited the state
            messages = messages[len(messages) // 2 :]
            while messages and isinstance(messages[0], ToolMessage | AIMessage):
                messages = messages[1:]
        elif step == "summarise" and messages:  # compactkit's own compaction, adopted
            kept = messages[-(2 + calls) :] if calls else messages[-2:]
            summary = to_messages([summary_message(f"summary of {turns} turns")])
            messages = [*summary, *kept]
            while len(messages) > 1 and isinstance(messages[1], ToolMessage):
                messages.pop(1)
        snapshot = mirror.sync(messages, lambda index, reason: None)
        summary_text, items = fresh(messages)
        assert snapshot.summary == summary_text
        assert plain(snapshot.items) == items
        # Call ids stay unique inside the memory even when the model reused them.
        calls_seen = [i.call_id for i in snapshot.items if isinstance(i, FunctionCall)]
        assert len(calls_seen) == len(set(calls_seen))
    # And back: the very messages of the state, the summary aside.
    rest = [m for m in messages if not isinstance(to_items(m, [].append), str)]
    assert to_messages(list(mirror.memory.snapshot().items)) == rest


# -- property: every prompt the middleware sends fits and keeps its tool pairs ----------------

BUDGETS = st.integers(150, 2_500)


@st.composite
def long_histories(draw: st.DrawFn) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for n in range(draw(st.integers(1, 8))):
        size = draw(st.sampled_from([0, 0, 50, 600]))  # now and then a bulky tool output
        out += turn(n, draw(st.integers(0, 2)), reuse_ids=draw(st.booleans()), size=size)
    if draw(st.booleans()):
        out = out[:-1]  # end on the tool results: the next call must see them
    return out


@settings(deadline=None, max_examples=40)
@given(long_histories(), BUDGETS)
def test_every_prompt_fits_keeps_pairs_and_the_newest_item(
    messages: list[BaseMessage], budget: int
) -> None:
    from langchain.agents.middleware.types import ModelRequest, ModelResponse
    from langchain_core.messages import SystemMessage

    from compactkit import BudgetError, Message, counter_for
    from compactkit.integrations.langchain import CompactkitMiddleware

    middleware = CompactkitMiddleware("gpt-4o-mini", budget=budget)
    system = SystemMessage("be brief")
    sent: list[list[BaseMessage]] = []

    def handler(request: ModelRequest) -> ModelResponse:
        sent.append(list(request.messages))
        return ModelResponse(result=[AIMessage("ok")])

    request = ModelRequest(
        model=None,  # type: ignore[arg-type]
        messages=messages,  # type: ignore[arg-type]
        system_message=system,
        tool_choice=None,
        tools=[],
        response_format=None,
        state={"messages": messages},  # type: ignore[typeddict-item]
        runtime=None,  # type: ignore[arg-type]
    )
    try:
        middleware.wrap_model_call(request, handler)
    except BudgetError:
        return  # what may never be dropped does not fit: refused, never sent over budget
    prompt = sent[0]
    items: list[Item] = [Message(role="system", content="be brief")]
    for message in prompt:
        items.extend(e for e in to_items(message, [].append) if not isinstance(e, str))
    assert counter_for("gpt-4o-mini").count(items).tokens <= budget
    open_calls: set[str] = set()
    for message in prompt:  # every result right after its call, every call answered
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in open_calls
            open_calls.discard(message.tool_call_id)
        else:
            assert not open_calls
            open_calls = {c["id"] for c in getattr(message, "tool_calls", [])}
    assert not open_calls
    newest = messages[-1]
    if prompt[-1] is not newest:  # the newest message is always sent: as given, or, a tool
        # result too large for the budget, cut with a marker (same id, same call; never masked)
        assert isinstance(newest, ToolMessage) and isinstance(prompt[-1], ToolMessage)
        assert (prompt[-1].id, prompt[-1].tool_call_id) == (newest.id, newest.tool_call_id)
        assert "[cut by compactkit: " in str(prompt[-1].content)
        whole = counter_for("gpt-4o-mini").count_text(str(newest.content))
        assert whole > budget // 4  # only a bulky output is masked
