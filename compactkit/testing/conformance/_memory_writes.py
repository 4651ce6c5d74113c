"""Memory rules: the three writes, their items, tool outputs and where the summary goes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compactkit.errors import ConfigError
from compactkit.items import FunctionCallOutput, Message, TextPart
from compactkit.items.snapshot import MemorySnapshot, is_summary_message, summary_message
from compactkit.testing.conformance._kit import Rule, expect, raises, same
from compactkit.testing.conformance._support import (
    MemoryKit,
    assistant_call,
    result,
    seqs,
    texts,
)

RULES: list[Rule[MemoryKit]] = []


def rule(
    name: str, statement: str, *needs: str
) -> Callable[[Callable[[MemoryKit], None]], Callable[[MemoryKit], None]]:
    """Register the decorated check as the rule ``name``."""

    def register(check: Callable[[MemoryKit], None]) -> Callable[[MemoryKit], None]:
        RULES.append(Rule(name, statement, check, frozenset(needs)))
        return check

    return register


# -- the three writes ----------------------------------------------------------------------------


@rule("new-memory-is-empty", "A new memory holds nothing: no items, no summary, version 0.")
def _new_memory_is_empty(kit: MemoryKit) -> None:
    memory = kit.new()
    same(memory.items, [], "items of a new memory")
    same(memory.summary, "", "summary of a new memory")
    same(memory.version, 0, "version of a new memory")
    same(memory.history(), [], "history() of a new memory")
    same(memory.snapshot(), MemorySnapshot(version=0), "snapshot() of a new memory")


@rule(
    "writes-become-items-in-order",
    "The three writes store items in order with seqs 1, 2, 3…; each write bumps the version; a "
    "chat message with tool_calls becomes a Message and a FunctionCall.",
)
def _writes_become_items_in_order(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_user_input("list the files")
    memory.add_output_items([assistant_call("c1", "on it")])
    memory.add_tool_output("c1", "a.txt b.txt")
    memory.add_output_items([{"role": "assistant", "content": "two files"}])
    items = memory.items
    kinds = [type(i).__name__ for i in items]
    same(kinds, ["Message", "Message", "FunctionCall", "FunctionCallOutput", "Message"], "types")
    same(seqs(items), [1, 2, 3, 4, 5], "seqs after four writes")
    expected = ["list the files", "on it", "ls({})", "a.txt b.txt", "two files"]
    same(texts(items), expected, "item texts")
    same(memory.version, 4, "version after four writes")
    same(memory.history(), items, "history() with nothing compacted")


@rule(
    "user-input-forms",
    "add_user_input takes text (a user message), a Message of any role, or content parts.",
)
def _user_input_forms(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_user_input("plain")
    memory.add_user_input(Message(role="developer", content="rules"))
    memory.add_user_input([TextPart(text="a"), TextPart(text="b")])
    items = memory.items
    same(len(items), 3, "items after three user inputs")
    first, second, third = items
    same(first, Message(role="user", content="plain", seq=1), "a text input")
    expect(
        isinstance(second, Message) and second.role == "developer",
        f"a developer Message must stay a developer message, got {second!r}",
    )
    expect(
        isinstance(third, Message) and third.role == "user" and third.text == "a\nb",
        f"content parts must become one user message 'a\\nb', got {third!r}",
    )


@rule(
    "memory-assigns-seqs-keeps-pins",
    "A seq on an incoming item is replaced by the memory's own; its pinned flag is kept.",
)
def _memory_assigns_seqs_keeps_pins(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_user_input("hi")
    memory.add_output_items([Message(role="assistant", content="x", seq=99, pinned=True)])
    same(seqs(memory.items), [1, 2], "seqs (the incoming seq=99 replaced)")
    expect(memory.items[1].pinned, "an incoming pinned item lost its pin")


@rule("empty-batch-writes-nothing", "add_output_items([]) stores nothing and keeps the version.")
def _empty_batch_writes_nothing(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_output_items([])
    same(memory.version, 0, "version after an empty batch")


@rule(
    "unusable-writes-raise",
    "Output items that are not items or chat messages, a lone message (not in a list) and "
    "None as user input raise ConfigError and store nothing.",
)
def _unusable_writes_raise(kit: MemoryKit) -> None:
    memory = kit.new()
    bad: list[list[Any]] = [
        [42],
        [{"role": "wizard", "content": "x"}],
        [{"type": "message", "role": "user", "content": [{"type": "input_text"}]}],
    ]
    for batch in bad:
        with raises(ConfigError, doing=f"add_output_items({batch!r})"):
            memory.add_output_items(batch)
    with raises(ConfigError, match="wrap it in a list", doing="add_output_items(a lone dict)"):
        lone: Any = {"role": "assistant", "content": "hi"}
        memory.add_output_items(lone)
    with raises(ConfigError, match="add_user_input", doing="add_user_input(None)"):
        memory.add_user_input(None)  # type: ignore[arg-type]
    same(memory.version, 0, "version after refused writes")
    same(memory.history(), [], "history() after refused writes")


# -- tool outputs --------------------------------------------------------------------------------


@rule(
    "tool-output-needs-call-id",
    "A tool output without a call id raises ConfigError naming the call id; it is never "
    "dropped silently, and nothing is stored.",
)
def _tool_output_needs_call_id(kit: MemoryKit) -> None:
    memory = kit.new()
    for call_id in (None, ""):
        with raises(ConfigError, match="call id", doing=f"add_tool_output({call_id!r}, 'lost?')"):
            memory.add_tool_output(call_id, "lost?")  # type: ignore[arg-type]
    same(memory.version, 0, "version after refused tool outputs")
    same(memory.items, [], "items after refused tool outputs")


@rule(
    "tool-output-for-unknown-call-raises",
    "A tool output for a call id never stored raises ConfigError naming the id (through "
    "add_tool_output and as a role='tool' message).",
)
def _tool_output_for_unknown_call_raises(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_output_items([assistant_call("c1")])
    with raises(ConfigError, match="unknown call id 'nope'", doing="add_tool_output('nope', …)"):
        memory.add_tool_output("nope", "x")
    tool = {"role": "tool", "tool_call_id": "nope", "content": "x"}
    with raises(ConfigError, match="unknown call id", doing="add_output_items([tool message])"):
        memory.add_output_items([tool])
    same(memory.version, 1, "version after refused outputs")


@rule(
    "unknown-call-ids-accepted-when-asked",
    "With accept_unknown_call_ids=True an output for an unknown call is stored; a second "
    "output for it still raises.",
    "options",
)
def _unknown_call_ids_accepted_when_asked(kit: MemoryKit) -> None:
    memory = kit.new(accept_unknown_call_ids=True)
    memory.add_tool_output("external", "x")
    same(memory.items, [FunctionCallOutput(call_id="external", output="x", seq=1)], "items")
    with raises(ConfigError, match="already has an output", doing="a second output"):
        memory.add_tool_output("external", "again")


@rule(
    "each-call-answered-once",
    "A second output for one call raises ConfigError; the first output stays.",
)
def _each_call_answered_once(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_output_items([assistant_call("c1")])
    memory.add_tool_output("c1", "first")
    with raises(ConfigError, match="already has an output", doing="add_tool_output('c1') twice"):
        memory.add_tool_output("c1", "second")
    tool = {"role": "tool", "tool_call_id": "c1", "content": "again"}
    with raises(ConfigError, match="already has an output", doing="a second tool message"):
        memory.add_output_items([tool])
    same(texts(memory.items)[-1], "first", "the stored output")


@rule(
    "tool-output-is-text-or-parts",
    "A tool output that is not text or content parts (None, a dict, a number, bytes) raises "
    "ConfigError naming the call; the call stays answerable.",
)
def _tool_output_is_text_or_parts(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_output_items([assistant_call("c1")])
    for output in (None, {"rows": 3}, 42, b"bytes", ["not a part"]):
        with raises(
            ConfigError,
            match="'c1' must be text or content parts",
            doing=f"add_tool_output('c1', {output!r})",
        ):
            memory.add_tool_output("c1", output)  # type: ignore[arg-type]
    same(memory.version, 1, "version after refused outputs")
    memory.add_tool_output("c1", "")
    same(texts(memory.items)[-1], "", "an empty output is still accepted")


@rule("call-ids-are-unique", "A second call with a call id already used raises ConfigError.")
def _call_ids_are_unique(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_output_items([assistant_call("c1")])
    with raises(ConfigError, match="already used", doing="a second call 'c1'"):
        memory.add_output_items([assistant_call("c1")])


@rule(
    "a-batch-is-all-or-nothing",
    "add_output_items stores the whole batch or, when one item is refused, nothing of it.",
)
def _a_batch_is_all_or_nothing(kit: MemoryKit) -> None:
    memory = kit.new()
    bad = [assistant_call("c1"), {"role": "tool", "tool_call_id": "zz", "content": "x"}]
    with raises(ConfigError, doing="a batch whose second item answers an unknown call"):
        memory.add_output_items(bad)
    same(memory.history(), [], "history() after a refused batch (its first item leaked)")
    memory.add_output_items(
        [assistant_call("c1"), {"role": "tool", "tool_call_id": "c1", "content": "x"}]
    )
    same(seqs(memory.items), [1, 2], "seqs after the good batch")


@rule(
    "output-for-an-archived-call-accepted",
    "A tool output for a call that a compaction archived is still accepted.",
)
def _output_for_an_archived_call_accepted(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_output_items([assistant_call("c1")])
    memory.add_user_input("meanwhile")
    snapshot = memory.snapshot()
    memory.apply(result(snapshot, snapshot.items[1:], summary="called ls"))
    memory.add_tool_output("c1", "late")
    same(texts(memory.items)[-1], "late", "the late output")


# -- where the summary goes ----------------------------------------------------------------------


@rule(
    "summary-is-its-own-message",
    "The summary is a field of the snapshot, never an item: memory.items renders it as one "
    "marked user message after the leading system messages, and snapshot().items never "
    "holds it.",
)
def _summary_is_its_own_message(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_user_input(Message(role="system", content="be brief"))
    memory.add_user_input("one")
    memory.add_user_input("two")
    snapshot = memory.snapshot()
    memory.apply(result(snapshot, [snapshot.items[0], snapshot.items[2]], summary="said one"))
    same(memory.summary, "said one", "memory.summary after a compaction")
    after = memory.snapshot()
    same(after.summary, "said one", "snapshot().summary after a compaction")
    expect(
        not any(is_summary_message(i) for i in after.items),
        f"snapshot().items holds the rendered summary as an item: {texts(after.items)!r}",
    )
    same(texts(after.items), ["be brief", "two"], "snapshot().items texts")
    items = memory.items
    same(len(items), 3, f"memory.items (system, summary, last) — got {texts(items)!r}")
    system, summary, last = items
    same(texts([system, last]), ["be brief", "two"], "the items around the summary")
    expect(
        is_summary_message(summary),
        f"the second of memory.items must be the marked summary message, got {summary!r}",
    )
    same(summary, summary_message("said one", "user"), "the rendered summary (user role)")


@rule(
    "summary-role-configurable",
    "summary_role='system' renders the summary as a system message.",
    "options",
)
def _summary_role_configurable(kit: MemoryKit) -> None:
    memory = kit.new(summary_role="system")
    memory.add_user_input("one")
    memory.apply(result(memory.snapshot(), memory.snapshot().items, summary="s"))
    same(memory.items[0], summary_message("s", "system"), "the rendered summary")


@rule(
    "rendered-summary-is-not-storable",
    "A rendered summary message cannot be written back as an item (a write, or a restore "
    "with it at the summary's own place): ConfigError pointing to MemorySnapshot.from_items.",
)
def _rendered_summary_is_not_storable(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_user_input("hi")
    memory.apply(result(memory.snapshot(), memory.snapshot().items, summary="earlier"))
    with raises(ConfigError, match="from_items", doing="add_output_items(memory.items)"):
        memory.add_output_items(memory.items)
    same(tuple(memory.history()), memory.snapshot().items, "history() after the refused write")
    with raises(ConfigError, match="from_items", doing="restore(a snapshot holding a summary)"):
        memory.restore(MemorySnapshot.of(memory.items))  # the rendered view, summary first
