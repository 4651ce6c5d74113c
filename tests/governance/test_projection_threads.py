"""One session projected from several threads at once (two requests of one conversation on a
web server): each projection measures the history's groups into sums its index shares, so
threads projecting one history take turns; other sessions are never held up by them."""

from __future__ import annotations

import random
import sys
import threading
import time

from compactkit.budget.tokens import TiktokenCounter
from compactkit.errors import BudgetError, ConfigError
from compactkit.governance.projector import ContextProjector, Projection
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Reasoning
from compactkit.items.snapshot import MemorySnapshot
from compactkit.memory.in_memory import InMemoryMemory

COUNTER = TiktokenCounter("o200k_base")


def history(turns: int, tag: str, seed: int = 0) -> list[Item]:
    """A tool loop of ``turns`` turns, with outputs of random size."""
    rng = random.Random(seed)
    items: list[Item] = [Message(role="user", content=f"{tag}: fix the failing build")]
    for n in range(turns):
        call_id = f"{tag}{n}"
        items.append(FunctionCall(call_id=call_id, name="bash", arguments='{"command": "make"}'))
        output = " ".join(f"{tag}line{n}x{k}" for k in range(rng.randrange(5, 400)))
        items.append(FunctionCallOutput(call_id=call_id, output=output))
        if n % 5 == 4:
            items.append(Message(role="user", content=f"{tag}: keep going, turn {n}"))
    return items


def test_a_projection_holds_its_history_until_it_ends() -> None:
    projector = ContextProjector(COUNTER, budget=3_000, cache_aware=False)
    items = history(30, "a")
    short, grown = MemorySnapshot(items=tuple(items[:40])), MemorySnapshot(items=tuple(items))
    done = threading.Event()

    def project_grown() -> None:
        projector.project(grown)
        done.set()

    with projector._memo.held_view(short.items):
        other = threading.Thread(target=project_grown)
        other.start()
        other.join(timeout=1.0)
        assert not done.is_set()  # it waits for the projection of the same history
        # another session goes on meanwhile
        projector.project(MemorySnapshot(items=tuple(history(10, "b"))))
    other.join()
    assert done.is_set()


def agent_batches(seed: int, count: int) -> list[list[Item]]:
    """``count`` batches of what an agent appends in a turn: messages, reasoning, parallel
    calls answered in any order, outputs of calls answered before and of no call at all."""
    rng = random.Random(seed)
    batches: list[list[Item]] = []
    open_calls: list[str] = []
    every: list[str] = []
    for n in range(count):
        batch: list[Item] = []
        for k in range(rng.randint(1, 4)):
            roll, key = rng.random(), f"{n}x{k}"
            if roll < 0.12:
                batch.append(Message(role="user", content=f"u{key} " * rng.randint(1, 60)))
            elif roll < 0.22:
                batch.append(Message(role="assistant", content=f"a{key} " * rng.randint(1, 40)))
            elif roll < 0.28:
                batch.append(Reasoning(format="responses", payload={"id": f"r{key}"}))
            elif roll < 0.50:
                open_calls.append(f"c{key}")
                every.append(f"c{key}")
                batch.append(FunctionCall(call_id=f"c{key}", name="read", arguments="{}"))
            elif roll < 0.85 and open_calls:
                call_id = open_calls.pop(rng.randrange(len(open_calls)))
                text = f"{call_id} " * rng.randint(1, 400)
                batch.append(FunctionCallOutput(call_id=call_id, output=text))
            elif roll < 0.92 and every:
                call_id = rng.choice(every)
                batch.append(FunctionCallOutput(call_id=call_id, output=f"{call_id} again"))
            else:
                batch.append(FunctionCallOutput(call_id=f"gone{key}", output="stray"))
        batches.append(batch)
    return batches


def test_threads_projecting_one_growing_history_answer_as_one_thread_would() -> None:
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often: the shared sums are read mid-update
    try:
        for seed, budget in enumerate((1_200, 3_000, 20_000)):
            _project_while_growing(agent_batches(seed, 200), budget)
    finally:
        sys.setswitchinterval(switch)


def _project_while_growing(batches: list[list[Item]], budget: int) -> None:
    """Three threads project a memory's snapshots while a fourth appends to it; each prompt
    is the one a projector of its own makes of the same items."""
    shared = ContextProjector(COUNTER, budget=budget, mask_threshold=100, cache_aware=False)
    alone = ContextProjector(COUNTER, budget=budget, mask_threshold=100, cache_aware=False)
    memory = InMemoryMemory(accept_unknown_call_ids=True)
    memory.add_read_items([Message(role="user", content="fix the build"), *batches[0]])
    stop = threading.Event()
    seen: list[tuple[MemorySnapshot, Projection]] = []
    failures: list[BaseException] = []

    def reader() -> None:
        try:
            for _ in range(400):  # (bounded: the writer may be slow to get the interpreter)
                if stop.is_set():
                    break
                snapshot = memory.snapshot()
                try:
                    seen.append((snapshot, shared.project(snapshot)))
                except BudgetError:
                    continue
        except BaseException as error:  # reported below
            failures.append(error)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for thread in readers:
        thread.start()
    for batch in batches[1:]:
        try:
            memory.add_read_items(batch)
        except ConfigError:  # a second output of one call: the memory refuses the batch whole
            continue
        projected = len(seen)
        while len(seen) == projected and any(t.is_alive() for t in readers):
            time.sleep(0)  # each history is projected before it grows again
    stop.set()
    for thread in readers:
        thread.join()
    assert not failures, repr(failures[0])
    for snapshot, got in seen[:: max(1, len(seen) // 100)]:
        expected = alone.project(snapshot.model_copy(update={"items": tuple(snapshot.items)}))
        assert list(got.items) == list(expected.items) and got.tokens == expected.tokens
