"""Memory rules: checkpoints (restore, clear, saved states), isolation by session id, many
handles on one session, concurrency, and the invariants of any sequence of operations."""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Callable, Sequence

from compactkit.errors import ConcurrencyError, ConfigError
from compactkit.items.snapshot import MemorySnapshot, summary_message
from compactkit.memory import AgentMemory
from compactkit.sessions import InMemorySessionStore
from compactkit.sessions.session import AgentSession, new_session, resume_session
from compactkit.testing.conformance._kit import ConformanceFailure, expect, raises, same
from compactkit.testing.conformance._memory_writes import rule
from compactkit.testing.conformance._support import (
    KeepLast,
    MemoryKit,
    assistant_call,
    result,
    seqs,
    texts,
    user,
)

# -- checkpoints ---------------------------------------------------------------------------------


def _worked_session(memory: AgentMemory) -> None:
    """A call and its output, a pin, a masked output and a summary."""
    memory.add_output_items([assistant_call("c1")])
    memory.add_tool_output("c1", "long output")
    memory.add_user_input("next")
    memory.pin(3)
    snapshot = memory.snapshot()
    masked = snapshot.items[1].model_copy(update={"output": "[masked]"})
    memory.apply(result(snapshot, [masked, snapshot.items[2]], summary="called ls"))


def _same_state(restored: AgentMemory, original: AgentMemory, what: str) -> None:
    """``restored`` holds ``original``'s state, and its next write gets seq 4."""
    same(restored.items, original.items, f"items of {what}")
    same(restored.summary, original.summary, f"summary of {what}")
    same(restored.history(), original.history(), f"history() of {what}")
    with raises(ConfigError, match="already has an output", doing=f"answering c1 again in {what}"):
        restored.add_tool_output("c1", "again")
    restored.add_user_input("more")
    same(restored.items[-1].seq, 4, f"seq of the next write in {what}")


@rule(
    "restore-round-trips",
    "restore(snapshot, history=history()) into a fresh memory gives the same items, summary, "
    "pins, history and call ids, and a version above the snapshot's.",
)
def _restore_round_trips(kit: MemoryKit) -> None:
    memory = kit.new()
    _worked_session(memory)
    other = kit.new()
    other.restore(memory.snapshot(), history=memory.history())
    expect(
        other.version > (memory.snapshot().version or 0),
        f"version after restore ({other.version}) must exceed the snapshot's",
    )
    _same_state(other, memory, "the restored memory")


@rule(
    "checkpoint-round-trips-through-a-store",
    "A session saved to a store (its state as JSON) and loaded into a fresh memory has the same "
    "items, summary, pins, history and call ids.",
)
def _checkpoint_round_trips_through_a_store(kit: MemoryKit) -> None:
    session_id = kit.fresh_id("checkpoint")
    session = AgentSession(kit.open(session_id), session_id=session_id)
    _worked_session(session.memory)
    store = InMemorySessionStore()
    store.save(session)
    loaded = AgentSession.from_state(store.load(session_id), kit.new())
    _same_state(loaded.memory, session.memory, "the memory loaded from the checkpoint")


@rule(
    "resume-keeps-what-was-committed-after-the-checkpoint",
    "Resuming a session whose stored memory moved past its checkpoint (another worker's turn) "
    "keeps what was committed; nothing written after the checkpoint is deleted.",
    "persistent",
)
def _resume_keeps_what_was_committed_after_the_checkpoint(kit: MemoryKit) -> None:
    session_id = kit.fresh_id("resume")
    session = AgentSession(kit.open(session_id), session_id=session_id)
    session.memory.add_user_input("before the checkpoint")
    store = InMemorySessionStore()
    store.save(session)
    kit.open(session_id).add_user_input("another worker's turn")
    resumed = resume_session(store, session_id, kit.open)
    same(
        texts(resumed.memory.history()),
        ["before the checkpoint", "another worker's turn"],
        "history() of the resumed session",
    )


@rule(
    "restore-never-deletes-newer-appends",
    "restore() of a snapshot older than items another handle appended raises ConcurrencyError "
    "and changes nothing (clear() first to discard them deliberately).",
    "persistent",
)
def _restore_never_deletes_newer_appends(kit: MemoryKit) -> None:
    session_id = kit.fresh_id("restore")
    memory = kit.open(session_id)
    memory.add_user_input("one")
    checkpoint = memory.snapshot()
    kit.open(session_id).add_user_input("another worker's turn")
    with raises(ConcurrencyError, doing="restore(a snapshot older than another handle's append)"):
        memory.restore(checkpoint)
    same(texts(memory.history()), ["one", "another worker's turn"], "history() after refusal")
    memory.clear()
    memory.restore(checkpoint)
    same(texts(memory.items), ["one"], "items restored after clear()")


@rule(
    "restore-rolls-back-a-compaction",
    "Restoring an earlier snapshot undoes a compaction, and results computed before the "
    "restore are refused with ConcurrencyError.",
)
def _restore_rolls_back_a_compaction(kit: MemoryKit) -> None:
    memory = kit.new()
    for text in "abc":
        memory.add_user_input(text)
    before = memory.snapshot()
    memory.apply(result(before, before.items[2:], summary="a b"))
    stale = memory.snapshot()
    memory.restore(before, history=memory.history())
    same(memory.snapshot().items, before.items, "items after restoring")
    same(memory.summary, "", "summary after restoring")
    expect(memory.version > (stale.version or 0), "restore did not raise the version")
    with raises(ConcurrencyError, doing="apply(a result from before the restore)"):
        memory.apply(result(stale, ()))


@rule(
    "restore-never-compacts",
    "restore() never runs the compressor; items without a seq get seqs after every seq given.",
    "options",
)
def _restore_never_compacts(kit: MemoryKit) -> None:
    compressor = KeepLast(1)
    memory = kit.new(compressor=compressor)
    loaded = MemorySnapshot.of([user("a"), user("b").model_copy(update={"seq": 10}), user("c")])
    memory.restore(loaded)
    same(compressor.calls, [], "compressor calls during restore")
    same(seqs(memory.items), [11, 10, 12], "seqs after restore")
    with raises(ConfigError, match="from_items", doing="restore(a snapshot with a summary item)"):
        memory.restore(MemorySnapshot.of([summary_message("s"), *memory.snapshot().items]))


@rule(
    "restore-keeps-a-quoted-summary",
    "A sealed summary later in a conversation than the summary's own place (after the leading "
    "instructions) is quoted text: restore(MemorySnapshot.from_items(...)) keeps it as an "
    "ordinary message in place, and later compactions keep or fold it like any item.",
)
def _restore_keeps_a_quoted_summary(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.restore(MemorySnapshot.from_items([user("edited"), summary_message("s"), user("d")]))
    same(texts(memory.items), ["edited", "s", "d"], "items after restoring a quoted summary")
    same(memory.summary, "", "summary after restoring a quoted summary")
    snapshot = memory.snapshot()
    memory.apply(result(snapshot, snapshot.items[1:], summary="folded"))
    same(texts(memory.snapshot().items), ["s", "d"], "items after a compaction keeping it")
    same(memory.summary, "folded", "summary after a compaction keeping it")


@rule(
    "clear-forgets-but-never-reuses-seqs",
    "clear() forgets items, summary, history and call ids (version + 1); seqs are never reused.",
)
def _clear_forgets_but_never_reuses_seqs(kit: MemoryKit) -> None:
    memory = kit.new()
    memory.add_output_items([assistant_call("c1")])
    memory.add_tool_output("c1", "x")
    memory.apply(result(memory.snapshot(), memory.snapshot().items, summary="s"))
    version = memory.version
    memory.clear()
    same((memory.items, memory.summary, memory.history()), ([], "", []), "state after clear()")
    same(memory.version, version + 1, "version after clear()")
    memory.add_output_items([assistant_call("c1")])  # the call index is forgotten too
    same(seqs(memory.items), [3], "seq of the first write after clear()")


# -- isolation by session id ---------------------------------------------------------------------


@rule(
    "each-session-gets-its-own-memory",
    "The factory returns a new memory object for each session id (a shared object leaks state "
    "between sessions), so new_session accepts it for session after session.",
)
def _each_session_gets_its_own_memory(kit: MemoryKit) -> None:
    first, second = kit.fresh_id("a"), kit.fresh_id("b")
    a, b = kit.open(first), kit.open(second)
    expect(
        a is not b,
        f"the factory returned the same {type(a).__name__} object for sessions {first!r} and "
        f"{second!r}: a shared memory leaks state between sessions — return a new one per id",
    )
    try:
        for _ in range(2):
            new_session(lambda session_id: kit.open(session_id))
    except ConfigError as exc:
        raise ConformanceFailure(f"new_session refused the factory: {exc}") from exc


@rule(
    "a-new-session-starts-empty",
    "The memory of a new session id holds nothing, whatever other sessions stored (a backend "
    "that ignores the id shares one session's state with all).",
)
def _a_new_session_starts_empty(kit: MemoryKit) -> None:
    busy = kit.new()
    busy.add_user_input("secret of another session")
    busy.apply(result(busy.snapshot(), busy.snapshot().items, summary="their summary"))
    session_id = kit.fresh_id("new")
    fresh = kit.open(session_id)
    snapshot = fresh.snapshot()
    expect(
        not snapshot.items and not snapshot.summary and not fresh.history(),
        f"the memory of the new session {session_id!r} already holds "
        f"{texts(fresh.history())!r} and summary {snapshot.summary!r}",
    )


def _tricky_ids(kit: MemoryKit) -> list[str]:
    """Ids a key scheme may confuse: one a prefix of another, separators, case, brackets."""
    base = kit.fresh_id("iso")
    return [base, f"{base}:items", f"{base}:", f"{base}/x", base.upper(), f"{{{base}}}"]


@rule(
    "sessions-never-share-state",
    "Writes, call ids, compactions, pins and clear() of one session id never show in another, "
    "even for ids that differ by a suffix, a separator, case or brackets.",
)
def _sessions_never_share_state(kit: MemoryKit) -> None:
    ids = _tricky_ids(kit)
    memories = [kit.open(session_id) for session_id in ids]
    for session_id, memory in zip(ids, memories, strict=True):
        memory.add_user_input(f"hello {session_id}")
        memory.add_output_items([assistant_call("c1")])  # the same call id in every session
        memory.add_tool_output("c1", f"out {session_id}")
    first, second, third = memories[:3]
    first.apply(result(first.snapshot(), first.snapshot().items[1:], summary="folded"))
    second.clear()
    third.pin(1)
    expected = {
        session_id: (["ls({})", f"out {session_id}"] if n == 0 else [])
        if n < 2
        else [f"hello {session_id}", "ls({})", f"out {session_id}"]
        for n, session_id in enumerate(ids)
    }
    reopened = [kit.open(i) for i in ids] if kit.persistent else memories
    for session_id, memory in zip(ids, reopened, strict=True):
        same(texts(memory.snapshot().items), expected[session_id], f"items of {session_id!r}")
        same(memory.summary, "folded" if session_id == ids[0] else "", f"summary of {session_id!r}")
        pinned = [i.seq for i in memory.snapshot().items if i.pinned]
        same(pinned, [1] if session_id == ids[2] else [], f"pinned seqs of {session_id!r}")


# -- many handles on one session (persistent backends) --------------------------------------------


@rule(
    "a-second-handle-reads-what-was-written",
    "Another handle on the same session id (another process) reads the same items, summary, "
    "pins, history and call ids, and sees the first handle's later writes.",
    "persistent",
)
def _a_second_handle_reads_what_was_written(kit: MemoryKit) -> None:
    session_id = kit.fresh_id("handles")
    writer = kit.open(session_id)
    _worked_session(writer)
    reader = kit.open(session_id)
    same(reader.snapshot(), writer.snapshot(), "the second handle's snapshot")
    same(reader.history(), writer.history(), "the second handle's history()")
    with raises(ConfigError, match="already has an output", doing="answering c1 via the reader"):
        reader.add_tool_output("c1", "again")
    writer.add_user_input("later")
    same(texts(reader.items)[-1], "later", "the last item the second handle reads")


@rule(
    "a-stale-result-from-another-handle-is-refused",
    "A result computed by one handle is refused with ConcurrencyError after another handle "
    "compacted the session; the other handle's compaction stays.",
    "persistent",
)
def _a_stale_result_from_another_handle_is_refused(kit: MemoryKit) -> None:
    session_id = kit.fresh_id("fence")
    slow, fast = kit.open(session_id), kit.open(session_id)
    for text in "abcd":
        slow.add_user_input(text)
    stale = slow.snapshot()
    fresh = fast.snapshot()
    fast.apply(result(fresh, fresh.items[2:], summary="a b"))
    with raises(ConcurrencyError, doing="apply(a result from before another handle compacted)"):
        slow.apply(result(stale, stale.items[3:], summary="a b c"))
    same(texts(slow.snapshot().items), ["c", "d"], "items after the refused result")
    same(slow.summary, "a b", "summary after the refused result")


@rule(
    "two-handles-write-concurrently",
    "Two handles on one session writing at the same time lose nothing: every write is in "
    "history() once, with distinct seqs 1…n.",
    "persistent",
)
def _two_handles_write_concurrently(kit: MemoryKit) -> None:
    session_id = kit.fresh_id("writers")
    handles = [kit.open(session_id), kit.open(session_id)]

    def write(t: int) -> None:
        for n in range(15):
            handles[t].add_output_items([assistant_call(f"t{t}-c{n}")])
            handles[t].add_tool_output(f"t{t}-c{n}", f"t{t}-o{n}")

    _threads(2, write)
    history = kit.open(session_id).history()
    same(seqs(history), list(range(1, 61)), "history() seqs after 60 concurrent writes")
    for t in range(2):
        mine = [x for x in texts(history) if x.startswith(f"t{t}-")]
        same(mine, [f"t{t}-o{n}" for n in range(15)], f"handle {t}'s outputs, in order")


# -- threads on one memory object ----------------------------------------------------------------


def _threads(count: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            target(index)
        except BaseException as exc:  # reported below, in the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise ConformanceFailure(
            f"{len(errors)} of {count} threads failed; the first: "
            f"{type(errors[0]).__name__}: {errors[0]}"
        ) from errors[0]


@rule(
    "concurrent-writers-lose-nothing",
    "Threads writing to one memory lose nothing: every write stored once, seqs 1…n, each "
    "thread's writes in its order.",
    "threads",
)
def _concurrent_writers_lose_nothing(kit: MemoryKit) -> None:
    memory = kit.new()

    def write(t: int) -> None:
        for n in range(20):
            memory.add_user_input(f"t{t}-{n}")
            memory.add_output_items([assistant_call(f"t{t}-c{n}")])
            memory.add_tool_output(f"t{t}-c{n}", f"t{t}-o{n}")

    _threads(4, write)
    history = memory.history()
    same(len(history), 4 * 20 * 3, "items stored by 4 threads, 20 rounds of 3 writes")
    same(memory.version, 4 * 20 * 3, "version after 240 writes")
    same(seqs(memory.items), list(range(1, len(history) + 1)), "seqs")
    for t in range(4):
        mine = [x for x in texts(history) if x.startswith(f"t{t}-")]
        same(mine, [f"t{t}-{k}{n}" for n in range(20) for k in ("", "o")], f"thread {t}'s items")


@rule(
    "compactions-and-writes-race-safely",
    "A thread compacting while others write loses nothing: every item is in history(), and "
    "summary plus active items account for each exactly once.",
    "threads",
)
def _compactions_and_writes_race_safely(kit: MemoryKit) -> None:
    memory = kit.new()
    compressor = KeepLast(3)

    def work(t: int) -> None:
        for n in range(25):
            if t == 0:
                # a write landing in between is refused with ConcurrencyError: that is right
                with contextlib.suppress(ConcurrencyError):
                    memory.apply(compressor.compress(memory.snapshot()))
            else:
                memory.add_user_input(f"t{t}-{n}")

    _threads(4, work)
    written = sorted(f"t{t}-{n}" for t in range(1, 4) for n in range(25))
    same(sorted(texts(memory.history())), written, "history() after the race")
    folded = memory.summary.split(" | ") if memory.summary else []
    same(sorted(folded + texts(memory.snapshot().items)), written, "summary + active items")


@rule(
    "write-path-compaction-under-threads",
    "Write-path compaction with many writing threads keeps the window bounded and loses nothing.",
    "threads",
    "options",
)
def _write_path_compaction_under_threads(kit: MemoryKit) -> None:
    memory = kit.new(policy=lambda s: len(s.items) > 10, compressor=KeepLast(5))

    def write(t: int) -> None:
        for n in range(25):
            memory.add_user_input(f"t{t}-{n}")

    _threads(4, write)
    same(len(memory.history()), 100, "items in history()")
    expect(len(memory.snapshot().items) <= 10, "the window grew past the policy's 10 items")
    folded = memory.summary.split(" | ")
    same(sorted(folded + texts(memory.snapshot().items)), sorted(texts(memory.history())), "all")


# -- invariants of any sequence of operations ----------------------------------------------------

OPERATIONS = ("user", "call", "output", "fold", "pin")


def operations_keep_invariants(kit: MemoryKit, ops: Sequence[str]) -> None:
    """Run ``ops`` (names from ``OPERATIONS``) on a fresh memory, checking after each that
    nothing was lost, seqs are 1…n in history, active items are distinct stored items, the
    prompt view matches the snapshot, and versions never go down.

    Public so that property tests (hypothesis) can drive it with generated sequences.
    """
    memory = kit.new()
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
        where = f"after {list(ops[: n + 1])!r}"
        history = memory.history()
        same(texts(history), written, f"history() {where}")
        same(seqs(history), list(range(1, len(history) + 1)), f"history() seqs {where}")
        active = memory.snapshot().items
        same(len(set(seqs(active))), len(active), f"distinct active seqs {where}")
        expect(all(i in history for i in active), f"an active item is not in history() {where}")
        same(memory.items, memory.snapshot().render_items(), f"items vs snapshot {where}")
    same(versions, sorted(versions), "versions over the sequence (they must never go down)")


@rule(
    "random-operations-keep-the-invariants",
    "Any sequence of writes, compactions and pins keeps every item in history() in order, seqs "
    "1…n, active items distinct, and versions increasing.",
)
def _random_operations_keep_the_invariants(kit: MemoryKit) -> None:
    rng = random.Random(33)  # fixed: a failure reproduces
    for _ in range(12):
        operations_keep_invariants(kit, rng.choices(OPERATIONS, k=rng.randint(5, 30)))
