"""``SeqMap`` (values by seq in a list: ``InMemoryMemory``'s history, ``MessageCompactor``'s map
of messages) held to a ``dict`` over random writes, batches written at once, deletes, reads and
subsets (a new map of the values at some seqs); ``history_of`` keeps a
sparse history as a dict; a memory's lazily indexed recall finds every item stored, whenever it
is asked."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.compressors import WindowedCompressor
from compactkit.items import FunctionCall, FunctionCallOutput, Message
from compactkit.memory import InMemoryMemory
from compactkit.memory._history import SeqMap, history_of, items_from

SEQS = st.integers(min_value=0, max_value=60)
OPS = st.lists(
    st.tuples(
        st.sampled_from(["set", "del", "get", "in", "from", "run", "subset"]), SEQS, st.integers()
    ),
    max_size=60,
)


@settings(deadline=None, max_examples=400)
@given(OPS)
def test_a_seq_map_reads_as_a_dict_by_seq(ops: list[tuple[str, int, int]]) -> None:
    plain: dict[int, int] = {}
    lean: SeqMap[int] = SeqMap()
    for op, seq, value in ops:
        if op == "set":
            plain[seq] = lean[seq] = value
        elif op == "run":  # a batch stored at seq, seq + 1, ... (often the next seqs)
            at = seq if value % 2 else max(plain, default=seq - 1) + 1
            run = [value + k for k in range(abs(value) % 4)]
            plain.update(zip(range(at, at + len(run)), run, strict=True))
            lean.set_run(at, run)
        elif op == "del":
            if seq in plain:
                del plain[seq]
                del lean[seq]
            else:
                try:
                    del lean[seq]
                except KeyError:
                    pass
                else:
                    raise AssertionError("deleted a seq it does not hold")
        elif op == "get":
            assert lean.get(seq) == plain.get(seq)
            assert lean.get(seq, -1) == plain.get(seq, -1)
        elif op == "in":
            assert (seq in lean) == (seq in plain)
        elif op == "subset":  # a new map of the values at some seqs (ascending)
            seqs = sorted({seq + k * (abs(value) % 5 + 1) - 20 for k in range(abs(value) % 40)})
            part = lean.subset(seqs)
            expected = {key: plain[key] for key in seqs if key in plain}
            assert dict(part.items()) == expected and list(part) == sorted(expected)
            assert len(part) == len(expected)
            part[61] = 0  # (a map of its own: writing it leaves the one it came from alone)
            assert dict(lean.items()) == plain
        else:
            assert list(items_from(lean, seq)) == sorted(
                (key, item) for key, item in plain.items() if key >= seq
            )
        assert len(lean) == len(plain)
        assert list(lean) == sorted(plain)
        assert dict(lean.items()) == plain
    assert lean.get(None) is None  # an item never stored (seq None) is held by none
    assert "1" not in lean


@settings(deadline=None, max_examples=200)
@given(st.lists(st.integers(min_value=1, max_value=10**6), unique=True, max_size=30))
def test_history_of_holds_the_same_items_and_keeps_a_sparse_history_as_a_dict(
    seqs: list[int],
) -> None:
    items = {seq: Message(role="user", content=str(seq), seq=seq) for seq in sorted(seqs)}
    history = history_of(items)
    assert dict(history.items()) == items
    assert list(history) == sorted(seqs)
    if seqs and max(seqs) - min(seqs) > 2 * len(seqs) + 64:
        assert type(history) is dict  # a list would hold every missing seq as a hole
    else:
        assert isinstance(history, SeqMap)


@settings(deadline=None, max_examples=40)
@given(st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=6))
def test_recall_indexes_every_item_folded_between_its_calls(batches: list[int]) -> None:
    memory = InMemoryMemory()
    for number, size in enumerate(batches):
        for k in range(size):
            memory.add_user_input(f"note zebra{number}x{k}")
        memory.compact(WindowedCompressor(max_items=1))
        archived = {item.text for item in memory.history()} - {
            item.text for item in memory.snapshot().items
        }
        found = {hit.text for hit in memory.recall("note", limit=1000)}
        assert found == archived  # every folded item, whenever it was stored


def test_a_memory_history_is_by_seq_after_a_restore_and_a_clear() -> None:
    memory = InMemoryMemory()
    memory.add_output_items(
        [FunctionCall(call_id="a", name="t"), FunctionCallOutput(call_id="a", output="x")]
    )
    memory.add_output_items([Message(role="user", content="next")])
    snapshot = memory.snapshot()
    memory.restore(snapshot, history=memory.history())
    assert [item.seq for item in memory.history()] == [1, 2, 3]
    memory.clear()
    memory.add_output_items([Message(role="user", content="after")])
    assert [item.seq for item in memory.history()] == [4]
    assert memory.expand("#4")[0].text == "after"
