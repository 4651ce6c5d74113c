"""Session-store rules: save/load/list/delete, copies, hostile and confusable ids, whole
checkpoints and concurrent savers."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from compactkit.errors import ConfigError, StorageError
from compactkit.memory import InMemoryMemory
from compactkit.sessions import SessionNotFoundError, SessionStore
from compactkit.sessions.session import AgentSession, SessionState
from compactkit.testing.conformance._kit import ConformanceFailure, Rule, expect, raises, same
from compactkit.testing.conformance._support import assistant_call, result, texts

HOSTILE_IDS = [
    "a/b",
    "a:b",
    "a_b",
    "../../etc/passwd",
    "..",
    ".",
    ".hidden",
    "über",
    "會話",
    "🙂",
    "CON",
    "con",
    "Abc",
    "abc",
    "%41",
    "A",
    "a\x00b",
    " spaced id ",
    "back\\slash",
    "x" * 80,
]
"""Ids a store must keep apart and round-trip: paths, separators, case, Unicode, a NUL."""

StoreFactory = Callable[[], SessionStore]
"""Makes a fresh, empty store (``list()`` returns ``[]``)."""


@dataclass(frozen=True)
class StoreKit:
    """What a store check gets: the backend's factory and the ids it must round-trip."""

    factory: StoreFactory
    """Makes a fresh, empty store."""
    hostile_ids: list[str] = field(default_factory=lambda: list(HOSTILE_IDS))
    """Ids the store must save, list and load back exactly."""

    def new(self) -> SessionStore:
        """A fresh store, checked to be an empty ``SessionStore``."""
        store = self.factory()
        if not isinstance(store, SessionStore):
            raise ConformanceFailure(
                f"the factory returned {type(store).__name__}, which is not a SessionStore "
                "(save, load, delete, list)"
            )
        listed = store.list()
        if listed != []:
            raise ConformanceFailure(f"the factory's store is not empty: list() is {listed!r}")
        return store


RULES: list[Rule[StoreKit]] = []


def rule(name: str, statement: str, *needs: str) -> Callable[[Callable[[StoreKit], None]], Any]:
    """Register the decorated check as the store rule ``name`` (needing ``needs``)."""

    def register(check: Callable[[StoreKit], None]) -> Callable[[StoreKit], None]:
        RULES.append(Rule(name, statement, check, frozenset(needs)))
        return check

    return register


def session(session_id: str = "s1", *inputs: str, **metadata: Any) -> AgentSession:
    """A session with ``inputs`` as user inputs and ``metadata``."""
    made = AgentSession(session_id=session_id, metadata=metadata)
    for text in inputs:
        made.memory.add_user_input(text)
    return made


@rule(
    "save-load-list-delete",
    "save() then load() returns the state; list() returns the saved ids sorted; delete() "
    "returns True once, then False.",
)
def _save_load_list_delete(kit: StoreKit) -> None:
    store = kit.new()
    store.save(session("b", "hello", owner="ada"))
    store.save(session("a"))
    same(store.list(), ["a", "b"], "list() after saving b then a")
    state = store.load("b")
    expect(isinstance(state, SessionState), f"load() returned {type(state).__name__}")
    same(state.metadata, {"owner": "ada"}, "metadata loaded")
    same(texts(state.memory.items), ["hello"], "items loaded")
    same(store.delete("b"), True, "delete() of a saved session")
    same(store.delete("b"), False, "delete() of a deleted session")
    same(store.list(), ["a"], "list() after delete")
    with raises(SessionNotFoundError, doing="load() of a deleted session"):
        store.load("b")


@rule(
    "unknown-session-is-a-clear-error",
    "load() of an id never saved raises SessionNotFoundError (a StorageError and a KeyError) "
    "naming the id.",
)
def _unknown_session_is_a_clear_error(kit: StoreKit) -> None:
    store = kit.new()
    try:
        store.load("ghost")
    except SessionNotFoundError as exc:
        expect("no saved session with id 'ghost'" in str(exc), f"the message {exc} names no id")
        expect(isinstance(exc, KeyError) and isinstance(exc, StorageError), "wrong error tree")
        same(exc.session_id, "ghost", "SessionNotFoundError.session_id")
    except Exception as exc:
        raise ConformanceFailure(
            f"load('ghost') should raise SessionNotFoundError; it raised "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    else:
        raise ConformanceFailure("load('ghost') should raise SessionNotFoundError; it returned")


@rule(
    "a-save-replaces-and-is-a-copy",
    "A save replaces the earlier state; a saved state is a copy that later writes to the live "
    "session do not change.",
)
def _a_save_replaces_and_is_a_copy(kit: StoreKit) -> None:
    store = kit.new()
    live = session("s1", "one")
    store.save(live)
    live.memory.add_user_input("two")
    live.turn = 1
    same(len(store.load("s1").memory.items), 1, "items loaded after writing to the live session")
    store.save(live)
    state = store.load("s1")
    same((len(state.memory.items), state.turn), (2, 1), "(items, turn) after the second save")


@rule(
    "hostile-ids-round-trip",
    "Ids with slashes, dots, separators, case, Unicode or NUL are saved apart, listed as "
    "given and loaded back exactly.",
)
def _hostile_ids_round_trip(kit: StoreKit) -> None:
    store = kit.new()
    for session_id in kit.hostile_ids:
        store.save(session(session_id, session_id))
    same(store.list(), sorted(kit.hostile_ids), "list() of the hostile ids")
    for session_id in kit.hostile_ids:
        state = store.load(session_id)
        same(state.session_id, session_id, f"session_id loaded for {session_id!r}")
        same(texts(state.memory.items), [session_id], f"items loaded for {session_id!r}")


@rule(
    "saved-sessions-never-share-state",
    "Saving or deleting one id never changes another, even one that differs by a suffix, a "
    "separator or case.",
)
def _saved_sessions_never_share_state(kit: StoreKit) -> None:
    store = kit.new()
    base = f"iso-{uuid.uuid4().hex[:8]}"
    ids = [base, f"{base}:state", f"{base}:", f"{base}/x", base.upper()]
    for session_id in ids:
        store.save(session(session_id, f"hello {session_id}"))
    store.delete(ids[1])
    store.save(session(ids[2], "replaced"))
    same(store.list(), sorted(i for i in ids if i != ids[1]), "list() after a delete")
    for session_id in ids[:1] + ids[3:]:
        loaded = texts(store.load(session_id).memory.items)
        same(loaded, [f"hello {session_id}"], f"items of {session_id!r}")
    same(texts(store.load(ids[2]).memory.items), ["replaced"], f"items of {ids[2]!r}")


@rule(
    "a-checkpoint-round-trips-whole",
    "A loaded state resumes the session exactly: turn, step, metadata, summary, active items "
    "(masked ones included), pins, archived history and call ids.",
)
def _a_checkpoint_round_trips_whole(kit: StoreKit) -> None:
    store = kit.new()
    live = AgentSession(session_id="whole", turn=3, step=7, metadata={"user": {"name": "ada"}})
    memory = live.memory
    memory.add_output_items([assistant_call("c1")])
    memory.add_tool_output("c1", "long output")
    memory.add_user_input("next")
    memory.pin(3)
    snapshot = memory.snapshot()
    masked = snapshot.items[1].model_copy(update={"output": "[masked]"})
    memory.apply(result(snapshot, [masked, snapshot.items[2]], summary="called ls"))
    store.save(live)
    resumed = AgentSession.from_state(store.load("whole"), InMemoryMemory())
    same((resumed.turn, resumed.step), (3, 7), "(turn, step) resumed")
    same(resumed.metadata, {"user": {"name": "ada"}}, "metadata resumed")
    same(resumed.memory.items, memory.items, "items resumed (summary, masked output, pin)")
    same(resumed.memory.history(), memory.history(), "history() resumed (archived call)")
    with raises(ConfigError, match="already has an output", doing="answering c1 after resume"):
        resumed.memory.add_tool_output("c1", "again")


_LOADS = 100
"""Loads the tearing rule makes while two threads save (at least)."""


@rule(
    "concurrent-saves-never-tear",
    "While two threads save different states of one session, every load returns one of them "
    "whole, and the last save wins.",
)
def _concurrent_saves_never_tear(kit: StoreKit) -> None:
    store = kit.new()
    sessions = [session("torn", *(f"{t}-{n}" for n in range(t * 5 + 3))) for t in range(2)]
    for live in sessions:
        live.metadata["writer"] = len(live.memory.items)
    store.save(sessions[0])
    errors: list[BaseException] = []
    torn: list[str] = []
    enough = threading.Event()  # the reader has loaded _LOADS times: the writers may stop

    def save(t: int) -> None:
        try:
            saves = 0
            while saves < 15 or not enough.is_set():
                store.save(sessions[t])
                saves += 1
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(t,)) for t in range(2)]
    for thread in threads:
        thread.start()
    # (the writers go on until the reader has loaded often enough: on a busy machine a fixed
    # number of saves can end before the reader ever runs between two of them)
    loads = 0
    while not enough.is_set() or any(thread.is_alive() for thread in threads):
        state = store.load("torn")
        if state.metadata.get("writer") != len(state.memory.items):
            torn.append(f"metadata says {state.metadata} but {len(state.memory.items)} items")
        loads += 1
        if loads >= _LOADS or errors:
            enough.set()
    for thread in threads:
        thread.join()
    if errors:
        raise ConformanceFailure(f"a concurrent save failed: {errors[0]!r}") from errors[0]
    expect(not torn, f"a load returned a torn state: {torn[0] if torn else ''}")
    store.save(sessions[1])
    same(len(store.load("torn").memory.items), 8, "items after the last save")
