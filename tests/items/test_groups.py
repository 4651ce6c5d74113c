"""Groups: cuts never separate a call from its output or reasoning from its call."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Reasoning
from compactkit.items.groups import group_items


def call(cid: str) -> FunctionCall:
    return FunctionCall(call_id=cid, name="tool", arguments="{}")


def out(cid: str) -> FunctionCallOutput:
    return FunctionCallOutput(call_id=cid, output="ok")


def reasoning() -> Reasoning:
    return Reasoning(format="responses", payload={"type": "reasoning", "summary": []})


def test_parallel_calls_and_their_reasoning_form_one_group() -> None:
    items: list[Item] = [
        Message(role="user", content="go"),
        reasoning(),
        call("a"),
        call("b"),
        out("b"),
        out("a"),
        Message(role="assistant", content="done"),
    ]
    groups = group_items(items)
    assert [(g.start, g.stop, g.kind) for g in groups] == [
        (0, 1, "user"),
        (1, 6, "assistant"),
        (6, 7, "assistant"),
    ]
    assert groups[1].call_ids == ("a", "b")
    assert groups[1].pending == ()


def test_sequential_calls_are_separate_groups_and_pending_calls_are_reported() -> None:
    items: list[Item] = [call("a"), out("a"), reasoning(), call("b")]
    groups = group_items(items)
    assert [(g.start, g.stop) for g in groups] == [(0, 2), (2, 4)]
    assert groups[1].pending == ("b",)


def test_an_output_without_its_call_is_an_orphan_group() -> None:
    groups = group_items([Message(role="user", content="hi"), out("zz")])
    assert groups[1].kind == "orphan"


@st.composite
def conversations(draw: st.DrawFn) -> list[Item]:
    items: list[Item] = []
    counter = 0
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "text", "tools"]))
        if kind == "user":
            items.append(Message(role="user", content="u"))
        elif kind == "text":
            items.append(Message(role="assistant", content="a"))
        else:
            ids = [f"c{counter + i}" for i in range(draw(st.integers(1, 3)))]
            counter += len(ids)
            if draw(st.booleans()):
                items.append(reasoning())
            items.extend(call(i) for i in ids)
            items.extend(out(i) for i in draw(st.permutations(ids)))
    return items


@settings(deadline=None, max_examples=200)
@given(conversations())
def test_groups_tile_the_list_and_never_split_a_pair(items: list[Item]) -> None:
    groups = group_items(items)
    assert [g.start for g in groups] == [0, *(g.stop for g in groups[:-1])][: len(groups)]
    assert (groups[-1].stop if groups else 0) == len(items)
    owner: dict[str, int] = {}
    for index, group in enumerate(groups):
        for item in group.slice(items):
            if isinstance(item, FunctionCall | FunctionCallOutput):
                assert owner.setdefault(item.call_id, index) == index
        assert group.kind != "orphan"
        # reasoning is always followed, inside its group, by something of the same response
        members = list(group.slice(items))
        for position, item in enumerate(members):
            if isinstance(item, Reasoning):
                assert position + 1 < len(members)
