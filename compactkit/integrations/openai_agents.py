"""compactkit for the OpenAI Agents SDK (``pip install 'compactkit[openai-agents]'``).

Two hooks, because the SDK gives two (docs/openai-agents.md says which to use):

* ``CompactkitSession`` wraps any session (their ``SQLiteSession`` and the others, or a
  compactkit memory such as ``SQLMemory``). The wrapped store keeps the full history; the
  ``Runner`` reads it through ``get_items``, once per run, as the running summary plus the kept
  items, compacting first when the model's policy says so.
* ``CompactkitInputFilter`` is a ``RunConfig.call_model_input_filter``: it runs before every
  model call, so it is the only hook that keeps each call of a long tool loop inside one run
  under the model's budget. It changes what the model sees, never what is stored.

Both run the shared governance step (``compactkit.runtime.Governor``) on Responses input items,
and pass the items compactkit does not model (``compaction``, hosted tool calls) through
untouched, with a ``PassthroughEvent``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from compactkit.integrations._extras import require

require("agents", extra="openai-agents", integration="compactkit.integrations.openai_agents")

from agents import Agent, FunctionTool, ModelResponse, RunContextWrapper, RunHooks  # noqa: E402
from agents.memory import Session, SessionSettings  # noqa: E402
from agents.run_config import CallModelData, ModelInputData  # noqa: E402

from compactkit.budget.profiles import ProfileRegistry  # noqa: E402
from compactkit.compressors.base import MemoryCompressor  # noqa: E402
from compactkit.errors import ConfigError  # noqa: E402
from compactkit.governance.policy import CompactPolicy  # noqa: E402
from compactkit.integrations._wire import Passthrough, WireConverter  # noqa: E402
from compactkit.integrations.messages import CompactedMessages, MessageCompactor  # noqa: E402
from compactkit.items import Item, Tool  # noqa: E402
from compactkit.items.snapshot import (  # noqa: E402
    MemorySnapshot,
    SummaryRole,
    is_summary_message,
)
from compactkit.memory.base import AgentMemory  # noqa: E402
from compactkit.runtime.events import Event, PassthroughEvent, emit  # noqa: E402
from compactkit.runtime.governor import Governor  # noqa: E402

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

__all__ = ["CompactkitInputFilter", "CompactkitSession"]


def _governor(
    model: str,
    governor: Governor | None,
    *,
    registry: ProfileRegistry | None,
    compaction: bool,
    policy: CompactPolicy | None,
    compressor: MemoryCompressor | None,
    summary_role: SummaryRole | None,
    on_event: Callable[[Event], None] | None,
) -> Governor:
    if governor is not None:
        if not isinstance(governor, Governor):
            raise ConfigError(f"governor must be a Governor, got {type(governor).__name__}")
        if any(o is not None for o in (registry, policy, compressor, summary_role)) or not (
            compaction
        ):
            raise ConfigError(
                "governor= is already configured: do not pass registry=, policy=, "
                "compressor=, summary_role= or compaction= with it"
            )
        return governor
    return Governor.for_model(
        model,
        registry=registry,
        policy=policy,
        compressor=compressor,
        compaction=compaction,
        summary_role=summary_role,
        on_event=on_event,
    )


class CompactkitInputFilter:
    """A ``call_model_input_filter`` that governs every model call of a run.

    Pass it as ``RunConfig(call_model_input_filter=CompactkitInputFilter(model="gpt-4.1"))``.
    Before each call it counts the input, the agent's instructions and its function tools
    exactly; when the model's policy fires it compacts (the summary lives in the filter, the
    session is never changed); then it sends what fits the budget, every call with its output.

    Args:
        model: The model the agent calls (its profile gives the budget and the counter).
        governor: A ready ``Governor`` (shared with a ``CompactkitSession``, say); the options
            below must not be given with it.
        registry: Where to look the model up.
        compaction: ``False``: only project (drop old turns, mask bulky outputs), never
            summarise.
        policy: When to compact and down to what (default: the model's budget policy).
        compressor: What compacts (default: the ``LadderCompressor``, no LLM).
        summary_role: The role of the summary message.
        on_event: Called with every event.

    Each call costs O(new items) while the input extends the previous call's, as it does along
    a run and across runs of one session; one filter per conversation keeps it so (a filter
    shared between conversations stays correct, and re-reads the input when it switches).
    """

    def __init__(
        self,
        model: str,
        *,
        governor: Governor | None = None,
        registry: ProfileRegistry | None = None,
        compaction: bool = True,
        policy: CompactPolicy | None = None,
        compressor: MemoryCompressor | None = None,
        summary_role: SummaryRole | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.governor = _governor(
            model,
            governor,
            registry=registry,
            compaction=compaction,
            policy=policy,
            compressor=compressor,
            summary_role=summary_role,
            on_event=on_event,
        )
        self.model = model
        self._compactor = MessageCompactor(
            model, format="responses", governor=self.governor, on_event=on_event
        )
        self._tools: tuple[tuple[int, ...], list[Any], list[Tool]] | None = None
        self._lock = asyncio.Lock()
        self.last: CompactedMessages | None = None
        """The result of the latest call (what was sent, its tokens, budget and report)."""

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The input to send to the model for this call."""
        model_data = data.model_data
        async with self._lock:
            turn = await self._compactor.acall(
                model_data.input,
                instructions=model_data.instructions or None,
                tools=self._agent_tools(data.agent),
            )
        self.last = turn
        return ModelInputData(input=turn.send, instructions=model_data.instructions)

    def hooks(self) -> RunHooks[Any]:
        """``RunHooks`` that report each response's ``input_tokens`` back to this filter: the
        provider's count calibrates compactkit's (Responses requests are counted with the
        published Chat rules) and feeds the usage trigger. Pass as ``Runner.run(..., hooks=)``."""
        return _UsageHooks(self)

    def observe_usage(self, prompt_tokens: int) -> None:
        """Report the provider's prompt tokens for the latest call this filter governed."""
        if self.last is not None:
            self._compactor.observe_usage(prompt_tokens)

    def _agent_tools(self, agent: Agent[Any]) -> list[Tool]:
        tools = list(getattr(agent, "tools", None) or ())
        key = tuple(id(tool) for tool in tools)
        cached = self._tools
        if cached is not None and cached[0] == key:
            return cached[2]
        converted = [
            Tool(name=t.name, description=t.description or None, parameters=t.params_json_schema)
            for t in tools
            if isinstance(t, FunctionTool)  # hosted tools are sized by the provider
        ]
        self._tools = (key, tools, converted)
        return converted


class _UsageHooks(RunHooks[Any]):
    def __init__(self, owner: CompactkitInputFilter) -> None:
        self._owner = owner

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        tokens = getattr(response.usage, "input_tokens", 0)
        if isinstance(tokens, int) and tokens > 0:
            self._owner.observe_usage(tokens)


class CompactkitSession:
    """A session that keeps the full history in the store it wraps and gives the ``Runner``
    the running summary plus the kept items.

    Args:
        store: Where the history lives: any Agents SDK ``Session`` (``SQLiteSession``, …) or
            a compactkit ``AgentMemory`` (``SQLMemory``, ``InMemoryMemory``).
        model: The model the agent calls.
        session_id: The session's id (default: the store's ``session_id``).
        session_settings: The SDK's ``SessionSettings`` (``limit``: the latest N items, cut
            only where no call is separated from its output).
        governor: A ready ``Governor``; the options below must not be given with it.
        registry: Where to look the model up.
        compaction: ``False``: only project (drop old turns, mask bulky outputs), never
            summarise.
        policy: When to compact and down to what (default: the model's budget policy).
        compressor: What compacts (default: the ``LadderCompressor``, no LLM).
        summary_role: The role of the summary message.
        on_event: Called with every event.

    With an SDK session the summary is held in the process (a new process compacts the full
    history again on its first read; the default ladder does so without an LLM); with a
    compactkit memory it is stored there, beside every original item (``memory.history()``).
    """

    session_settings: SessionSettings | None

    def __init__(
        self,
        store: Session | AgentMemory,
        *,
        model: str,
        session_id: str | None = None,
        session_settings: SessionSettings | None = None,
        governor: Governor | None = None,
        registry: ProfileRegistry | None = None,
        compaction: bool = True,
        policy: CompactPolicy | None = None,
        compressor: MemoryCompressor | None = None,
        summary_role: SummaryRole | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        if isinstance(store, AgentMemory):
            self._memory: AgentMemory | None = store
            self._store: Session | None = None
        elif isinstance(store, Session):
            self._memory, self._store = None, store
        else:
            raise ConfigError(
                f"store must be an Agents SDK Session (SQLiteSession, …) or a compactkit "
                f"memory (SQLMemory, InMemoryMemory), got {type(store).__name__}"
            )
        given_id = session_id or getattr(store, "session_id", None)
        if not isinstance(given_id, str) or not given_id:
            raise ConfigError(
                f"a session needs an id: pass session_id= (the store has none: {given_id!r})"
            )
        self.session_id: str = given_id
        self.session_settings = session_settings or getattr(store, "session_settings", None)
        self.model = model
        self.on_event = on_event
        self.governor = _governor(
            model,
            governor,
            registry=registry,
            compaction=compaction,
            policy=policy,
            compressor=compressor,
            summary_role=summary_role,
            on_event=on_event,
        )
        self._compactor = MessageCompactor(
            model, format="responses", governor=self.governor, on_event=on_event
        )
        self._converter = WireConverter("responses")
        self.last: CompactedMessages | None = None
        """The result of the latest ``get_items`` on an SDK session (tokens, report, events)."""

    @property
    def store(self) -> Session | AgentMemory:
        """The wrapped session or memory, which holds the full history."""
        store = self._memory if self._memory is not None else self._store
        assert store is not None
        return store

    def input_filter(self) -> CompactkitInputFilter:
        """A ``call_model_input_filter`` for this session's model, sharing its governor."""
        return CompactkitInputFilter(self.model, governor=self.governor, on_event=self.on_event)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The summary (when there is one) and the kept items, oldest first; compacts first
        when the policy fires. ``limit`` keeps the latest N items (more when the cut would
        separate a call from its output), after the summary."""
        if self._memory is not None:
            items = await asyncio.to_thread(self._memory_items)
        else:
            assert self._store is not None
            stored = await self._store.get_items()
            turn = await self._compactor.acall(stored)
            self.last = turn
            items = turn.history
        return _latest(items, _limit(limit, self.session_settings))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store new items (the full history keeps every one)."""
        if self._memory is not None:
            await asyncio.to_thread(self._memory_add, list(items))
        else:
            assert self._store is not None
            await self._store.add_items(items)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item."""
        if self._memory is None:
            assert self._store is not None
            return await self._store.pop_item()
        return await asyncio.to_thread(self._memory_pop)

    async def clear_session(self) -> None:
        """Forget the whole history (and the summary)."""
        if self._memory is not None:
            await asyncio.to_thread(self._memory.clear)
        else:
            assert self._store is not None
            await self._store.clear_session()
        self._compactor.reset()

    # -- a compactkit memory as the store --------------------------------------------------

    def _memory_items(self) -> list[Any]:
        memory = self._memory
        assert memory is not None
        self.governor.step(memory)  # compacts (and stores the result) when due
        snapshot = memory.snapshot()
        role = self.governor.projector.summary_role
        _, items = self._converter.from_items(snapshot.render_items(summary_role=role))
        return items

    def _memory_add(self, items: list[Any]) -> None:
        memory = self._memory
        assert memory is not None
        converted: list[Item] = []
        for index, item in enumerate(items):
            converted.extend(self._converter.to_items(item, index, self._warn))
        if converted:
            memory.add_output_items(converted)

    def _memory_pop(self) -> Any:
        memory = self._memory
        assert memory is not None
        snapshot = memory.snapshot()
        if not snapshot.items:
            return None
        last = snapshot.items[-1]
        history = [i for i in getattr(memory, "history", list)() if i.seq != last.seq]
        memory.restore(
            MemorySnapshot(summary=snapshot.summary, items=snapshot.items[:-1]), history=history
        )
        _, popped = self._converter.from_items([last])
        return popped[0] if popped else None

    def _warn(self, passthrough: Passthrough) -> None:
        emit(
            PassthroughEvent(
                index=passthrough.index, reason=passthrough.reason, format="responses"
            ),
            self.on_event,
        )


def _limit(limit: int | None, settings: SessionSettings | None) -> int | None:
    if limit is None and settings is not None:
        limit = settings.limit
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ConfigError(f"limit must be a number of items >= 0 or None, got {limit!r}")
    return limit


def _latest(items: Sequence[Any], limit: int | None) -> list[Any]:
    """The summary message (if any) and the latest ``limit`` items, the cut moved back so
    that no output is kept without its call (nor reasoning without what follows it)."""
    if limit is None or limit >= len(items):
        return list(items)
    converter = WireConverter("responses")
    lead = [item for item in items[:1] if _is_summary(converter, item)]
    body = list(items[len(lead) :])
    cut = max(0, len(body) - limit)
    calls = {_call_id(item): index for index, item in enumerate(body) if _is_call(item)}
    moved = True
    while moved and cut > 0:
        moved = False
        for item in body[cut:]:
            if _is_output(item) and calls.get(_call_id(item), cut) < cut:
                cut = calls[_call_id(item)]
                moved = True
        while cut > 0 and _kind(body[cut - 1]) == "reasoning":
            cut -= 1
    return [*lead, *body[cut:]]


def _kind(item: Any) -> str | None:
    kind = item.get("type") if isinstance(item, dict) else None
    return kind if isinstance(kind, str) else None


def _call_id(item: Any) -> str | None:
    value = item.get("call_id") if isinstance(item, dict) else None
    return value if isinstance(value, str) else None


def _is_call(item: Any) -> bool:
    kind = _kind(item)
    return kind is not None and kind.endswith("_call") and _call_id(item) is not None


def _is_output(item: Any) -> bool:
    kind = _kind(item)
    return kind is not None and kind.endswith("_call_output")


def _is_summary(converter: WireConverter, item: Any) -> bool:
    found: list[Passthrough] = []
    items = converter.to_items(item, 0, found.append)
    return len(items) == 1 and is_summary_message(items[0])
