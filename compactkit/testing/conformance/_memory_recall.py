"""Memory rules for backends that offer recall (``compactkit.memory.Recallable``): what a
compaction folded stays findable by its words and expandable by its reference."""

from __future__ import annotations

from typing import Any

from compactkit.errors import ConfigError
from compactkit.memory import Recallable
from compactkit.testing.conformance._kit import expect, raises, same
from compactkit.testing.conformance._memory_writes import rule
from compactkit.testing.conformance._support import MemoryKit, assistant_call, result, texts


def _recallable(kit: MemoryKit) -> Any:
    memory = kit.new()
    expect(
        isinstance(memory, Recallable),
        f"{type(memory).__name__} was declared recall=True but lacks recall(query)/expand(ref)",
    )
    return memory


@rule(
    "recall-finds-what-compaction-folded",
    "recall(query) finds a folded item by an exact word of it (its original, ref '#seq'), not "
    "the active items, not another session's; expand(ref) returns the items a reference names "
    "as first stored, in seq order.",
    "recall",
)
def _recall_finds_what_compaction_folded(kit: MemoryKit) -> None:
    memory = _recallable(kit)
    memory.add_user_input("deploy to region zq7north before friday")
    memory.add_output_items([assistant_call("c1")])
    memory.add_tool_output("c1", "error E4471 in build")
    memory.add_user_input("now the active part mentions kestrel9")
    snapshot = memory.snapshot()
    masked = snapshot.items[2].model_copy(update={"output": "[masked]"})
    memory.apply(result(snapshot, [masked, snapshot.items[3]], summary="deploy planned"))
    originals = memory.history()
    hits = [h for h in memory.recall("zq7north") if h.seq]
    expect(hits, "recall('zq7north') found nothing: the folded user input is out of reach")
    same((hits[0].seq, hits[0].ref), (1, "#1"), "the best hit for 'zq7north' (seq, ref)")
    same(hits[0].item, originals[0], "the hit's item (the original, as first stored)")
    masked_hits = [h.seq for h in memory.recall("E4471") if h.seq]
    expect(3 in masked_hits, f"recall('E4471') misses the masked output's original: {masked_hits}")
    active_hits = [h.seq for h in memory.recall("kestrel9") if h.seq]
    same(active_hits, [], "item hits for a word only the active window holds")
    other: Any = kit.new()
    other.add_user_input("unrelated")
    same([h.seq for h in other.recall("zq7north") if h.seq], [], "hits in another session")
    same(memory.expand(hits[0].ref), [originals[0]], f"expand({hits[0].ref!r})")
    same(texts(memory.expand("#1-3")), texts(originals[:3]), "expand('#1-3')")


@rule(
    "recall-refuses-unusable-arguments",
    "recall() of a query without words or with a limit outside 1..1000, and expand() of "
    "something that is not a reference, raise ConfigError.",
    "recall",
)
def _recall_refuses_unusable_arguments(kit: MemoryKit) -> None:
    memory = _recallable(kit)
    memory.add_user_input("a")
    with raises(ConfigError, doing="recall('  ')"):
        memory.recall("  ")
    for limit in (0, 1001):
        with raises(ConfigError, doing=f"recall('a', limit={limit})"):
            memory.recall("a", limit=limit)
    with raises(ConfigError, doing="expand('not a ref')"):
        memory.expand("not a ref")
