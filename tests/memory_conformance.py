"""The observable behaviour of every ``AgentMemory`` backend.

Plug a backend in by subclassing ``MemoryConformance`` in a test module and defining the
``memory_factory`` fixture: a callable that takes the keyword options of ``BaseMemory``
(``policy``, ``compressor``, ``on_compact``, ``accept_unknown_call_ids``, ``summary_role``) and
returns a fresh, empty memory (for a persistent backend: a new session id on every call)::

    from memory_conformance import MemoryConformance

    class TestSQLiteMemory(MemoryConformance):
        @pytest.fixture
        def memory_factory(self, tmp_path):
            url = f"sqlite:///{tmp_path}/m.db"
            return lambda **options: SQLMemory(url, session_id=uuid4().hex, **options)

Set ``thread_safe = False`` on the subclass for a backend that does not claim thread safety.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactkit.errors import ConcurrencyError, ConfigError
from compactkit.governance.policy import CompactPolicy, items_over
from compactkit.items import FunctionCallOutput, Item, Message, TextPart, item_text
from compactkit.items.snapshot import (
    CompactResult,
    CompactStats,
    MemorySnapshot,
    Outcome,
    is_summary_message,
    summary_message,
    unseal_summary,
)
from compactkit.memory import AgentMemory

MemoryFactory = Callable[..., Any]


# -- fakes that record ---------------------------------------------------------------------------


def result(
    snapshot: MemorySnapshot,
    items: Sequence[Item],
    summary: str | None = None,
    outcome: Outcome = "compacted",
) -> CompactResult:
    """A result built the way compressors must: from the input snapshot (version carried)."""
    kept = {i.seq for i in items}
    new = snapshot.model_copy(
        update={"items": tuple(items), "summary": snapshot.summary if summary is None else summary}
    )
    return CompactResult(
        snapshot=new,
        folded=tuple(i for i in snapshot.items if i.seq not in kept),
        outcome=outcome,
        stats=CompactStats(compressor="test", items_before=len(snapshot.items)),
    )


class KeepLast:
    """Keeps pinned items and the last ``n`` others; folds the rest into the summary."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls: list[MemorySnapshot] = []

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        self.calls.append(snapshot)
        unpinned = [i for i in snapshot.items if not i.pinned]
        if len(unpinned) <= self.n:
            return result(snapshot, snapshot.items, outcome="unchanged")
        drop = {i.seq for i in unpinned[: len(unpinned) - self.n]}
        folded = [item_text(i) for i in snapshot.items if i.seq in drop]
        summary = " | ".join([s for s in (snapshot.summary, *folded) if s])
        return result(snapshot, [i for i in snapshot.items if i.seq not in drop], summary)


class Failing:
    """Reports a failure, as a dead summarizer would."""

    def __init__(self) -> None:
        self.calls = 0

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        self.calls += 1
        failed = result(snapshot, snapshot.items, outcome="failed")
        return failed.model_copy(update={"error": "summarizer unreachable"})


def user(text: str) -> Message:
    return Message(role="user", content=text)


def assistant_call(call_id: str, text: str | None = None) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    return {"role": "assistant", "content": text, "tool_calls": [call]}


def seqs(items: Sequence[Item]) -> list[int | None]:
    return [i.seq for i in items]


def texts(items: Sequence[Item]) -> list[str]:
    """Item texts; a rendered summary reads as the summary it carries (not its sealed frame)."""
    return [unseal_summary(item_text(i)) or item_text(i) for i in items]


class MemoryConformance:
    """Subclass as ``Test<Backend>`` and define the ``memory_factory`` fixture."""

    thread_safe = True

    @pytest.fixture
    def memory_factory(self) -> MemoryFactory:
        raise NotImplementedError("define the memory_factory fixture for your backend")

    @pytest.fixture
    def memory(self, memory_factory: MemoryFactory) -> AgentMemory:
        memory: AgentMemory = memory_factory()
        return memory

    # -- writes and seq ------------------------------------------------------------------------

    def test_new_memory_is_empty(self, memory: AgentMemory) -> None:
        assert memory.items == []
        assert memory.summary == ""
        assert memory.version == 0
        assert memory.history() == []
        assert memory.snapshot() == MemorySnapshot(version=0)
        assert isinstance(memory, AgentMemory)

    def test_writes_get_increasing_seqs_in_order(self, memory: AgentMemory) -> None:
        memory.add_user_input("list the files")
        memory.add_output_items([assistant_call("c1", "on it")])
        memory.add_tool_output("c1", "a.txt b.txt")
        memory.add_output_items([{"role": "assistant", "content": "two files"}])
        items = memory.items
        assert [type(i).__name__ for i in items] == [
            "Message",
            "Message",
            "FunctionCall",
            "FunctionCallOutput",
            "Message",
        ]
        assert seqs(items) == [1, 2, 3, 4, 5]
        assert texts(items) == ["list the files", "on it", "ls({})", "a.txt b.txt", "two files"]
        assert memory.version == 4
        assert memory.history() == items

    def test_user_input_accepts_text_messages_and_parts(self, memory: AgentMemory) -> None:
        memory.add_user_input("plain")
        memory.add_user_input(Message(role="developer", content="rules"))
        memory.add_user_input([TextPart(text="a"), TextPart(text="b")])
        first, second, third = memory.items
        assert first == Message(role="user", content="plain", seq=1)
        assert isinstance(second, Message) and second.role == "developer"
        assert isinstance(third, Message) and third.role == "user" and third.text == "a\nb"

    def test_incoming_seq_is_replaced_and_pin_kept(self, memory: AgentMemory) -> None:
        memory.add_user_input("hi")
        memory.add_output_items([Message(role="assistant", content="x", seq=99, pinned=True)])
        assert seqs(memory.items) == [1, 2]
        assert memory.items[1].pinned

    def test_empty_batch_writes_nothing(self, memory: AgentMemory) -> None:
        memory.add_output_items([])
        assert memory.version == 0

    @pytest.mark.parametrize(
        "bad",
        [
            [42],
            [{"role": "wizard", "content": "x"}],
            [{"type": "message", "role": "user", "content": [{"type": "input_text"}]}],
        ],
    )
    def test_unusable_output_items_raise(self, memory: AgentMemory, bad: list[Any]) -> None:
        with pytest.raises(ConfigError):
            memory.add_output_items(bad)
        assert memory.version == 0

    def test_a_single_message_must_come_in_a_list(self, memory: AgentMemory) -> None:
        with pytest.raises(ConfigError, match="wrap it in a list"):
            memory.add_output_items({"role": "assistant", "content": "hi"})  # type: ignore[arg-type]

    def test_unusable_user_input_raises(self, memory: AgentMemory) -> None:
        with pytest.raises(ConfigError, match="add_user_input"):
            memory.add_user_input(None)  # type: ignore[arg-type]

    def test_a_rendered_summary_cannot_be_stored_as_an_item(self, memory: AgentMemory) -> None:
        memory.add_user_input("hi")
        memory.apply(result(memory.snapshot(), memory.snapshot().items, summary="earlier"))
        with pytest.raises(ConfigError, match="from_items"):
            memory.add_output_items(memory.items)
        assert memory.snapshot().items == tuple(memory.history())

    # -- tool outputs --------------------------------------------------------------------------

    @pytest.mark.parametrize("call_id", [None, ""])
    def test_tool_output_without_call_id_raises(
        self, memory: AgentMemory, call_id: str | None
    ) -> None:
        with pytest.raises(ConfigError, match="call id"):
            memory.add_tool_output(call_id, "lost?")  # type: ignore[arg-type]
        assert memory.version == 0

    def test_tool_output_for_unknown_call_raises(self, memory: AgentMemory) -> None:
        memory.add_output_items([assistant_call("c1")])
        with pytest.raises(ConfigError, match="unknown call id 'nope'"):
            memory.add_tool_output("nope", "x")
        with pytest.raises(ConfigError, match="unknown call id"):
            memory.add_output_items([{"role": "tool", "tool_call_id": "nope", "content": "x"}])
        assert memory.version == 1

    def test_unknown_call_ids_accepted_when_asked(self, memory_factory: MemoryFactory) -> None:
        memory = memory_factory(accept_unknown_call_ids=True)
        memory.add_tool_output("external", "x")
        assert memory.items == [FunctionCallOutput(call_id="external", output="x", seq=1)]
        with pytest.raises(ConfigError, match="already has an output"):
            memory.add_tool_output("external", "again")

    def test_second_output_for_a_call_raises(self, memory: AgentMemory) -> None:
        memory.add_output_items([assistant_call("c1")])
        memory.add_tool_output("c1", "first")
        with pytest.raises(ConfigError, match="already has an output"):
            memory.add_tool_output("c1", "second")
        tool = {"role": "tool", "tool_call_id": "c1", "content": "again"}
        with pytest.raises(ConfigError, match="already has an output"):
            memory.add_output_items([tool])
        assert texts(memory.items)[-1] == "first"

    @pytest.mark.parametrize("output", [None, {"rows": 3}, 42, b"bytes", ["not a part"]])
    def test_tool_output_that_is_not_text_or_parts_raises(
        self, memory: AgentMemory, output: Any
    ) -> None:
        # Used to raise TypeError (None) or a pydantic ValidationError (a dict).
        memory.add_output_items([assistant_call("c1")])
        with pytest.raises(ConfigError, match="'c1' must be text or content parts"):
            memory.add_tool_output("c1", output)
        assert memory.version == 1
        memory.add_tool_output("c1", "")  # still answerable
        assert texts(memory.items)[-1] == ""

    def test_a_reused_call_id_raises(self, memory: AgentMemory) -> None:
        memory.add_output_items([assistant_call("c1")])
        with pytest.raises(ConfigError, match="already used"):
            memory.add_output_items([assistant_call("c1")])

    def test_a_batch_is_all_or_nothing(self, memory: AgentMemory) -> None:
        with pytest.raises(ConfigError):
            memory.add_output_items(
                [assistant_call("c1"), {"role": "tool", "tool_call_id": "zz", "content": "x"}]
            )
        assert memory.history() == []
        memory.add_output_items(
            [assistant_call("c1"), {"role": "tool", "tool_call_id": "c1", "content": "x"}]
        )
        assert seqs(memory.items) == [1, 2]

    def test_output_for_an_archived_call_is_accepted(self, memory: AgentMemory) -> None:
        memory.add_output_items([assistant_call("c1")])
        memory.add_user_input("meanwhile")
        snapshot = memory.snapshot()
        memory.apply(result(snapshot, snapshot.items[1:], summary="called ls"))
        memory.add_tool_output("c1", "late")
        assert texts(memory.items)[-1] == "late"

    # -- the items contract --------------------------------------------------------------------

    def test_items_render_the_summary_first_after_instructions(self, memory: AgentMemory) -> None:
        memory.add_user_input(Message(role="system", content="be brief"))
        memory.add_user_input("one")
        memory.add_user_input("two")
        snapshot = memory.snapshot()
        memory.apply(result(snapshot, [snapshot.items[0], snapshot.items[2]], summary="said one"))
        system, summary, last = memory.items
        assert texts([system, last]) == ["be brief", "two"]
        assert is_summary_message(summary)
        assert summary == summary_message("said one", "user")  # user by default (not system)
        assert memory.summary == "said one"
        assert not any(is_summary_message(i) for i in memory.snapshot().items)

    def test_summary_role_is_configurable(self, memory_factory: MemoryFactory) -> None:
        memory = memory_factory(summary_role="system")
        memory.add_user_input("one")
        memory.apply(result(memory.snapshot(), memory.snapshot().items, summary="s"))
        assert memory.items[0] == summary_message("s", "system")

    # -- snapshot and apply --------------------------------------------------------------------

    def test_apply_swaps_summary_and_items_in_one_write(self, memory: AgentMemory) -> None:
        for text in "abcd":
            memory.add_user_input(text)
        snapshot = memory.snapshot()
        assert snapshot.version == 4 and seqs(snapshot.items) == [1, 2, 3, 4]
        assert memory.apply(result(snapshot, snapshot.items[2:], summary="a, b"))
        after = memory.snapshot()
        assert (after.summary, seqs(after.items), after.version) == ("a, b", [3, 4], 5)
        assert snapshot.items[0] in memory.history()

    @pytest.mark.parametrize("write", ["compaction", "pin", "restore", "clear"])
    def test_a_result_whose_span_changed_raises_and_changes_nothing(
        self, memory: AgentMemory, write: str
    ) -> None:
        for text in "abc":
            memory.add_user_input(text)
        stale = memory.snapshot()
        if write == "compaction":
            memory.apply(result(stale, stale.items[1:], summary="a"))
        elif write == "pin":
            memory.pin(2)
        elif write == "restore":
            memory.restore(stale, history=memory.history())
        else:
            memory.clear()
        memory.add_user_input("d")
        before = memory.snapshot()
        with pytest.raises(ConcurrencyError, match="version 3"):
            memory.apply(result(stale, stale.items[2:], summary="a b"))
        assert memory.snapshot() == before

    # -- rebase over appends (a compaction that ran while the agent kept writing) -------------

    def test_a_result_is_rebased_over_appends(self, memory: AgentMemory) -> None:
        for text in "abcd":
            memory.add_user_input(text)
        snapshot = memory.snapshot()
        memory.add_output_items([assistant_call("c1")])  # written while the compressor ran
        memory.add_tool_output("c1", "out")
        memory.pin(6)
        memory.add_user_input("e")
        stale = memory.snapshot()
        memory.add_user_input("f")
        marker = Message(role="user", content="[folded]")
        assert memory.apply(result(stale, [marker, *stale.items[3:]], summary="a b c"))
        after = memory.snapshot()
        assert texts(after.items) == ["[folded]", "d", "ls({})", "out", "e", "f"]
        assert seqs(after.items) == [9, 4, 5, 6, 7, 8]  # the new item numbered after them all
        assert after.items[3].pinned and after.summary == "a b c"
        assert seqs(memory.history()) == list(range(1, 10))
        assert snapshot.version is not None and after.version == stale.version + 2
        memory.add_user_input("g")
        assert seqs(memory.items)[-1] == 10

    def test_a_rebased_result_keeps_pins_and_drops_nothing_appended(
        self, memory: AgentMemory
    ) -> None:
        for text in "abc":
            memory.add_user_input(text)
        stale = memory.snapshot()
        for text in "xyz":
            memory.add_user_input(text)
        memory.apply(result(stale, stale.items[2:], summary="a b"))
        assert texts(memory.snapshot().items) == ["c", "x", "y", "z"]
        with pytest.raises(ConcurrencyError):  # the same stale result, now over a compaction
            memory.apply(result(stale, stale.items[1:], summary="a"))
        assert texts(memory.snapshot().items) == ["c", "x", "y", "z"]

    def test_a_result_from_another_memory_is_not_rebased(
        self, memory: AgentMemory, memory_factory: MemoryFactory
    ) -> None:
        other: AgentMemory = memory_factory()
        for target in (memory, other):
            for text in "ab":
                target.add_user_input(text)
        foreign = other.snapshot()
        memory.add_user_input("c")
        with pytest.raises(ConcurrencyError, match="version 2"):
            memory.apply(result(foreign, foreign.items[1:], summary="a"))
        assert texts(memory.snapshot().items) == ["a", "b", "c"]

    @pytest.mark.parametrize("outcome", ["failed", "unchanged"])
    def test_failed_and_unchanged_results_are_no_ops(
        self, memory: AgentMemory, outcome: Outcome
    ) -> None:
        memory.add_user_input("a")
        stale = memory.snapshot()
        memory.add_user_input("b")
        before = memory.snapshot()
        assert memory.apply(result(stale, (), summary="lost?", outcome=outcome)) is False
        assert memory.snapshot() == before

    def test_a_result_without_version_is_refused(self, memory: AgentMemory) -> None:
        memory.add_user_input("a")
        unversioned = MemorySnapshot(summary="s", items=())
        with pytest.raises(ConfigError, match="no version"):
            memory.apply(result(unversioned, ()))

    def test_new_items_get_fresh_seqs_where_the_compressor_put_them(
        self, memory: AgentMemory
    ) -> None:
        for text in "abc":
            memory.add_user_input(text)
        snapshot = memory.snapshot()
        marker = Message(role="user", content="[2 items folded]")
        memory.apply(result(snapshot, [marker, snapshot.items[2]]))
        assert seqs(memory.items) == [4, 3]
        memory.add_user_input("d")
        assert seqs(memory.items) == [4, 3, 5]
        assert seqs(memory.history()) == [1, 2, 3, 4, 5]

    def test_a_replaced_item_keeps_its_seq_and_history_its_original(
        self, memory: AgentMemory
    ) -> None:
        memory.add_output_items([assistant_call("c1")])
        memory.add_tool_output("c1", "x" * 1000)
        snapshot = memory.snapshot()
        masked = snapshot.items[1].model_copy(update={"output": "[output masked]"})
        memory.apply(result(snapshot, [snapshot.items[0], masked]))
        assert texts(memory.items) == ["ls({})", "[output masked]"]
        assert seqs(memory.items) == [1, 2]
        assert texts(memory.history()) == ["ls({})", "x" * 1000]

    @pytest.mark.parametrize("problem", ["unknown seq", "seq twice", "summary item"])
    def test_results_breaking_the_contract_are_refused(
        self, memory: AgentMemory, problem: str
    ) -> None:
        memory.add_user_input("a")
        snapshot = memory.snapshot()
        bad = {
            "unknown seq": [user("x").model_copy(update={"seq": 77})],
            "seq twice": [snapshot.items[0], snapshot.items[0]],
            "summary item": [summary_message("s")],
        }[problem]
        with pytest.raises(ConfigError):
            memory.apply(result(snapshot, bad))
        assert memory.snapshot() == snapshot

    def test_history_keeps_archived_items_in_seq_order(self, memory: AgentMemory) -> None:
        for text in "abcdef":
            memory.add_user_input(text)
        for _ in range(2):
            snapshot = memory.snapshot()
            memory.apply(result(snapshot, snapshot.items[2:], summary="folded"))
        assert texts(memory.snapshot().items) == ["e", "f"]
        assert texts(memory.history()) == list("abcdef")
        assert seqs(memory.history()) == [1, 2, 3, 4, 5, 6]

    # -- pins ----------------------------------------------------------------------------------

    def test_pins_survive_compaction(self, memory: AgentMemory) -> None:
        for text in "abc":
            memory.add_user_input(text)
        memory.pin(1)
        assert memory.items[0].pinned and memory.version == 4
        snapshot = memory.snapshot()
        rewritten = user("A").model_copy(update={"seq": 1})  # a compressor forgetting the flag
        memory.apply(result(snapshot, [rewritten, snapshot.items[2]]))
        assert [(i.seq, i.pinned) for i in memory.items] == [(1, True), (3, False)]
        assert memory.history()[0].pinned

    @pytest.mark.parametrize("seq", ["1", 1.0, None, True])
    def test_pin_takes_an_int_seq(self, memory: AgentMemory, seq: Any) -> None:
        memory.add_user_input("a")
        with pytest.raises(ConfigError, match="an int"):
            memory.pin(seq)
        with pytest.raises(ConfigError, match="an int"):
            memory.unpin(seq)
        assert not memory.items[0].pinned and memory.version == 1

    @pytest.mark.parametrize("value", [None, "compacted", {}])
    def test_apply_takes_a_compact_result(self, memory: AgentMemory, value: Any) -> None:
        memory.add_user_input("a")
        with pytest.raises(ConfigError, match="CompactResult"):
            memory.apply(value)
        assert texts(memory.items) == ["a"] and memory.version == 1

    def test_a_result_dropping_a_pinned_item_is_refused(self, memory: AgentMemory) -> None:
        memory.add_user_input("keep me")
        memory.add_user_input("b")
        memory.pin(1)
        snapshot = memory.snapshot()
        with pytest.raises(ConfigError, match="pinned"):
            memory.apply(result(snapshot, snapshot.items[1:]))
        assert memory.snapshot() == snapshot

    def test_unpin_and_idempotent_pins(self, memory: AgentMemory) -> None:
        memory.add_user_input("a")
        memory.pin(1)
        memory.pin(1)
        assert memory.version == 2
        memory.unpin(1)
        memory.unpin(1)
        assert memory.version == 3 and not memory.items[0].pinned

    def test_only_active_items_can_be_pinned(self, memory: AgentMemory) -> None:
        memory.add_user_input("a")
        memory.add_user_input("b")
        snapshot = memory.snapshot()
        memory.apply(result(snapshot, snapshot.items[1:]))
        with pytest.raises(ConfigError, match="archived"):
            memory.pin(1)
        with pytest.raises(ConfigError, match="never stored"):
            memory.pin(42)

    # -- restore and clear ---------------------------------------------------------------------

    def test_restore_round_trips_into_a_fresh_memory(
        self, memory: AgentMemory, memory_factory: MemoryFactory
    ) -> None:
        memory.add_output_items([assistant_call("c1")])
        memory.add_tool_output("c1", "long output")
        memory.add_user_input("next")
        memory.pin(3)
        snapshot = memory.snapshot()
        masked = snapshot.items[1].model_copy(update={"output": "[masked]"})
        memory.apply(result(snapshot, [masked, snapshot.items[2]], summary="called ls"))
        other: AgentMemory = memory_factory()
        other.restore(memory.snapshot(), history=memory.history())
        assert other.items == memory.items
        assert other.history() == memory.history()
        assert other.version > memory.snapshot().version
        with pytest.raises(ConfigError, match="already has an output"):
            other.add_tool_output("c1", "again")
        other.add_user_input("more")
        assert other.items[-1].seq == 4

    def test_restore_rolls_back_a_compaction(self, memory: AgentMemory) -> None:
        for text in "abc":
            memory.add_user_input(text)
        before = memory.snapshot()
        memory.apply(result(before, before.items[2:], summary="a b"))
        stale = memory.snapshot()
        memory.restore(before, history=memory.history())
        assert memory.snapshot().items == before.items and memory.summary == ""
        assert memory.version > stale.version
        with pytest.raises(ConcurrencyError):
            memory.apply(result(stale, ()))

    def test_restore_never_compacts_and_numbers_new_items(
        self, memory_factory: MemoryFactory
    ) -> None:
        compressor = KeepLast(1)
        memory = memory_factory(compressor=compressor)
        loaded = MemorySnapshot.of([user("a"), user("b").model_copy(update={"seq": 10}), user("c")])
        memory.restore(loaded)
        assert compressor.calls == []
        assert seqs(memory.items) == [11, 10, 12]
        summary = summary_message("s")
        with pytest.raises(ConfigError, match="from_items"):
            memory.restore(MemorySnapshot.of([*memory.snapshot().items, summary]))

    def test_clear_forgets_everything_but_seqs_are_never_reused(self, memory: AgentMemory) -> None:
        memory.add_output_items([assistant_call("c1")])
        memory.add_tool_output("c1", "x")
        memory.apply(result(memory.snapshot(), memory.snapshot().items, summary="s"))
        version = memory.version
        memory.clear()
        assert (memory.items, memory.summary, memory.history()) == ([], "", [])
        assert memory.version == version + 1
        memory.add_output_items([assistant_call("c1")])  # the call index is forgotten too
        assert seqs(memory.items) == [3]

    # -- write-path compaction -----------------------------------------------------------------

    def test_write_path_compaction_runs_when_the_policy_fires(
        self, memory_factory: MemoryFactory
    ) -> None:
        seen: list[CompactResult] = []
        compressor = KeepLast(2)
        memory = memory_factory(
            policy=lambda s: len(s.items) > 3, compressor=compressor, on_compact=seen.append
        )
        for text in "abc":
            memory.add_user_input(text)
        assert compressor.calls == [] and memory.last_compaction is None
        memory.add_user_input("d")
        assert texts(memory.items) == ["a | b", "c", "d"]
        assert memory.last_compaction is seen[0] and seen[0].outcome == "compacted"
        assert texts(memory.history()) == list("abcd")

    def test_without_a_policy_the_compressor_runs_after_every_write(
        self, memory_factory: MemoryFactory
    ) -> None:
        compressor = KeepLast(1)
        memory = memory_factory(compressor=compressor)
        memory.add_user_input("a")
        memory.add_user_input("b")
        assert len(compressor.calls) == 2
        assert memory.summary == "a" and texts(memory.snapshot().items) == ["b"]

    def test_a_failed_compaction_loses_nothing_and_is_reported(
        self, memory_factory: MemoryFactory
    ) -> None:
        seen: list[CompactResult] = []
        memory = memory_factory(policy=lambda s: True, compressor=Failing(), on_compact=seen.append)
        memory.add_user_input("a")
        memory.add_user_input("b")
        assert texts(memory.items) == ["a", "b"]
        assert [r.outcome for r in seen] == ["failed", "failed"]
        assert memory.last_compaction is not None
        assert memory.last_compaction.error == "summarizer unreachable"

    def test_a_new_compressor_takes_effect_at_the_next_write(
        self, memory_factory: MemoryFactory
    ) -> None:
        memory = memory_factory()
        for text in "abc":
            memory.add_user_input(text)
        compressor = KeepLast(1)
        memory.compressor = compressor
        assert compressor.calls == [] and memory.version == 3
        memory.set_compressor(compressor, policy=lambda s: len(s.items) > 3)
        memory.add_user_input("d")
        assert texts(memory.items) == ["a | b | c", "d"]
        memory.compressor = None  # pauses; the policy is kept
        memory.add_user_input("e")
        assert texts(memory.items) == ["a | b | c", "d", "e"]
        memory.set_compressor(KeepLast(1))
        memory.add_user_input("f")
        assert len(memory.snapshot().items) == 3  # the kept policy (> 3) has not fired
        memory.add_user_input("g")
        assert texts(memory.items) == ["a | b | c | d | e | f", "g"]

    def test_a_policy_needs_a_compressor(self, memory_factory: MemoryFactory) -> None:
        with pytest.raises(ConfigError, match="needs a compressor"):
            memory_factory(policy=lambda s: True)
        memory = memory_factory()
        with pytest.raises(ConfigError, match="needs a compressor"):
            memory.policy = lambda s: True

    def test_an_unusable_policy_or_compressor_is_refused_when_configured(
        self, memory_factory: MemoryFactory
    ) -> None:
        # Used to be accepted and fail at the next write with a TypeError, after the write was
        # stored: a CompactPolicy is not a trigger until policy.as_trigger(counter).
        compact_policy = CompactPolicy(items_over(3), target=100)
        with pytest.raises(ConfigError, match=r"as_trigger\(counter\)"):
            memory_factory(policy=compact_policy, compressor=KeepLast(1))
        with pytest.raises(ConfigError, match="trigger"):
            memory_factory(policy=42, compressor=KeepLast(1))
        with pytest.raises(ConfigError, match="compress"):
            memory_factory(compressor=object())
        memory = memory_factory(compressor=KeepLast(1))
        with pytest.raises(ConfigError, match=r"as_trigger\(counter\)"):
            memory.policy = compact_policy  # type: ignore[assignment]
        with pytest.raises(ConfigError, match=r"as_trigger\(counter\)"):
            memory.set_compressor(KeepLast(1), policy=compact_policy)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="compress"):
            memory.compressor = "digest"  # type: ignore[assignment]
        memory.add_user_input("a")
        assert texts(memory.items) == ["a"] and memory.version == 1

    def test_manual_compaction(self, memory_factory: MemoryFactory) -> None:
        seen: list[CompactResult] = []
        memory = memory_factory(on_compact=seen.append)
        with pytest.raises(ConfigError, match="needs a compressor"):
            memory.compact()
        for text in "abc":
            memory.add_user_input(text)
        outcome = memory.compact(KeepLast(1))
        assert outcome.outcome == "compacted" and seen == [outcome]
        assert memory.last_compaction is outcome
        assert texts(memory.items) == ["a | b", "c"]

    def test_a_compressor_that_raises_does_not_undo_the_write(
        self, memory_factory: MemoryFactory
    ) -> None:
        class Broken:
            def compress(self, snapshot: MemorySnapshot) -> CompactResult:
                raise RuntimeError("bug")

        memory = memory_factory(compressor=Broken())
        with pytest.raises(RuntimeError, match="bug"):
            memory.add_user_input("kept")
        assert texts(memory.items) == ["kept"]

    # -- invariants ----------------------------------------------------------------------------

    @settings(
        deadline=None,
        max_examples=60,
        # differing_executors: every backend subclass runs this one test function
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.differing_executors,
        ],
    )
    @given(ops=st.lists(st.sampled_from(["user", "call", "output", "fold", "pin"]), max_size=40))
    def test_random_operations_keep_the_invariants(
        self, memory_factory: MemoryFactory, ops: list[str]
    ) -> None:
        memory = memory_factory()
        written: list[str] = []
        pending: list[str] = []
        versions = [memory.version]
        for n, op in enumerate(ops):
            if op == "user":
                memory.add_user_input(f"u{n}")
                written.append(f"u{n}")
            elif op == "call":
                memory.add_output_items([assistant_call(f"c{n}")])
                pending.append(f"c{n}")
                written.append("ls({})")
            elif op == "output" and pending:
                memory.add_tool_output(pending.pop(0), f"o{n}")
                written.append(f"o{n}")
            elif op == "fold":
                snapshot = memory.snapshot()
                keep = [i for i in snapshot.items if i.pinned] + list(snapshot.items[-2:])
                keep = sorted({i.seq: i for i in keep}.values(), key=lambda i: i.seq or 0)
                memory.apply(result(snapshot, keep, summary=f"{snapshot.summary}+"))
            elif op == "pin" and memory.snapshot().items:
                memory.pin(memory.snapshot().items[0].seq or 0)
            versions.append(memory.version)
            history = memory.history()
            assert texts(history) == written  # nothing is ever lost, order kept
            assert seqs(history) == list(range(1, len(history) + 1))
            active = memory.snapshot().items
            assert len(set(seqs(active))) == len(active)
            assert all(i in history for i in active)
            assert memory.items == memory.snapshot().render_items()
        assert versions == sorted(versions)

    # -- threads -------------------------------------------------------------------------------

    def _threads(self, count: int, target: Callable[[int], None]) -> None:
        if not self.thread_safe:
            pytest.skip("backend does not claim thread safety")
        errors: list[BaseException] = []

        def run(index: int) -> None:
            try:
                target(index)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []

    def test_concurrent_writers_lose_nothing(self, memory: AgentMemory) -> None:
        def write(t: int) -> None:
            for n in range(30):
                memory.add_user_input(f"t{t}-{n}")
                memory.add_output_items([assistant_call(f"t{t}-c{n}")])
                memory.add_tool_output(f"t{t}-c{n}", f"t{t}-o{n}")

        self._threads(8, write)
        history = memory.history()
        assert len(history) == 8 * 30 * 3 and memory.version == 8 * 30 * 3
        assert seqs(memory.items) == list(range(1, len(history) + 1))
        for t in range(8):
            mine = [x for x in texts(history) if x.startswith(f"t{t}-")]
            assert mine == [f"t{t}-{k}{n}" for n in range(30) for k in ("", "o")]

    def test_concurrent_compactions_and_writes_lose_nothing(self, memory: AgentMemory) -> None:
        compressor = KeepLast(3)
        conflicts = 0

        def work(t: int) -> None:
            nonlocal conflicts
            for n in range(40):
                if t == 0:
                    try:
                        memory.apply(compressor.compress(memory.snapshot()))
                    except ConcurrencyError:
                        conflicts += 1
                else:
                    memory.add_user_input(f"t{t}-{n}")

        self._threads(5, work)
        assert sorted(texts(memory.history())) == sorted(
            f"t{t}-{n}" for t in range(1, 5) for n in range(40)
        )
        folded = memory.summary.split(" | ") if memory.summary else []
        assert sorted(folded + texts(memory.snapshot().items)) == sorted(texts(memory.history()))

    def test_write_path_compaction_under_threads(self, memory_factory: MemoryFactory) -> None:
        memory = memory_factory(policy=lambda s: len(s.items) > 10, compressor=KeepLast(5))

        def write(t: int) -> None:
            for n in range(40):
                memory.add_user_input(f"t{t}-{n}")

        self._threads(6, write)
        assert len(memory.history()) == 240
        assert len(memory.snapshot().items) <= 10
        folded = memory.summary.split(" | ")
        assert sorted(folded + texts(memory.snapshot().items)) == sorted(texts(memory.history()))
