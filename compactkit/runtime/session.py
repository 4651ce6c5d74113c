"""``RunnableSession``: an ``AgentSession`` bound to an ``Agent``, with the run loop.

One run (``run(input)`` / ``await arun(input)``) is the seed's chain::

    settle calls left without output (a crash between a call and its output)
    add the user input
    repeat: govern (compact if due, project) → call the model → add its output items
            → run its tool calls → add their outputs
    until a reply without calls (the answer) or max_steps (MaxStepsError)

Governance runs before every model call, so a long tool-heavy turn is governed too. The state is
saved to the agent's store (when it has one) once per step, so a crash loses at most the step in
flight and ``agent.resume(session_id)`` continues; a call whose output was never written is
re-run (tools marked ``rerun_on_resume``) or answered with an error output saying so, never left
dangling in the next prompt. The saves: the user input; each model reply, before its tools run
(so a crash inside a tool is known); and each step's tool outputs — at once when any of its tools
is not ``rerun_on_resume``, else with the next save (the next reply, or the run's end, whatever
ends it): a crash before then re-runs those calls on resume, which is what the tools declared
safe, and a durable store pays one commit per step instead of two. Two runs of one session at once are refused with
``ConcurrencyError`` in one process; across processes a run holds the session's lease from a
store that leases (file, SQL): a second run waits up to the agent's ``lease_timeout`` and then
raises ``SessionBusyError``, and a run whose session object is older than the store's last save
reloads it first.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, TypeAlias

from compactkit.errors import (
    ConfigError,
    ContextOverflowError,
    MaxStepsError,
    ModelError,
)
from compactkit.items import ContentPart, FunctionCall, FunctionCallOutput, Item, Message
from compactkit.items.snapshot import CompactResult
from compactkit.memory import AgentMemory
from compactkit.runtime._model import ModelReply, renamed_calls
from compactkit.runtime._run import AgentLike, RunState, exclusive, leased
from compactkit.runtime._wire import WireCache
from compactkit.runtime.events import (
    ModelCallEvent,
    OverflowEvent,
    PendingCallEvent,
    ToolCallEvent,
)
from compactkit.runtime.governor import GovernedStep
from compactkit.runtime.result import RunResult, StepRecord
from compactkit.runtime.tools import ToolOutcome, arun_call, interrupted, run_call
from compactkit.sessions import AgentSession

__all__ = ["RunnableSession"]

UserInput: TypeAlias = str | Message | Sequence[ContentPart]
"""A user turn: text, a ``Message`` or content parts."""


class RunnableSession(AgentSession):
    """A session of an ``Agent``: its memory, counters and metadata, and ``run``/``arun``.

    Make one with ``agent.new_session()`` or ``agent.resume(session_id)``.
    """

    def __init__(self, agent: AgentLike, memory: AgentMemory | None = None, **options: Any) -> None:
        super().__init__(memory, **options)
        self._agent = agent
        tools_for = getattr(agent, "tools_for", None)  # an AgentLike without recall tools
        self._tools = agent.tools if tools_for is None else tools_for(self.memory)
        self._wire = WireCache()  # this conversation's last prompt, for incremental conversion
        self._unsaved = False  # tool outputs waiting for the next save (see _record_outputs)

    @classmethod
    def bind(cls, agent: AgentLike, session: AgentSession) -> RunnableSession:
        """``session`` (same id, memory, counters and store revision) bound to ``agent``."""
        bound = cls(
            agent,
            session.memory,
            session_id=session.session_id,
            turn=session.turn,
            step=session.step,
            metadata=session.metadata,
            created_at=session.created_at,
        )
        bound.revision = session.revision
        bound.fenced_by_revision = session.fenced_by_revision
        return bound

    @property
    def agent(self) -> AgentLike:
        """The agent this session runs with."""
        return self._agent

    def save(self) -> None:
        """Save the session to the agent's store (nothing without a store)."""
        if self._agent.store is not None:
            self._agent.store.save(self)
        self._unsaved = False

    def _save_last(self) -> None:
        """The run's last save (its answer): with a store that can, it gives the run's lease
        back in the same write (``SQLSessionStore.save_and_release``: one commit less a run)."""
        store = self._agent.store
        save_and_release = getattr(store, "save_and_release", None)
        if save_and_release is None or self.lease is None:
            self.save()
            return
        save_and_release(self)
        self._unsaved = False

    @contextlib.contextmanager
    def _saving_at_the_end(self) -> Iterator[None]:
        """Save tool outputs still waiting for a save when the run ends, however it ends.

        On an error the save is best effort: what waits is only outputs of tools that are safe
        to re-run, which a resumed run re-runs, so the run's own error is the one raised.
        """
        try:
            yield
        except BaseException:
            if self._unsaved:
                with contextlib.suppress(Exception):
                    self.save()
            raise
        if self._unsaved:
            self.save()

    @contextlib.asynccontextmanager
    async def _asaving_at_the_end(self) -> AsyncIterator[None]:
        """``_saving_at_the_end`` for ``arun`` (the save in a worker thread)."""
        try:
            yield
        except BaseException:
            if self._unsaved:
                with contextlib.suppress(Exception):
                    await asyncio.to_thread(self.save)
            raise
        if self._unsaved:
            await asyncio.to_thread(self.save)

    # -- the sync loop -----------------------------------------------------------------------

    def run(self, input: UserInput | None = None, *, max_steps: int | None = None) -> RunResult:
        """Run until the model answers without tool calls.

        Args:
            input: The user's turn (text, a ``Message`` or content parts); ``None`` continues
                the session as it is (after a ``MaxStepsError`` or a crash).
            max_steps: Model calls allowed in this run (default: the agent's ``max_steps``).

        Raises:
            MaxStepsError: ``max_steps`` calls without a final answer (every recorded call has
                its output; ``run(None)`` continues).
            ContextOverflowError: the provider refused the prompt as too long even after a
                forced compaction (the memory keeps every item).
            ModelError: the model call failed after its retries (the session can be resumed).
            ConcurrencyError: this session is already running.
            BudgetError: what may never be dropped does not fit the model's budget.
        """
        limit = self._limit(max_steps)
        agent = self._agent
        with exclusive(self.session_id), leased(self, agent), self._saving_at_the_end():
            run = RunState(self, self._agent)
            self._settle(
                run,
                [
                    run_call(c, self._tools, agent.tool_timeout) if r else None
                    for c, r in self._pending()
                ],
            )
            self._start(input)
            for _ in range(limit):
                number = self.step + 1
                compactions: list[CompactResult] = []
                governed = agent.governor.step(
                    self.memory, instructions=agent.instructions, tools=agent.schemas
                )
                run.governed(governed, compactions)
                started = time.perf_counter()
                try:
                    reply = self._call(run, governed, number, started)
                except ContextOverflowError as exc:
                    governed = self._recover(run, governed, exc, number)
                    run.governed(governed, compactions)
                    reply = self._call(run, governed, number, started, retried=exc)
                calls = self._record_reply(run, governed, reply, number, started)
                outcomes = [run_call(call, self._tools, agent.tool_timeout) for call in calls]
                self._record_outputs(run, reply, calls, outcomes, number, governed, compactions)
                if not calls:
                    return run.result(reply.text)
            raise self._max_steps(run, limit)

    # -- the async loop ----------------------------------------------------------------------

    async def arun(
        self, input: UserInput | None = None, *, max_steps: int | None = None
    ) -> RunResult:
        """``run`` for async code: parallel tool calls run concurrently (recorded in call
        order), sync tools and storage in worker threads, never on the event loop."""
        limit = self._limit(max_steps)
        agent = self._agent
        with exclusive(self.session_id), leased(self, agent):
            async with self._asaving_at_the_end():
                return await self._arun(limit, input)

    async def _arun(self, limit: int, input: UserInput | None) -> RunResult:
        """``arun``'s loop, under the run's exclusivity, lease and last save."""
        agent = self._agent
        run = RunState(self, self._agent)
        pending = await asyncio.to_thread(self._pending)
        reruns = await asyncio.gather(
            *(arun_call(c, self._tools, agent.tool_timeout) if r else _none() for c, r in pending)
        )
        await asyncio.to_thread(self._settle, run, list(reruns))
        await asyncio.to_thread(self._start, input)
        for _ in range(limit):
            number = self.step + 1
            compactions: list[CompactResult] = []
            governed = await agent.governor.astep(
                self.memory, instructions=agent.instructions, tools=agent.schemas
            )
            run.governed(governed, compactions)
            started = time.perf_counter()
            try:
                reply = await self._acall(run, governed, number, started)
            except ContextOverflowError as exc:
                governed = await self._arecover(run, governed, exc, number)
                run.governed(governed, compactions)
                reply = await self._acall(run, governed, number, started, retried=exc)
            calls = await asyncio.to_thread(
                self._record_reply, run, governed, reply, number, started
            )
            outcomes = await asyncio.gather(
                *(arun_call(call, self._tools, agent.tool_timeout) for call in calls)
            )
            await asyncio.to_thread(
                self._record_outputs,
                run,
                reply,
                calls,
                list(outcomes),
                number,
                governed,
                compactions,
            )
            if not calls:
                return run.result(reply.text)
        raise self._max_steps(run, limit)

    # -- steps shared by both loops ------------------------------------------------------------

    def _limit(self, max_steps: int | None) -> int:
        limit = self._agent.max_steps if max_steps is None else max_steps
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigError(f"max_steps must be a positive int, got {limit!r}")
        return limit

    def _start(self, input: UserInput | None) -> None:
        if input is None:
            if not self.memory.snapshot().items:
                raise ConfigError(
                    "run(None) continues a session, and this one is empty: pass the user's input"
                )
            return
        self.memory.add_user_input(input)
        self.turn += 1
        self.save()

    def _pending(self) -> list[tuple[FunctionCall, bool]]:
        """Calls at the end of the memory without an output, and whether to re-run each."""
        answered: set[str] = set()
        pending: list[FunctionCall] = []
        for item in reversed(self.memory.snapshot().items):
            if isinstance(item, FunctionCallOutput):
                answered.add(item.call_id)
            elif isinstance(item, FunctionCall):
                if item.call_id not in answered:
                    pending.append(item)
            elif isinstance(item, Message):
                break
        tools = self._tools
        return [
            (call, call.name in tools and tools[call.name].rerun_on_resume)
            for call in reversed(pending)
        ]

    def _settle(self, run: RunState, reruns: Sequence[ToolOutcome | None]) -> None:
        pending = self._pending()
        for (call, rerun), outcome in zip(pending, reruns, strict=True):
            if outcome is None:
                outcome = interrupted(call)
            self.memory.add_tool_output(
                call.call_id, outcome.output, name=call.name, is_error=outcome.is_error
            )
            run.emit(PendingCallEvent(call.call_id, call.name, "rerun" if rerun else "reported"))
        if pending:
            self.save()

    def _call(
        self,
        run: RunState,
        governed: GovernedStep,
        number: int,
        started: float,
        retried: ContextOverflowError | None = None,
    ) -> ModelReply:
        agent = self._agent
        try:
            return agent.caller.call(governed.items, agent.schemas, number, run.emit, self._wire)
        except ModelError as exc:
            raise self._failed(run, governed, exc, number, started, retried) from exc

    async def _acall(
        self,
        run: RunState,
        governed: GovernedStep,
        number: int,
        started: float,
        retried: ContextOverflowError | None = None,
    ) -> ModelReply:
        agent = self._agent
        try:
            return await agent.caller.acall(
                governed.items, agent.schemas, number, run.emit, self._wire
            )
        except ModelError as exc:
            raise self._failed(run, governed, exc, number, started, retried) from exc

    def _failed(
        self,
        run: RunState,
        governed: GovernedStep,
        exc: ModelError,
        number: int,
        started: float,
        retried: ContextOverflowError | None,
    ) -> ModelError:
        agent = self._agent
        if isinstance(exc, ContextOverflowError) and retried is None:
            return exc  # the caller recovers from the first overflow
        run.emit(
            ModelCallEvent(
                step=number,
                model=agent.model,
                api=agent.api,
                attempts=exc.attempts,
                duration_s=time.perf_counter() - started,
                error=str(exc),
            )
        )
        if isinstance(exc, ContextOverflowError):
            return ContextOverflowError(
                f"the prompt is still too long for {agent.model!r} after a forced compaction "
                f"({governed.projection.tokens:,} tokens by the local count): {exc}. Nothing "
                "was lost; lower the budget (a smaller profile or policy target) or shorten "
                "the instructions and tool schemas",
                status=exc.status,
                reported_tokens=exc.reported_tokens,
                projected_tokens=governed.projection.tokens,
            )
        return exc

    def _overflowed(
        self, run: RunState, governed: GovernedStep, exc: ContextOverflowError, number: int
    ) -> None:
        run.emit(OverflowEvent(number, str(exc), governed.projection.tokens, exc.reported_tokens))
        self._agent.governor.observe_overflow(governed.projection, exc.reported_tokens)

    def _recover(
        self, run: RunState, governed: GovernedStep, exc: ContextOverflowError, number: int
    ) -> GovernedStep:
        self._overflowed(run, governed, exc, number)
        agent = self._agent
        return agent.governor.step(
            self.memory, instructions=agent.instructions, tools=agent.schemas, force=True
        )

    async def _arecover(
        self, run: RunState, governed: GovernedStep, exc: ContextOverflowError, number: int
    ) -> GovernedStep:
        self._overflowed(run, governed, exc, number)
        agent = self._agent
        return await agent.governor.astep(
            self.memory, instructions=agent.instructions, tools=agent.schemas, force=True
        )

    def _record_reply(
        self, run: RunState, governed: GovernedStep, reply: ModelReply, number: int, started: float
    ) -> tuple[FunctionCall, ...]:
        """Store the reply (renaming call ids the memory already holds) and report the call."""
        agent = self._agent
        if reply.reported and reply.usage.prompt_tokens > 0:
            agent.governor.observe_usage(reply.usage.prompt_tokens, governed.projection)
        run.usage += reply.usage
        items: Sequence[Item] = reply.items
        try:
            self.memory.add_output_items(items)
        except ConfigError as exc:
            if "already" not in str(exc):
                raise
            items = renamed_calls(items, number)  # a server that reuses ids ("call_0" every turn)
            self.memory.add_output_items(items)
        self.step = number
        calls = tuple(item for item in items if isinstance(item, FunctionCall))
        if calls:
            self.save()
        else:
            self._save_last()
        run.emit(
            ModelCallEvent(
                step=number,
                model=agent.model,
                api=agent.api,
                prompt_tokens=reply.usage.prompt_tokens if reply.reported else None,
                completion_tokens=reply.usage.completion_tokens if reply.reported else None,
                cached_tokens=reply.usage.cached_tokens if reply.reported else None,
                tool_calls=len(calls),
                attempts=reply.attempts,
                duration_s=time.perf_counter() - started,
            )
        )
        return calls

    def _record_outputs(
        self,
        run: RunState,
        reply: ModelReply,
        calls: Sequence[FunctionCall],
        outcomes: Sequence[ToolOutcome],
        number: int,
        governed: GovernedStep,
        compactions: Sequence[CompactResult],
    ) -> None:
        for call, outcome in zip(calls, outcomes, strict=True):
            self.memory.add_tool_output(
                call.call_id, outcome.output, name=call.name, is_error=outcome.is_error
            )
            run.emit(
                ToolCallEvent(
                    step=number,
                    name=call.name,
                    call_id=call.call_id,
                    is_error=outcome.is_error,
                    error=outcome.output if outcome.is_error else None,
                    duration_s=outcome.duration_s,
                )
            )
        if calls:
            tools = self._tools
            if all(call.name in tools and tools[call.name].rerun_on_resume for call in calls):
                # Safe to re-run: these outputs ride the next save (the next reply's, or the
                # run's last), one commit per step; a crash before it re-runs the calls.
                self._unsaved = True
            else:  # a call's effect must not be lost or repeated: its output is saved now
                self.save()
        run.steps.append(
            StepRecord(
                step=number,
                prompt_tokens=governed.projection.tokens,
                usage=reply.usage,
                text=reply.text,
                calls=tuple(calls),
                outputs=tuple(outcomes),
                compactions=tuple(compactions),
            )
        )

    def _max_steps(self, run: RunState, limit: int) -> MaxStepsError:
        return MaxStepsError(
            f"session {self.session_id!r} made {limit} model calls without a final answer "
            f"(max_steps={limit}); every call has its output, so session.run(None) continues "
            "it, or raise max_steps",
            steps=limit,
            result=run.result(""),
        )


async def _none() -> None:
    """A pending call that is not re-run: reported as interrupted by ``_settle``."""
    return None
