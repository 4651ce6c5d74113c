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
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from compactkit.integrations._extras import require

require("agents", extra="openai-agents", integration="compactkit.integrations.openai_agents")

from agents import (  # noqa: E402
    RunContextWrapper,
)
from agents.memory import Session, SessionSettings  # noqa: E402
from agents.memory.session_settings import coerce_session_settings  # noqa: E402

from compactkit.budget.profiles import ProfileRegistry  # noqa: E402
from compactkit.compressors.base import CompressorLike  # noqa: E402
from compactkit.errors import ConfigError, StorageError  # noqa: E402
from compactkit.governance.policy import CompactPolicy, TriggerLike  # noqa: E402
from compactkit.integrations._agents_filter import (  # noqa: E402
    SHARED_OPTIONS,
    CompactkitInputFilter,
    governor_for,
)
from compactkit.integrations._agents_recall import agents_recall_tools  # noqa: E402
from compactkit.integrations._responses_history import (  # noqa: E402
    WireRestorer,
    keep_wire,
    latest_items,
    require_json,
)
from compactkit.integrations._wire import Passthrough, WireConverter  # noqa: E402
from compactkit.integrations.messages import CompactedMessages, MessageCompactor  # noqa: E402
from compactkit.items import Item  # noqa: E402
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

__all__ = ["CompactkitInputFilter", "CompactkitSession", "agents_recall_tools"]


class CompactkitSession:
    """A session that keeps the full history in the store it wraps and gives the ``Runner``
    the running summary plus the kept items.

    Args:
        store: Where the history lives: any Agents SDK ``Session`` (``SQLiteSession``, …) or
            a compactkit ``AgentMemory`` (``SQLMemory``, ``InMemoryMemory``).
        model: The model the agent calls.
        session_id: The session's id (default: the store's ``session_id``).
        session_settings: The SDK's ``SessionSettings``, or a dict of its fields (``limit``:
            the latest N items); default: the store's, else ``SessionSettings()``.
        limit_keeps_groups: ``False`` (default, the SDK's contract): ``get_items(limit=N)``
            returns at most N items, the summary counted, and the ``Runner`` drops an output
            whose call was cut. ``True``: the summary plus the latest N items, the cut moved
            back so no output comes without its call (more than N may come back).
        governor: A ready ``Governor``; the options below must not be given with it.
        budget: The usable input budget in tokens (default: the model profile's); it sizes
            both the projection and the compaction policy.
        trigger: When to compact (tokens, a share of the budget, or a trigger).
        target: Down to what (tokens or a share); without it a ``trigger`` gets one below it.
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
    Every history method takes the ``wrapper=`` the ``Runner`` passes to sessions that accept
    it, and hands it on to a wrapped SDK session that accepts it too.

    Raises:
        TypeError: ``session_settings`` names a field ``SessionSettings`` does not have (as
            the SDK's sessions do).
    """

    session_settings: SessionSettings

    def __init__(
        self,
        store: Session | AgentMemory,
        *,
        model: str,
        session_id: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        governor: Governor | None = None,
        budget: int | None = None,
        trigger: TriggerLike | int | float | None = None,
        target: int | float | None = None,
        registry: ProfileRegistry | None = None,
        compaction: bool = True,
        policy: CompactPolicy | None = None,
        compressor: CompressorLike | None = None,
        summary_role: SummaryRole | None = None,
        on_event: Callable[[Event], None] | None = None,
        limit_keeps_groups: bool = False,
        **unknown: object,
    ) -> None:
        if unknown:
            raise ConfigError.unknown_options(
                "CompactkitSession",
                unknown,
                [*SHARED_OPTIONS, "session_id", "session_settings", "limit_keeps_groups"],
            )
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
        settings = session_settings
        if settings is None:
            settings = getattr(store, "session_settings", None)
        if settings is None:
            self.session_settings = SessionSettings()
        else:  # a dict as the SDK takes it; unknown fields are its TypeError
            plain = dict(settings) if isinstance(settings, Mapping) else settings
            self.session_settings = coerce_session_settings(plain)
        self.limit_keeps_groups = bool(limit_keeps_groups)
        self._closed = False
        self.model = model
        self.on_event = on_event
        self.governor = governor_for(
            model,
            governor,
            budget=budget,
            trigger=trigger,
            target=target,
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
        self._originals = WireRestorer()
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

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        """The summary (when there is one) and the kept items, oldest first; compacts first
        when the policy fires. ``limit`` (default: ``session_settings.limit``) keeps the latest
        N items (see ``limit_keeps_groups``)."""
        if self._memory is not None:
            self._check_open()
            items = await asyncio.to_thread(self._memory_items)
        else:
            assert self._store is not None
            stored = await _call(self._store.get_items, wrapper)
            turn = await self._compactor.acall(stored)
            self.last = turn
            items = turn.history
        return latest_items(
            items,
            _limit(limit, self.session_settings),
            keep_groups=self.limit_keeps_groups,
            is_summary=self._is_summary,
        )

    async def add_items(
        self, items: list[TResponseInputItem], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        """Store new items (the full history keeps every one).

        Raises:
            TypeError: an item is not JSON (nothing of the call is stored).
            FormatError: with a compactkit memory as the store, two calls share one id before
                an output, or a call is answered twice (nothing of the call is stored, and the
                next call reads its items as if this one never came).
        """
        if self._memory is not None:
            self._check_open()
            require_json(items)
            await asyncio.to_thread(self._memory_add, list(items))
        else:
            assert self._store is not None
            await _call(self._store.add_items, wrapper, items)

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        """Remove and return the latest item."""
        if self._memory is None:
            assert self._store is not None
            return await _call(self._store.pop_item, wrapper)  # type: ignore[no-any-return]
        self._check_open()
        return await asyncio.to_thread(self._memory_pop)

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Forget the whole history (and the summary)."""
        if self._memory is not None:
            self._check_open()
            await asyncio.to_thread(self._memory.clear)
        else:
            assert self._store is not None
            await _call(self._store.clear_session, wrapper)
        self._compactor.reset()

    def close(self) -> None:
        """Close the wrapped store when it can be closed (``SQLiteSession.close``, an
        ``SQLMemory``'s connections); the session is unusable afterwards. Idempotent."""
        self._closed = True
        close = getattr(self.store, "close", None)
        if callable(close):
            close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"CompactkitSession {self.session_id!r} is closed")

    @staticmethod
    def _read_one(raw: Any) -> Item | None:
        found: list[Passthrough] = []
        items = WireConverter("responses").to_items(raw, 0, found.append)
        return items[0] if len(items) == 1 and not found else None

    def _is_summary(self, item: Any) -> bool:
        found: list[Passthrough] = []
        converter = WireConverter("responses")  # a probe: the session's own keeps call state
        items = converter.to_items(item, 0, found.append) if isinstance(item, dict) else []
        return len(items) == 1 and is_summary_message(items[0])

    # -- a compactkit memory as the store --------------------------------------------------

    def _memory_items(self) -> list[Any]:
        memory = self._memory
        assert memory is not None
        self.governor.step(memory)  # compacts (and stores the result) when due
        snapshot = memory.snapshot()
        role = self.governor.projector.summary_role
        rendered = snapshot.render_items(summary_role=role)
        _, items = self._converter.from_items(rendered)
        return self._originals.restore(rendered, items, self._read_one)

    def _memory_add(self, items: list[Any]) -> None:
        memory = self._memory
        assert memory is not None
        converted: list[Item] = []
        converter = self._converter
        mark = converter.checkpoint()
        try:
            for index, item in enumerate(items):
                converted.extend(keep_wire(item, converter.to_items(item, index, self._warn)))
            if converted:
                memory.add_output_items(converted)
        except (ConfigError, StorageError):  # (a repeated call id, a write the memory refused,
            # or could not make: busy, a lease lost, the database down): nothing was stored,
            # and a corrected or retried write reads as if this one never came
            converter.rollback(mark)
            raise

    def _memory_pop(self) -> Any:
        memory = self._memory
        assert memory is not None
        snapshot = memory.snapshot()
        if not snapshot.items:
            return None
        last = snapshot.items[-1]
        # The popped item stays in the archive (``history()``): a restore that deleted it would
        # be refused as deleting another worker's append, and clear() + restore is not atomic.
        history = list(getattr(memory, "history", list)())
        memory.restore(
            MemorySnapshot(summary=snapshot.summary, items=snapshot.items[:-1]), history=history
        )
        _, popped = self._converter.from_items([last])
        popped = self._originals.restore([last], popped, self._read_one)
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


async def _call(method: Callable[..., Any], wrapper: object, *args: Any) -> Any:
    """Call a wrapped SDK session's method, with ``wrapper=`` only when it takes one (the
    ``Runner``'s own rule, so a session written before ``wrapper`` existed still works)."""
    if wrapper is not None and _accepts_wrapper(method):
        return await method(*args, wrapper=wrapper)
    return await method(*args)


def _accepts_wrapper(method: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.name == "wrapper" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        for p in parameters
    )
