"""ContextProjector: the per-turn view under a budget (properties, then examples)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.budget.tokens import TiktokenCounter
from compactkit.compressors import shrink
from compactkit.compressors.masking import cut_output, is_cut, is_masked, mask_output
from compactkit.errors import BudgetError, ConfigError, FormatError
from compactkit.formats.chat import items_to_chat, validate_chat
from compactkit.formats.validate import validate_items
from compactkit.governance.projector import ContextProjector, Projection
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Reasoning, Tool
from compactkit.items.groups import Group, group_items
from compactkit.items.snapshot import (
    MemorySnapshot,
    is_summary_message,
    summary_message,
    unseal_summary,
)

COUNTER = TiktokenCounter("o200k_base")
THRESHOLD = 60
TOOLS = [
    Tool(
        name="read_file",
        description="Read a file.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    )
]


def words(n: int, tag: str = "w") -> str:
    """About ``n`` tokens of text."""
    return " ".join(f"{tag}{i % 7}" for i in range(n))


# -- random histories ------------------------------------------------------------------------


@dataclass
class Case:
    snapshot: MemorySnapshot
    instructions: str | None
    tools: list[Tool]
    budget: int


@st.composite
def histories(draw: st.DrawFn) -> Case:
    """A session: system messages, user turns, tool loops with parallel calls and reasoning,
    huge outputs, pins, a summary, maybe one tool-heavy turn longer than the budget and maybe
    calls still pending at the end."""
    items: list[Item] = [
        Message(role="system", content=words(draw(st.integers(1, 40)), "sys"))
        for _ in range(draw(st.integers(0, 2)))
    ]
    n_call = 0
    sizes = st.sampled_from([1, 5, 30, 80, 400, 1500])
    for turn in range(draw(st.integers(0, 6))):
        items.append(Message(role="user", content=words(draw(st.integers(1, 60)), f"u{turn}")))
        heavy = draw(st.integers(0, 2)) == 0
        for _ in range(draw(st.integers(0, 8 if heavy else 3))):
            if draw(st.booleans()):
                items.append(
                    Reasoning(
                        format="responses",
                        payload={"type": "reasoning", "summary": [{"text": "thinking"}]},
                    )
                )
            calls = [f"c{n_call + k}" for k in range(draw(st.integers(1, 3)))]
            n_call += len(calls)
            items.extend(
                FunctionCall(call_id=cid, name="read_file", arguments='{"path": "a.py"}')
                for cid in calls
            )
            for cid in draw(st.permutations(calls)):
                size = draw(sizes) * (3 if heavy else 1)
                items.append(FunctionCallOutput(call_id=cid, output=words(size, cid)))
        if draw(st.booleans()):
            items.append(Message(role="assistant", content=words(draw(st.integers(1, 50)))))
    if draw(st.booleans()):  # calls still waiting for their outputs
        calls = [f"c{n_call + k}" for k in range(draw(st.integers(1, 2)))]
        items.extend(FunctionCall(call_id=cid, name="read_file") for cid in calls)
    for index in draw(st.sets(st.integers(0, max(0, len(items) - 1)), max_size=3)):
        if items:
            items[index] = items[index].model_copy(update={"pinned": True})
    items = [item.model_copy(update={"seq": seq}) for seq, item in enumerate(items, 1)]
    summary = draw(st.sampled_from(["", "Summary: fixed the parser.", words(300, "sum")]))
    return Case(
        snapshot=MemorySnapshot.of(items, summary=summary),
        instructions=draw(st.sampled_from([None, "You are a careful coding agent."])),
        tools=draw(st.sampled_from([[], TOOLS])),
        budget=draw(st.one_of(st.integers(50, 1000), st.integers(1000, 30_000))),
    )


# -- an independent oracle for what may never be dropped --------------------------------------


def required_groups(items: Sequence[Item], lead: int) -> set[int]:
    groups = group_items(items, lead)
    required = {i for i, g in enumerate(groups) if any(item.pinned for item in g.slice(items))}
    users = [i for i, g in enumerate(groups) if g.kind == "user"]
    if users:
        required.add(users[-1])
    if groups and groups[-1].kind != "orphan":  # the newest group (pending calls or not)
        required.add(len(groups) - 1)
    return required


def lead_of(items: Sequence[Item]) -> int:
    lead = 0
    while lead < len(items):
        item = items[lead]
        if not (isinstance(item, Message) and item.role in ("system", "developer")):
            break
        lead += 1
    return lead


def min_tokens(group: Group, items: Sequence[Item]) -> int:
    """Tokens of a group with each bulky output masked (the documented placeholder)."""
    names = {i.call_id: i.name for i in group.slice(items) if isinstance(i, FunctionCall)}
    total = 0
    for item in group.slice(items):
        tokens = COUNTER.count_item(item)
        if isinstance(item, FunctionCallOutput) and tokens > THRESHOLD and not item.pinned:
            placeholder = mask_output(item, tool=names[item.call_id], tokens=tokens)
            tokens = min(tokens, COUNTER.count_item(placeholder))
        total += tokens
    return total


def irreducible(case: Case, *, summary: str | None = None, cut: bool = True) -> int:
    """What may never be dropped, in tokens: the head with ``summary`` (default: the shortest
    the projection may send, ``least_summary``), the groups never dropped with bulky outputs
    masked, and the newest group whole or (``cut``) with its outputs cut down to the marker."""
    items = case.snapshot.items
    lead = lead_of(items)
    head: list[Item] = list(items[:lead])
    if case.instructions:
        head.append(Message(role="system", content=case.instructions))
    if case.snapshot.summary:
        text = least_summary(case.snapshot.summary) if summary is None else summary
        head.append(summary_message(text))
    groups = group_items(items, lead)
    total = COUNTER.count(head, tools=case.tools).tokens
    newest = len(groups) - 1
    whole = newest_min_tokens if cut else min_tokens_whole
    return total + sum(
        whole(groups[i], items) if i == newest else min_tokens(groups[i], items)
        for i in required_groups(items, lead)
    )


def least_summary(summary: str) -> str:
    """The smallest summary the projection may send for ``summary``: itself, or the documented
    floor of a fitted one (``shortest_summary``: every entry trimmed, or the cut's marker)."""
    floor = shrink.shortest_summary(summary, COUNTER)
    size = COUNTER.count_item
    return min(summary, floor, key=lambda text: size(summary_message(text)))


def min_tokens_whole(group: Group, items: Sequence[Item]) -> int:
    return sum(map(COUNTER.count_item, group.slice(items)))


def newest_min_tokens(group: Group, items: Sequence[Item]) -> int:
    """Tokens of the newest group with each output cut down to its marker where that is
    shorter (it is never masked: ``cut_output`` is what a budget too small for it gets)."""
    total = 0
    for item in group.slice(items):
        tokens = COUNTER.count_item(item)
        if isinstance(item, FunctionCallOutput):
            tokens = min(
                tokens, COUNTER.count_item(cut_output(item, max_tokens=0, counter=COUNTER))
            )
        total += tokens
    return total


def project(case: Case, projector: ContextProjector | None = None) -> Projection:
    projector = projector or ContextProjector(COUNTER, mask_threshold=THRESHOLD)
    return projector.project(
        case.snapshot, instructions=case.instructions, tools=case.tools, budget=case.budget
    )


# -- properties -------------------------------------------------------------------------------


@settings(deadline=None, max_examples=300)
@given(histories())
def test_projection_invariants(case: Case) -> None:
    before = copy.deepcopy(case.snapshot)
    items = case.snapshot.items
    try:
        result = project(case)
    except BudgetError as exc:
        # Raised exactly when even the irreducible part does not fit, naming a part and size.
        assert irreducible(case) > case.budget
        assert exc.budget == case.budget and exc.tokens > 0 and exc.part in str(exc)
        return
    finally:
        assert case.snapshot == before  # never mutated
    assert irreducible(case) <= case.budget

    # Never over budget, and the count is the counter's count of exactly what is sent.
    assert result.tokens <= case.budget
    assert result.tokens == COUNTER.count(result.items, tools=case.tools).tokens

    # Instructions first, then the summary, then the conversation.
    lead = lead_of(items)
    out = list(result.items)
    head = [Message(role="system", content=case.instructions)] if case.instructions else []
    head += items[:lead]
    assert out[: len(head)] == head
    body = out[len(head) :]
    summary = case.snapshot.summary
    if summary:
        assert is_summary_message(body[0])
        sent = unseal_summary(body[0].text)
        if sent != summary:  # fitted: only when what is never dropped is over with it whole
            assert irreducible(case, summary=summary, cut=False) > case.budget
            assert COUNTER.count_text(sent) < COUNTER.count_text(summary)
            assert any("summary trimmed" in note for note in result.report.notes)
        body = body[1:]
    assert not any(is_summary_message(item) for item in body)

    # Every sent item maps to its input position, in order (placeholders by seq).
    position = {item.seq: index for index, item in enumerate(items)}
    indices = [position[item.seq] for item in body]
    assert indices == sorted(set(indices))
    for item, index in zip(body, indices, strict=True):
        original = items[index]
        if item is not original:  # a placeholder (or a cut): same call, same seq, short text
            assert isinstance(original, FunctionCallOutput)
            assert isinstance(item, FunctionCallOutput) and item.call_id == original.call_id
            if index >= group_items(items, lead)[-1].start:  # the newest group: cut, never masked
                assert is_cut(item) and not is_masked(item)
                # ...and only when even the shortest summary leaves it no room whole
                assert irreducible(case, cut=False) > case.budget
            else:
                assert not original.pinned
                assert is_masked(item) and "read_file" in item.text
    report = result.report
    masked = sum(
        1 for item, i in zip(body, indices, strict=True) if item is not items[i] and is_masked(item)
    )
    assert (report.masked, report.kept) == (masked, lead + len(body) - masked)
    assert report.kept + report.masked + report.omitted == len(items)

    # Whole groups only; what is not in the window suffix is a group that may never be dropped.
    groups = group_items(items, lead)
    sent = set(indices)
    kept_groups = [i for i, g in enumerate(groups) if g.start in sent]
    for i in kept_groups:
        assert set(range(groups[i].start, groups[i].stop)) <= sent
    assert len(sent) == sum(len(groups[i]) for i in kept_groups)
    required = required_groups(items, lead)
    assert required <= set(kept_groups)  # latest user input, pins, pending calls: never dropped
    window_start = len(groups)  # the window: the kept groups that run to the end unbroken
    for i in reversed(kept_groups):
        if i != window_start - 1:
            break
        window_start = i
    assert {i for i in kept_groups if i < window_start} <= required

    # No orphan: the only rule broken is the output still owed to a pending call.
    pending = set(groups[-1].pending) if groups else set()
    chat = items_to_chat(out, lossy=True)
    problems = validate_chat(chat, mode="repair")[1]
    assert {(p.kind, p.call_id) for p in problems} <= {("missing_output", c) for c in pending}
    for target in ("chat", "responses"):
        found = validate_items(out, format=target, mode="repair")[1]
        assert {(p.kind, p.call_id) for p in found} <= {("missing_output", c) for c in pending}


@settings(deadline=None, max_examples=60)
@given(histories(), st.data())
def test_incremental_projection_matches_a_fresh_projector(case: Case, data: st.DataObject) -> None:
    """One projector fed a growing history (and an edited one) answers like a new one."""
    shared = ContextProjector(COUNTER, mask_threshold=THRESHOLD)
    items = case.snapshot.items
    cuts = sorted(data.draw(st.sets(st.integers(0, len(items)), max_size=5)) | {len(items)})
    for cut in cuts:
        grown = Case(
            MemorySnapshot.of(items[:cut], case.snapshot.summary),
            case.instructions,
            case.tools,
            case.budget,
        )
        assert outcome(grown, shared) == outcome(grown, None)
    if items:  # pin an old item after the fact: the cache must notice
        index = data.draw(st.integers(0, len(items) - 1))
        edited = list(items)
        edited[index] = items[index].model_copy(update={"pinned": True})
        case = Case(
            MemorySnapshot.of(edited, case.snapshot.summary),
            case.instructions,
            case.tools,
            case.budget,
        )
        assert outcome(case, shared) == outcome(case, None)


def outcome(case: Case, projector: ContextProjector | None) -> object:
    try:
        result = project(case, projector)
    except BudgetError as exc:
        return str(exc)
    # The cacheable prefix is measured against the projector's previous prompt: history, not rules.
    return result.items, result.tokens, dataclasses.replace(result.report, cached_prefix_tokens=0)


# -- examples --------------------------------------------------------------------------------


def call(cid: str, name: str = "read_file") -> FunctionCall:
    return FunctionCall(call_id=cid, name=name, arguments='{"path": "a.py"}')


def output(cid: str, tokens: int = 5) -> FunctionCallOutput:
    return FunctionCallOutput(call_id=cid, output=words(tokens, cid))


def tool_loop(n: int, tokens: int, first: int = 0) -> list[Item]:
    items: list[Item] = []
    for i in range(first, first + n):
        items += [call(f"c{i}"), output(f"c{i}", tokens)]
    return items


SYSTEM = Message(role="system", content="You are a careful coding agent.")


def test_a_history_that_fits_is_sent_whole_and_counted_exactly() -> None:
    items = [SYSTEM, Message(role="user", content="fix the bug"), *tool_loop(3, 50)]
    snapshot = MemorySnapshot.of(items)
    result = ContextProjector(COUNTER, budget=10_000).project(snapshot, tools=TOOLS)
    assert result.items == tuple(items)
    assert result.tokens == COUNTER.count(items, tools=TOOLS).tokens
    assert (result.report.kept, result.report.masked, result.report.omitted) == (8, 0, 0)
    assert result.report.notes == ()


def test_the_summary_is_its_own_marked_message_after_the_instructions() -> None:
    items = [SYSTEM, Message(role="user", content="go on")]
    snapshot = MemorySnapshot.of(items, summary="We fixed the parser.")
    for role in ("system", "user"):
        projector = ContextProjector(COUNTER, budget=1000, summary_role=role)
        result = projector.project(snapshot, instructions="Be brief.")
        first, second, summary, user = result.items
        assert first == Message(role="system", content="Be brief.") and second is SYSTEM
        assert summary == summary_message("We fixed the parser.", role)
        assert user is items[1]


def test_bulky_outputs_are_masked_oldest_first_before_any_group_is_dropped() -> None:
    items = [SYSTEM, Message(role="user", content="read them"), *tool_loop(6, 800)]
    snapshot = MemorySnapshot.of(items)
    full, each = COUNTER.count(items).tokens, COUNTER.count_item(items[3])
    result = ContextProjector(COUNTER, budget=full - each - 100).project(snapshot)
    assert result.report.omitted == 0  # nothing dropped
    assert result.report.masked_call_ids == ("c0", "c1")  # the two oldest, just enough
    placeholder = result.items[3]
    assert isinstance(placeholder, FunctionCallOutput)
    assert placeholder.text == (
        f"[masked output of read_file (call_id c0): {each:,} tokens, 1 line. "
        "Call the tool again to see it.]"
    )
    assert placeholder.call_id == "c0" and placeholder.seq == items[3].seq
    assert result.items[-1] is items[-1]  # the newest output whole
    assert "masked 2 tool output(s) over 500 tokens" in result.report.notes[0]


def test_the_latest_user_input_survives_a_tool_loop_longer_than_the_budget() -> None:
    request = Message(role="user", content="refactor the parser and run the tests")
    items = [SYSTEM, Message(role="user", content="hi"), request, *tool_loop(40, 100)]
    result = ContextProjector(COUNTER, budget=1200, mask_threshold=1000).project(
        MemorySnapshot.of(items)
    )
    assert result.items[:2] == (SYSTEM, request)
    assert result.items[-1] is items[-1] and result.tokens <= 1200
    assert isinstance(result.items[2], FunctionCall)  # the window starts with a whole group
    assert any(
        "kept latest user input (item 2) ahead of the window" in n for n in result.report.notes
    )
    assert any(n.startswith("omitted ") for n in result.report.notes)


def test_a_pinned_item_keeps_its_whole_group() -> None:
    pinned_call = call("c0").model_copy(update={"pinned": True})
    items = [
        SYSTEM,
        Message(role="user", content="start"),
        pinned_call,
        output("c0", 20),
        *tool_loop(30, 100, first=1),
    ]
    result = ContextProjector(COUNTER, budget=900, mask_threshold=1000).project(
        MemorySnapshot.of(items)
    )
    assert result.items[1:4] == (items[1], pinned_call, items[3])
    assert result.tokens <= 900


def test_parallel_calls_and_their_reasoning_stay_together() -> None:
    thinking = Reasoning(format="responses", payload={"type": "reasoning", "summary": []})
    turn = [thinking, call("a"), call("b"), output("b", 200), output("a", 200)]
    items = [SYSTEM, Message(role="user", content="go"), *tool_loop(5, 200, first=1), *turn]
    budget = COUNTER.count([*items[:2], *turn]).tokens + 50  # room for the turn, not one more
    result = ContextProjector(COUNTER, budget=budget, mask_threshold=10_000).project(
        MemorySnapshot.of(items)
    )
    assert result.items == (*items[:2], *turn)


def test_pending_calls_are_kept_and_reported() -> None:
    items = [SYSTEM, Message(role="user", content="go"), *tool_loop(20, 100), call("late")]
    result = ContextProjector(COUNTER, budget=500).project(MemorySnapshot.of(items))
    assert result.items[-1] is items[-1]
    assert any("pending call(s) 'late' kept without output" in n for n in result.report.notes)


def test_budget_error_names_the_part_and_its_size() -> None:
    items = [SYSTEM, Message(role="user", content=words(3000))]
    with pytest.raises(BudgetError) as caught:
        ContextProjector(COUNTER, budget=2000).project(MemorySnapshot.of(items), tools=TOOLS)
    error = caught.value
    assert error.part == "latest user input" and error.budget == 2000
    assert error.tokens == COUNTER.count_item(items[1])
    assert str(error).startswith(f"latest user input: {error.tokens:,} tokens; budget 2,000 (")
    assert "system instructions" in str(error) and "tools" in str(error)


def test_broken_histories_are_repaired_raised_or_sent_as_told() -> None:
    items = [
        SYSTEM,
        Message(role="user", content="go"),
        output("stray"),  # answers no call
        call("lost"),  # never answered
        Message(role="user", content="and?"),
        *tool_loop(1, 5),
    ]
    snapshot = MemorySnapshot.of(items)
    repaired = ContextProjector(COUNTER, budget=5000).project(snapshot)
    assert items[2] not in repaired.items and items[3] not in repaired.items
    assert validate_chat(items_to_chat(repaired.items))[1] == []
    assert repaired.report.omitted == 2
    assert any("repaired" in note and "'stray'" in note for note in repaired.report.notes)
    with pytest.raises(FormatError, match="'lost'"):
        ContextProjector(COUNTER, budget=5000, validate="raise").project(snapshot)
    as_is = ContextProjector(COUNTER, budget=5000, validate=None).project(snapshot)
    assert as_is.items == tuple(items)


def test_one_projector_serves_interleaved_sessions() -> None:
    projector = ContextProjector(COUNTER, budget=600, mask_threshold=100)
    a: list[Item] = [SYSTEM, Message(role="user", content="session a")]
    b: list[Item] = [SYSTEM, Message(role="user", content="session b")]
    for step in range(30):
        a += tool_loop(1, 60, first=step)
        b += tool_loop(1, 20, first=step)
        for items in (a, b):
            snapshot = MemorySnapshot.of(items)
            fresh = ContextProjector(COUNTER, budget=600, mask_threshold=100).project(snapshot)
            shared = projector.project(snapshot)
            assert shared.items == fresh.items and shared.tokens == fresh.tokens
            assert dataclasses.replace(shared.report, cached_prefix_tokens=0) == fresh.report


def test_misuse_is_a_config_error() -> None:
    snapshot = MemorySnapshot.of([Message(role="user", content="hi")])
    with pytest.raises(ConfigError, match="budget"):
        ContextProjector(COUNTER).project(snapshot)
    with pytest.raises(ConfigError):
        ContextProjector(COUNTER, mask_threshold=-1)
    with pytest.raises(ConfigError):
        ContextProjector(COUNTER, budget=100).project(snapshot, instructions=[call("x")])  # type: ignore[list-item]


def test_a_memory_or_a_list_is_refused_not_projected_with_its_summary_twice() -> None:
    # project(memory) used to read memory.items (which hold the rendered summary message) and
    # memory.summary, and sent the summary twice; a list raised AttributeError.
    from compactkit.memory import InMemoryMemory

    memory = InMemoryMemory()
    memory.restore(MemorySnapshot.of([], summary="The user wants the parser fixed."))
    memory.add_user_input("new")
    projector = ContextProjector(COUNTER, budget=1_000)
    with pytest.raises(ConfigError, match=r"memory\.snapshot\(\)"):
        projector.project(memory)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="from_items"):
        projector.project(memory.items)  # type: ignore[arg-type]
    sent = projector.project(memory.snapshot()).items
    assert sum(is_summary_message(item) for item in sent) == 1


def test_for_model_uses_the_profile_budget_and_counter() -> None:
    from compactkit.budget.profiles import budget_for

    projector = ContextProjector.for_model("gpt-4o", mask_threshold=300)
    assert projector.budget == budget_for("gpt-4o").usable_input
    assert projector.counter.encoding_name == "o200k_base"
    assert projector.mask_threshold == 300
    assert ContextProjector.for_model("gpt-4o", budget=1234).budget == 1234
