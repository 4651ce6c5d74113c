"""``Agent``: a model, its tools and instructions, and how its sessions are governed and saved.

An agent holds configuration only; each conversation is a ``RunnableSession``
(``agent.new_session()``, ``agent.resume(session_id)``) with its own memory. Compaction is on by
default with the model's policy and the ladder; ``compaction=False`` turns it off explicitly.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from compactkit.budget import ProfileRegistry
from compactkit.compressors.base import CompressorLike
from compactkit.compressors.summary import RetryPolicy
from compactkit.errors import ConfigError
from compactkit.governance import CompactPolicy, ContextProjector
from compactkit.governance.policy import TriggerLike
from compactkit.items import Message, Tool
from compactkit.items.snapshot import SummaryRole
from compactkit.memory import AgentMemory, InMemoryMemory
from compactkit.runtime._model import Api, Client, ModelCaller
from compactkit.runtime.budget_tools import COMPACT_TOOL_NAME, budget_tools
from compactkit.runtime.events import CompactionRequest, EventHandler
from compactkit.runtime.governor import Governor
from compactkit.runtime.recall_tools import RECALL_TOOL_NAMES, recall_tools
from compactkit.runtime.session import RunnableSession
from compactkit.runtime.tools import FunctionTool, as_tools
from compactkit.sessions import AgentSession, SessionStore, new_session, resume_session
from compactkit.sessions.lease import DEFAULT_TTL, check_lease_times

__all__ = ["Agent"]


class Agent:
    """A model with tools and instructions, run in governed sessions.

    Args:
        model: The model name sent to the provider; its profile sets the budget and policy.
        client: An ``openai.OpenAI`` or ``openai.AsyncOpenAI`` (any OpenAI-compatible server).
            ``None`` builds one from ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` at the first call,
            with the SDK's retries off (compactkit's ``retry`` policy retries instead). A client
            you pass keeps its own ``max_retries``: give it ``max_retries=0`` to retry once.
        tools: Python functions (sync or async, with type hints) or ``FunctionTool``s.
        instructions: The system instructions, sent first in every prompt.
        memory_factory: Makes each new session's memory from its id (default
            ``InMemoryMemory``); for SQL: ``lambda sid: SQLMemory(url, sid)``.
        governor: The governance step; default ``Governor.for_model(model, ...)`` from the
            options below (giving both is a ``ConfigError``).
        budget: The usable input budget in tokens (default: the model profile's); it sizes
            both the projection and the compaction policy.
        trigger: When to compact (tokens, a share of the budget, or a trigger).
        target: Down to what (tokens or a share); without it a ``trigger`` gets one below it.
        projector: Replaces the default projector.
        policy: Replaces the model's compaction policy.
        compressor: Replaces the default ladder.
        compaction: ``False`` turns compaction off (prompts are still projected).
        summary_role: The role of the summary message (default projector only).
        registry: Where to look the model's profile up.
        max_steps: Model calls allowed per run.
        api: ``"chat"`` (Chat Completions) or ``"responses"``.
        store: Where sessions are saved after every step (``None``: not saved).
        model_settings: Extra request parameters (``temperature``, ``max_tokens``, …).
        retry: How provider faults are retried (default: 4 attempts, ``Retry-After`` honoured).
        tool_timeout: Seconds before a tool call is abandoned as an error output.
        on_event: Called with every event of every run.
        lease_timeout: Seconds a run waits for another run of the same session (in any
            process) to end before raising ``SessionBusyError`` (stores that lease: file, SQL).
        lease_ttl: Seconds a run's SQL lease lives without a save (each step saves and
            extends it); a run silent for longer is taken over and its later writes refused.
        before_compaction: Asked before every compaction; ``False`` vetoes it.
        recall: Add the ``recall(query)`` and ``expand(ref)`` tools, bound to each session's
            memory, so the model can get folded details back (docs/recall.md); the memory
            must offer recall (``InMemoryMemory``, ``SQLMemory``).
        budget_visible: Let the model see and steer its budget (docs/control.md): every request
            ends with one status line (``context 61% used; compaction at 80%``; counted in the
            budget, never stored), and the ``compact_context()`` tool asks for a compaction
            at the next step, honoured by the policy when it can make progress.

    Raises:
        ConfigError: unknown model, bad tools, or options that contradict each other.
    """

    def __init__(
        self,
        model: str,
        client: Client | None = None,
        *,
        tools: Sequence[Callable[..., Any] | FunctionTool] = (),
        instructions: str | Sequence[Message] | None = None,
        memory_factory: Callable[[str], AgentMemory] | None = None,
        governor: Governor | None = None,
        budget: int | None = None,
        trigger: TriggerLike | int | float | None = None,
        target: int | float | None = None,
        projector: ContextProjector | None = None,
        policy: CompactPolicy | None = None,
        compressor: CompressorLike | None = None,
        compaction: bool = True,
        summary_role: SummaryRole | None = None,
        registry: ProfileRegistry | None = None,
        max_steps: int = 50,
        api: Api = "chat",
        store: SessionStore | None = None,
        model_settings: Mapping[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        tool_timeout: float | None = None,
        on_event: EventHandler | None = None,
        before_compaction: Callable[[CompactionRequest], bool] | None = None,
        recall: bool = False,
        budget_visible: bool = False,
        lease_timeout: float = 10.0,
        lease_ttl: float = DEFAULT_TTL,
        **unknown: object,
    ) -> None:
        if unknown:
            known = inspect.signature(Agent.__init__).parameters
            raise ConfigError.unknown_options(
                "Agent", unknown, [n for n in known if n not in ("self", "unknown")]
            )
        if not isinstance(model, str) or not model:
            raise ConfigError(f"model must be a model name, got {model!r}")
        governor = _governor_for(
            model,
            governor,
            budget=budget,
            trigger=trigger,
            target=target,
            registry=registry,
            projector=projector,
            policy=policy,
            compressor=compressor,
            compaction=compaction,
            summary_role=summary_role,
            before_compaction=before_compaction,
            budget_visible=budget_visible,
        )
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ConfigError(f"max_steps must be a positive int, got {max_steps!r}")
        if tool_timeout is not None and tool_timeout <= 0:
            raise ConfigError(
                f"tool_timeout must be positive seconds or None, got {tool_timeout!r}"
            )
        if store is not None and not isinstance(store, SessionStore):
            raise ConfigError(f"store must be a SessionStore, got {type(store).__name__}")
        check_lease_times(lease_timeout, lease_ttl)
        if on_event is not None and not callable(on_event):
            raise ConfigError(f"on_event must be callable, got {on_event!r:.80}")
        self.instructions: str | tuple[Message, ...] | None = _checked_instructions(instructions)
        self.model = model
        self.api: Api = api
        self.tools: dict[str, FunctionTool] = as_tools(tools)
        self.recall = bool(recall)
        if self.recall:
            _add_recall_tools(self.tools)
        self.budget_visible = bool(budget_visible)
        if self.budget_visible:
            _add_budget_tools(self.tools, governor)
        self.schemas: tuple[Tool, ...] = tuple(t.schema() for t in self.tools.values())
        self.memory_factory = memory_factory or (lambda _session_id: InMemoryMemory())
        self.governor = governor
        self.caller = ModelCaller(model, api, client, settings=model_settings, retry=retry)
        self.max_steps = max_steps
        self.store = store
        self.tool_timeout = tool_timeout
        self.on_event = on_event
        self.lease_timeout = float(lease_timeout)
        self.lease_ttl = float(lease_ttl)

    def __repr__(self) -> str:
        return (
            f"Agent(model={self.model!r}, api={self.api!r}, tools={sorted(self.tools)!r}, "
            f"max_steps={self.max_steps})"
        )

    def tools_for(self, memory: AgentMemory) -> dict[str, FunctionTool]:
        """The tools a session with ``memory`` runs: the agent's, with ``recall`` and
        ``expand`` bound to ``memory`` when ``recall=True``, and ``compact_context`` when
        ``budget_visible=True``.

        Raises:
            RecallUnsupportedError: ``recall=True`` and the memory offers no recall.
        """
        tools = self.tools
        if self.recall:
            bound = recall_tools(memory, counter=self.governor.counter)
            tools = {**tools, **{t.name: t for t in bound}}
        if self.budget_visible:
            tools = {**tools, **{t.name: t for t in budget_tools(self.governor, memory)}}
        return tools

    def new_session(self, session_id: str | None = None) -> RunnableSession:
        """A new session with a fresh memory from ``memory_factory``.

        Raises:
            ConfigError: the factory returned a memory another session holds, or one that
                already holds state (use ``resume`` to continue a saved session).
        """
        session = new_session(self.memory_factory, session_id=session_id)
        runnable = RunnableSession.bind(self, session)
        runnable.save()
        return runnable

    def resume(self, session_id: str) -> RunnableSession:
        """Continue the saved session ``session_id`` from the agent's store.

        Raises:
            ConfigError: the agent has no store.
            SessionNotFoundError: the store has no such session.
        """
        if self.store is None:
            raise ConfigError(
                "resume() loads from the agent's store: build the agent with store= "
                "(FileSessionStore(path), SQLSessionStore(url), …)"
            )
        return RunnableSession.bind(
            self, resume_session(self.store, session_id, self.memory_factory)
        )

    def session(self, session: AgentSession) -> RunnableSession:
        """Run an existing ``AgentSession`` (same id, memory and counters) with this agent."""
        if not isinstance(session, AgentSession):
            raise ConfigError(f"session must be an AgentSession, got {type(session).__name__}")
        return RunnableSession.bind(self, session)


def _governor_for(
    model: str,
    governor: Governor | None,
    *,
    budget: int | None,
    trigger: TriggerLike | int | float | None,
    target: int | float | None,
    registry: ProfileRegistry | None,
    projector: ContextProjector | None,
    policy: CompactPolicy | None,
    compressor: CompressorLike | None,
    compaction: bool,
    summary_role: SummaryRole | None,
    before_compaction: Callable[[CompactionRequest], bool] | None,
    budget_visible: bool = False,
) -> Governor:
    """The agent's governor: the one given (then no governance part may be given beside it),
    else ``Governor.for_model`` with the parts given."""
    if governor is None:
        return Governor.for_model(
            model,
            budget=budget,
            trigger=trigger,
            target=target,
            registry=registry,
            projector=projector,
            policy=policy,
            compressor=compressor,
            compaction=compaction,
            summary_role=summary_role,
            before_compaction=before_compaction,
            budget_visible=budget_visible,
        )
    given = {
        name
        for name, value in (
            ("budget", budget),
            ("trigger", trigger),
            ("target", target),
            ("projector", projector),
            ("policy", policy),
            ("compressor", compressor),
            ("summary_role", summary_role),
            ("before_compaction", before_compaction),
            ("registry", registry),
        )
        if value is not None
    }
    if given or not compaction:
        raise ConfigError(
            f"governor= already holds the governance parts; do not also pass "
            f"{', '.join(sorted(given)) or 'compaction=False'} (build the governor with them)"
        )
    if not isinstance(governor, Governor):
        raise ConfigError(f"governor must be a Governor, got {type(governor).__name__}")
    if budget_visible and governor.status is None:
        raise ConfigError(
            "budget_visible=True needs the governor to add the status line: build it with "
            "Governor.for_model(model, budget_visible=True) (or status=BudgetStatus(policy))"
        )
    return governor


def _checked_instructions(
    instructions: str | Sequence[Message] | None,
) -> str | tuple[Message, ...] | None:
    """The agent's instructions as kept: a string, ``None``, or a tuple of messages."""
    if isinstance(instructions, str) or instructions is None:
        return instructions
    checked = tuple(instructions)
    for item in checked:
        if not isinstance(item, Message):
            raise ConfigError(f"instructions must be a string or messages, got {item!r:.80}")
    return checked


def _add_recall_tools(tools: dict[str, FunctionTool]) -> None:
    """``recall=True``: the recall tools join the agent's (a name they take is refused)."""
    taken = sorted(set(RECALL_TOOL_NAMES) & set(tools))
    if taken:
        raise ConfigError(
            f"recall=True adds tools named {RECALL_TOOL_NAMES!r}; rename your tools "
            f"{taken!r} or drop recall=True"
        )
    tools.update({t.name: t for t in recall_tools(InMemoryMemory())})


def _add_budget_tools(tools: dict[str, FunctionTool], governor: Governor) -> None:
    """``budget_visible=True``: ``compact_context`` joins the agent's tools (the name is
    refused if one of them takes it)."""
    if COMPACT_TOOL_NAME in tools:
        raise ConfigError(
            f"budget_visible=True adds a tool named {COMPACT_TOOL_NAME!r}; rename your tool or "
            "drop budget_visible=True"
        )
    tools.update({t.name: t for t in budget_tools(governor, InMemoryMemory())})
