"""Memory rules: ``apply`` (atomic, version-checked, rebased over appends), pins, and
write-path compaction (failures reported, never swallowed)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from compactkit.errors import ConcurrencyError, ConfigError
from compactkit.governance.policy import CompactPolicy, items_over
from compactkit.items import CompactResult, Message
from compactkit.items.snapshot import MemorySnapshot, summary_message
from compactkit.testing.conformance._kit import expect, raises, same
from compactkit.testing.conformance._memory_writes import rule
from compactkit.testing.conformance._support import (
    Failing,
    KeepLast,
    MemoryKit,
    Raising,
    assistant_call,
    result,
    seqs,
    texts,
    user,
)

# -- apply -------------------------------------------------------------------------------------


@rule(
    "apply-is-one-atomic-swap",
    "apply(result) swaps summary and active items in one write (version + 1); what it folds "
    "stays in history().",
)
def _apply_is_one_atomic_swap(kit: MemoryKit) -> None:
    memory = kit.new()
    for text in "abcd":
        memory.add_user_input(text)
    snapshot = memory.snapshot()
    same((snapshot.version, seqs(snapshot.items)), (4, [1, 2, 3, 4]), "(version, seqs)")
    same(memory.apply(result(snapshot, snapshot.items[2:], summary="a, b")), True, "apply()")
    after = memory.snapshot()
    same((after.summary, seqs(after.items), after.version), ("a, b", [3, 4], 5), "after apply")
    expect(snapshot.items[0] in memory.history(), "a folded item vanished from history()")


@rule(
    "stale-results-are-refused",
    "A result computed before a compaction, pin, restore or clear raises ConcurrencyError "
    "naming its version, and changes nothing.",
)
def _stale_results_are_refused(kit: MemoryKit) -> None:
    for write in ("compaction", "pin", "restore", "clear"):
        memory = kit.new()
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
        with raises(
            ConcurrencyError, match="version 3", doing=f"apply(a result from before a {write})"
        ):
            memory.apply(result(stale, stale.items[2:], summary="a b"))
        same(memory.snapshot(), before, f"the memory after the refused result (after a {write})")


@rule(
    "results-rebase-over-appends",
    "A result computed while only appends happened is applied with the appended items kept "
    "after its own, in order; new items get fresh seqs; pins survive.",
)
def _results_rebase_over_appends(kit: MemoryKit) -> None:
    memory = kit.new()
    for text in "abcd":
        memory.add_user_input(text)
    memory.add_output_items([assistant_call("c1")])  # written while the compressor ran
    memory.add_tool_output("c1", "out")
    memory.pin(6)
    memory.add_user_input("e")
    stale = memory.snapshot()
    memory.add_user_input("f")
    marker = Message(role="user", content="[folded]")
    same(memory.apply(result(stale, [marker, *stale.items[3:]], summary="a b c")), True, "apply")
    after = memory.snapshot()
    same(texts(after.items), ["[folded]", "d", "ls({})", "out", "e", "f"], "items after rebase")
    same(seqs(after.items), [9, 4, 5, 6, 7, 8], "seqs (the new item numbered after them all)")
    expect(after.items[3].pinned, "the pinned tool output lost its pin in the rebase")
    same(after.summary, "a b c", "summary")
    same(seqs(memory.history()), list(range(1, 10)), "history() seqs")
    memory.add_user_input("g")
    same(seqs(memory.items)[-1], 10, "seq of the next write")
    # the same stale result, now over a compaction, is refused
    with raises(ConcurrencyError, doing="apply(the same stale result again)"):
        memory.apply(result(stale, stale.items[1:], summary="a"))


@rule(
    "results-of-another-memory-are-refused",
    "A result computed from another session's snapshot raises ConcurrencyError, not a rebase.",
)
def _results_of_another_memory_are_refused(kit: MemoryKit) -> None:
    memory, other = kit.new(), kit.new()
    for target in (memory, other):
        for text in "ab":
            target.add_user_input(text)
    foreign = other.snapshot()
    memory.add_user_input("c")
    with raises(ConcurrencyError, match="version 2", doing="apply(another memory's result)"):
        memory.apply(result(foreign, foreign.items[1:], summary="a"))
    same(texts(memory.snapshot().items), ["a", "b", "c"], "items after the refused result")


@rule(
    "failed-results-change-nothing",
    "apply() of a failed or unchanged result returns False and changes nothing — even when "
    "the result holds fewer items.",
)
def _failed_results_change_nothing(kit: MemoryKit) -> None:
    for outcome in ("failed", "unchanged"):
        memory = kit.new()
        memory.add_user_input("a")
        stale = memory.snapshot()
        memory.add_user_input("b")
        before = memory.snapshot()
        applied = memory.apply(result(stale, (), summary="lost?", outcome=outcome))
        same(applied, False, f"apply() of an {outcome!r} result")
        same(memory.snapshot(), before, f"the memory after an {outcome!r} result")


@rule(
    "apply-checks-its-argument",
    "apply() refuses what is not a CompactResult, a result without a version, and results "
    "breaking the compressor contract (unknown seq, a seq twice, a summary item, a dropped "
    "pin) with ConfigError, changing nothing.",
)
def _apply_checks_its_argument(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_user_input("a")
    values: list[Any] = [None, "compacted", {}]
    for value in values:
        with raises(ConfigError, match="CompactResult", doing=f"apply({value!r})"):
            memory.apply(value)
    with raises(ConfigError, match="no version", doing="apply(a result without version)"):
        memory.apply(result(MemorySnapshot(summary="s", items=()), ()))
    memory.add_user_input("b")
    memory.pin(1)
    snapshot = memory.snapshot()
    bad = {
        "an unknown seq": [snapshot.items[0], user("x").model_copy(update={"seq": 77})],
        "one seq twice": [snapshot.items[0], snapshot.items[0]],
        "a rendered summary item": [snapshot.items[0], summary_message("s")],
        "the pinned item dropped": list(snapshot.items[1:]),
    }
    for problem, items in bad.items():
        with raises(ConfigError, doing=f"apply(a result with {problem})"):
            memory.apply(result(snapshot, items))
        same(memory.snapshot(), snapshot, f"the memory after a result with {problem}")


@rule(
    "apply-numbers-new-items-and-keeps-originals",
    "Items a compressor creates get fresh seqs where it put them; a replaced item keeps its "
    "seq, and history() keeps its original; history() stays in seq order.",
)
def _apply_numbers_new_items_and_keeps_originals(kit: MemoryKit) -> None:
    memory = kit.new()
    for text in "abc":
        memory.add_user_input(text)
    snapshot = memory.snapshot()
    marker = Message(role="user", content="[2 items folded]")
    memory.apply(result(snapshot, [marker, snapshot.items[2]]))
    same(seqs(memory.items), [4, 3], "seqs after a compaction adding a placeholder")
    memory.add_user_input("d")
    same(seqs(memory.items), [4, 3, 5], "seqs after the next write")
    same(seqs(memory.history()), [1, 2, 3, 4, 5], "history() seqs")
    other = kit.new()
    other.add_output_items([assistant_call("c1")])
    other.add_tool_output("c1", "x" * 1000)
    snapshot = other.snapshot()
    masked = snapshot.items[1].model_copy(update={"output": "[output masked]"})
    other.apply(result(snapshot, [snapshot.items[0], masked]))
    same(texts(other.items), ["ls({})", "[output masked]"], "items after masking")
    same(seqs(other.items), [1, 2], "seqs after masking")
    same(texts(other.history()), ["ls({})", "x" * 1000], "history() keeps the original output")


@rule(
    "history-keeps-archived-items",
    "Compaction archives, never deletes: history() returns every item stored, by seq.",
)
def _history_keeps_archived_items(kit: MemoryKit) -> None:
    memory = kit.new()
    for text in "abcdef":
        memory.add_user_input(text)
    for _ in range(2):
        snapshot = memory.snapshot()
        memory.apply(result(snapshot, snapshot.items[2:], summary="folded"))
    same(texts(memory.snapshot().items), ["e", "f"], "active items after two compactions")
    same(texts(memory.history()), list("abcdef"), "history() after two compactions")
    same(seqs(memory.history()), [1, 2, 3, 4, 5, 6], "history() seqs")


# -- pins ----------------------------------------------------------------------------------------


@rule(
    "pins-survive-compaction",
    "A pinned item stays pinned through a compaction, even when the compressor rewrites it "
    "and forgets the flag; pin and unpin are idempotent and bump the version once.",
)
def _pins_survive_compaction(kit: MemoryKit) -> None:
    memory = kit.new()
    for text in "abc":
        memory.add_user_input(text)
    memory.pin(1)
    memory.pin(1)
    expect(memory.items[0].pinned, "pin(1) did not pin item 1")
    same(memory.version, 4, "version after pinning twice")
    snapshot = memory.snapshot()
    rewritten = user("A").model_copy(update={"seq": 1})  # a compressor forgetting the flag
    memory.apply(result(snapshot, [rewritten, snapshot.items[2]]))
    same([(i.seq, i.pinned) for i in memory.items], [(1, True), (3, False)], "(seq, pinned)")
    expect(memory.history()[0].pinned, "history() lost the pin of item 1")
    memory.unpin(1)
    memory.unpin(1)
    same(memory.version, 6, "version after unpinning twice")
    expect(not memory.items[0].pinned, "unpin(1) left item 1 pinned")


@rule(
    "pins-take-an-active-seq",
    "pin/unpin take an int seq of an active item; anything else raises ConfigError (saying "
    "'an int', 'archived' or 'never stored') and changes nothing.",
)
def _pins_take_an_active_seq(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_user_input("a")
    memory.add_user_input("b")
    for seq in ("1", 1.0, None, True):
        with raises(ConfigError, match="an int", doing=f"pin({seq!r})"):
            memory.pin(seq)  # type: ignore[arg-type]
        with raises(ConfigError, match="an int", doing=f"unpin({seq!r})"):
            memory.unpin(seq)  # type: ignore[arg-type]
    same(memory.version, 2, "version after refused pins")
    snapshot = memory.snapshot()
    memory.apply(result(snapshot, snapshot.items[1:]))
    with raises(ConfigError, match="archived", doing="pin(an archived seq)"):
        memory.pin(1)
    with raises(ConfigError, match="never stored", doing="pin(42)"):
        memory.pin(42)


# -- write-path compaction -----------------------------------------------------------------------


@rule(
    "write-path-compaction",
    "After a write, the compressor runs when the policy fires (after every write without a "
    "policy); its result is applied and reported to on_compact and last_compaction.",
    "options",
)
def _write_path_compaction(kit: MemoryKit) -> None:
    seen: list[CompactResult] = []
    compressor = KeepLast(2)
    memory: Any = kit.new(
        policy=lambda s: len(s.items) > 3, compressor=compressor, on_compact=seen.append
    )
    for text in "abc":
        memory.add_user_input(text)
    same(compressor.calls, [], "compressor calls before the policy fires")
    memory.add_user_input("d")
    same(texts(memory.items), ["a | b", "c", "d"], "items after the policy fired")
    same([r.outcome for r in seen], ["compacted"], "outcomes reported to on_compact")
    expect(memory.last_compaction is seen[0], "last_compaction is not the reported result")
    same(texts(memory.history()), list("abcd"), "history()")
    always = KeepLast(1)
    memory = kit.new(compressor=always)
    memory.add_user_input("a")
    memory.add_user_input("b")
    same(len(always.calls), 2, "compressor calls without a policy (one per write)")
    same((memory.summary, texts(memory.snapshot().items)), ("a", ["b"]), "(summary, items)")


@rule(
    "failed-compaction-is-reported-not-swallowed",
    "A compressor's failed result loses nothing (items and summary unchanged) and is reported "
    "to on_compact and last_compaction with its error; a compressor that raises propagates "
    "its exception and the write stays stored.",
    "options",
)
def _failed_compaction_is_reported_not_swallowed(kit: MemoryKit) -> None:
    seen: list[CompactResult] = []
    memory: Any = kit.new(policy=lambda s: True, compressor=Failing(), on_compact=seen.append)
    memory.add_user_input("a")
    memory.add_user_input("b")
    same(texts(memory.items), ["a", "b"], "items after failed compactions")
    same([r.outcome for r in seen], ["failed", "failed"], "outcomes reported to on_compact")
    last = memory.last_compaction
    expect(last is not None, "last_compaction is None after a failed compaction")
    same(last.error if last else None, "summarizer unreachable", "last_compaction.error")
    broken = kit.new(compressor=Raising())
    with raises(RuntimeError, match="compressor bug", doing="a write whose compressor raises"):
        broken.add_user_input("kept")
    same(texts(broken.items), ["kept"], "items after the compressor raised")


@rule(
    "compressor-changes-take-effect-at-the-next-write",
    "Setting compressor or policy runs nothing now; the next write uses them; None pauses "
    "write-path compaction and keeps the policy.",
    "options",
)
def _compressor_changes_take_effect_at_the_next_write(kit: MemoryKit) -> None:
    memory: Any = kit.new()
    for text in "abc":
        memory.add_user_input(text)
    compressor = KeepLast(1)
    memory.compressor = compressor
    same((compressor.calls, memory.version), ([], 3), "(compressor calls, version) after setting")
    memory.set_compressor(compressor, policy=lambda s: len(s.items) > 3)
    memory.add_user_input("d")
    same(texts(memory.items), ["a | b | c", "d"], "items after the next write")
    memory.compressor = None
    memory.add_user_input("e")
    same(texts(memory.items), ["a | b | c", "d", "e"], "items while paused")
    memory.set_compressor(KeepLast(1))
    memory.add_user_input("f")
    same(len(memory.snapshot().items), 3, "active items (the kept policy, > 3, has not fired)")
    memory.add_user_input("g")
    same(texts(memory.items), ["a | b | c | d | e | f", "g"], "items after the policy fired")


@rule(
    "unusable-compaction-settings-are-refused",
    "A policy without a compressor, a CompactPolicy (not a trigger), a non-callable policy and "
    "a compressor without compress() raise ConfigError when configured, not at a later write; "
    "compact() without a compressor raises ConfigError.",
    "options",
)
def _unusable_compaction_settings_are_refused(kit: MemoryKit) -> None:
    with raises(ConfigError, match="needs a compressor", doing="factory(policy=…) alone"):
        kit.new(policy=lambda s: True)
    compact_policy = CompactPolicy(items_over(3), target=100)
    with raises(ConfigError, match=r"as_trigger\(counter\)", doing="factory(policy=CompactPolicy)"):
        kit.new(policy=compact_policy, compressor=KeepLast(1))
    with raises(ConfigError, match="trigger", doing="factory(policy=42)"):
        kit.new(policy=42, compressor=KeepLast(1))
    with raises(ConfigError, match="compress", doing="factory(compressor=object())"):
        kit.new(compressor=object())
    memory: Any = kit.new()
    with raises(ConfigError, match="needs a compressor", doing="memory.policy = … alone"):
        memory.policy = lambda s: True
    with raises(ConfigError, match="needs a compressor", doing="compact() without compressor"):
        memory.compact()
    memory.add_user_input("a")
    same((texts(memory.items), memory.version), (["a"], 1), "(items, version)")


@rule(
    "manual-compaction",
    "compact(compressor) compacts now, returns the result and reports it.",
    "options",
)
def _manual_compaction(kit: MemoryKit) -> None:
    seen: list[CompactResult] = []
    memory: Any = kit.new(on_compact=seen.append)
    for text in "abc":
        memory.add_user_input(text)
    outcome = memory.compact(KeepLast(1))
    same(outcome.outcome, "compacted", "compact().outcome")
    expect(seen == [outcome], "compact() did not report its result to on_compact")
    expect(memory.last_compaction is outcome, "last_compaction is not compact()'s result")
    same(texts(memory.items), ["a | b", "c"], "items after compact()")


class _WritesWhileCompressing(KeepLast):
    """``KeepLast``, whose first ``compress`` waits for ``writes`` to land from another thread
    (as other workers' writes land while a summarizer runs)."""

    def __init__(self, n: int, writes: Callable[[], None]) -> None:
        super().__init__(n)
        self._writes: Callable[[], None] | None = writes

    def compress(self, snapshot: MemorySnapshot) -> CompactResult:
        writes, self._writes = self._writes, None
        if writes is not None:
            worker = threading.Thread(target=writes)
            worker.start()
            worker.join()
        return super().compress(snapshot)


@rule(
    "write-path-compaction-folds-writes-that-landed-meanwhile",
    "Writes that land while a write-path compaction runs are checked again once its result is "
    "in: the window ends within the policy, and nothing is lost.",
    "threads",
    "options",
)
def _write_path_compaction_folds_writes_that_landed_meanwhile(kit: MemoryKit) -> None:
    def writes() -> None:
        for n in range(8):
            memory.add_user_input(f"late-{n}")

    memory: Any = kit.new(
        policy=lambda s: len(s.items) > 10, compressor=_WritesWhileCompressing(5, writes)
    )
    for n in range(11):
        memory.add_user_input(f"early-{n}")
    written = [f"early-{n}" for n in range(11)] + [f"late-{n}" for n in range(8)]
    same(sorted(texts(memory.history())), sorted(written), "history() after the compaction")
    expect(
        len(memory.snapshot().items) <= 10,
        f"the window holds {len(memory.snapshot().items)} items, past the policy's 10, with no "
        "write left to compact it",
    )
    folded = memory.summary.split(" | ") if memory.summary else []
    same(sorted(folded + texts(memory.snapshot().items)), sorted(written), "summary + items")
