"""``CompactPolicy.measure`` reuses what it tallied last (a history grown by new items counts
only those); what it reports must still be the measured snapshot's own total, for the counter
it was given: a snapshot taken before the memory grew past it, and one policy shared by two
models' counters."""

from __future__ import annotations

from compactkit.budget.tokens import TiktokenCounter
from compactkit.governance.policy import CompactPolicy
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory.in_memory import InMemoryMemory

O200K, CL100K = TiktokenCounter("o200k_base"), TiktokenCounter("cl100k_base")


def policy() -> CompactPolicy:
    return CompactPolicy(trigger=10**9, target=10**8)  # measures only: never compacts


def fresh(snapshot: MemorySnapshot, counter: TiktokenCounter) -> int:
    """What a policy that never measured anything reports."""
    return policy().measure(snapshot, counter).tokens


def test_a_snapshot_measured_after_the_memory_grew_past_it_counts_its_own_items() -> None:
    memory = InMemoryMemory()
    memory.add_user_input("first message here")
    shared = policy()
    shared.measure(memory.snapshot(), O200K)
    memory.add_user_input("second " * 50)
    older = memory.snapshot()
    memory.add_user_input("third " * 80)  # the memory's list now holds more than `older`
    assert shared.measure(older, O200K).tokens == fresh(older, O200K)
    newer = memory.snapshot()
    assert shared.measure(newer, O200K).tokens == fresh(newer, O200K) > fresh(older, O200K)


def test_one_policy_measuring_with_two_counters_reports_each_counters_total() -> None:
    memory = InMemoryMemory()
    for n in range(20):  # text whose counts differ between the two encodings
        memory.add_user_input("naïve café déjà vu 東京 " * (n + 1))
    shared = policy()
    first = memory.snapshot()
    totals = [shared.measure(first, O200K).tokens, shared.measure(first, CL100K).tokens]
    memory.add_user_input("more 東京")
    second = memory.snapshot()
    totals += [shared.measure(second, CL100K).tokens, shared.measure(second, O200K).tokens]
    want = [fresh(first, O200K), fresh(first, CL100K), fresh(second, CL100K), fresh(second, O200K)]
    assert totals == want
    assert want[0] != want[1]  # the two counters disagree here, so a mix-up would show
