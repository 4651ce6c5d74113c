"""What one run of a session shares: its agent's parts, its exclusivity, its accumulators."""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Protocol, cast

from compactkit.errors import ConcurrencyError
from compactkit.items import Message, Tool
from compactkit.items.snapshot import CompactResult
from compactkit.runtime._model import Api, ModelCaller
from compactkit.runtime.events import Event, EventHandler, emit
from compactkit.runtime.governor import GovernedStep, Governor
from compactkit.runtime.result import RunResult, StepRecord, Usage
from compactkit.runtime.tools import FunctionTool
from compactkit.sessions import AgentSession, SessionStore
from compactkit.sessions.lease import FencedMemory, LeasingStore

__all__ = ["AgentLike", "Conforms", "RunState", "exclusive", "leased"]


class AgentLike(Protocol):
    """What a session needs of its agent (``compactkit.runtime.agent.Agent`` has it)."""

    model: str
    api: Api
    instructions: str | tuple[Message, ...] | None
    tools: dict[str, FunctionTool]
    schemas: tuple[Tool, ...]
    governor: Governor
    caller: ModelCaller
    max_steps: int
    store: SessionStore | None
    tool_timeout: float | None
    on_event: EventHandler | None
    lease_timeout: float
    lease_ttl: float


_running_lock = threading.Lock()
_running: set[str] = set()


@contextlib.contextmanager
def exclusive(session_id: str) -> Iterator[None]:
    with _running_lock:
        if session_id in _running:
            raise ConcurrencyError(
                f"session {session_id!r} is already running: two runs of one session would "
                "interleave its memory; wait for the other run to finish, or use another session"
            )
        _running.add(session_id)
    try:
        yield
    finally:
        with _running_lock:
            _running.discard(session_id)


class Conforms:
    """``isinstance(obj, protocol)`` for a runtime-checkable ``protocol``, asked once per object.

    A run asks whether the agent's store leases and whether the session's memory is fenced.
    Python 3.11 answers an ``isinstance`` against a runtime protocol by reading the protocol's
    members and looking each one up on the object: 8 µs when it conforms, 19 µs when it does
    not, three times a run. The answer is kept per object (by identity, held weakly: it goes
    with the object; an object that cannot be weakly referenced is asked every time), so an
    object's own attributes are read at its first run: a store or memory is not expected to
    gain or lose methods after it is first used. ``tests/runtime/test_run_conforms.py`` holds it
    to ``isinstance``.
    """

    def __init__(self, protocol: type) -> None:
        self._protocol = protocol
        self._seen: dict[int, tuple[weakref.ref[object], bool]] = {}

    def __call__(self, obj: object) -> bool:
        key = id(obj)
        found = self._seen.get(key)
        if found is not None and found[0]() is obj:
            return found[1]
        answer = isinstance(obj, self._protocol)
        seen = self._seen

        def forget(_: object) -> None:
            seen.pop(key, None)

        try:
            ref = weakref.ref(obj, forget)
        except TypeError:  # no weak references to it: asked again next time
            return answer
        self._seen[key] = (ref, answer)
        return answer


_leases = Conforms(LeasingStore)
_fenced = Conforms(FencedMemory)


@contextlib.contextmanager
def leased(session: AgentSession, agent: AgentLike) -> Iterator[None]:
    """Hold the session's lease from the agent's store for one run (when the store leases).

    A session object older than the store's last save (another run saved since it was
    loaded) is reloaded first, so a run never continues from — and then saves over — a stale
    state. A memory living where the lease does is fenced by it for the run.
    """
    store = agent.store
    if store is None or not _leases(store):
        yield
        return
    leasing = cast("LeasingStore", store)
    lease = leasing.acquire(session.session_id, timeout=agent.lease_timeout, ttl=agent.lease_ttl)
    memory = session.memory
    fenced = _fenced(memory)
    try:
        if session.revision is not None and lease.revision != session.revision:
            session.reload(store.load(session.session_id))
        session.lease = lease
        if fenced:
            cast("FencedMemory", memory).fence(lease)
        yield
    finally:
        session.lease = None
        if fenced:
            cast("FencedMemory", memory).fence(None)
        leasing.release(lease)


class RunState:
    """What one run accumulates, and where its events go."""

    def __init__(self, session: AgentSession, agent: AgentLike) -> None:
        self.session = session
        self.handler = agent.on_event
        # The governor already logged its events and called its own handler.
        self.forward = agent.on_event is not None and agent.on_event is not agent.governor.on_event
        self.events: list[Event] = []
        self.steps: list[StepRecord] = []
        self.compactions: list[CompactResult] = []
        self.usage = Usage()

    def emit(self, event: Event) -> None:
        self.events.append(emit(event, self.handler))

    def governed(self, step: GovernedStep, pending: list[CompactResult]) -> None:
        self.events.extend(step.events)
        if self.forward:
            assert self.handler is not None
            for event in step.events:
                self.handler(event)
        if step.compaction is not None:
            self.compactions.append(step.compaction)
            pending.append(step.compaction)

    def result(self, output: str) -> RunResult:
        return RunResult(
            session_id=self.session.session_id,
            output=output,
            steps=tuple(self.steps),
            usage=self.usage,
            compactions=tuple(self.compactions),
            events=tuple(self.events),
        )
