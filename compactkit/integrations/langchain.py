"""LangChain v1 agents (``langchain.agents.create_agent``): ``CompactkitMiddleware``.

::

    agent = create_agent(llm, tools, middleware=[CompactkitMiddleware(model="gpt-4o-mini")])

Every model call goes through ``wrap_model_call``/``awrap_model_call``: the state's messages are
mirrored into a compactkit memory (only the new ones are converted and counted), the shared
governance step projects them under the model's budget — group-safe, with the system prompt and
the tool schemas counted — and the model is called with ``request.override(messages=...)``. The
checkpointed state is never touched by that (``mode="project"``, the default): when the policy
fires, the mirror is compacted and its summary (held by the middleware) is sent instead of the
oldest turns, so the user's task and rules are never simply dropped.

``mode="compact"`` also compacts: in ``before_model``/``abefore_model``, when the policy fires,
the compressor folds the oldest groups into compactkit's summary and the state is rewritten the
way LangChain's ``SummarizationMiddleware`` does it (``RemoveMessage(REMOVE_ALL_MESSAGES)`` and
the new messages) — with compactkit's summary, exact counts and cuts that never split a tool call
from its result. The summary is a ``HumanMessage`` marked ``additional_kwargs["lc_source"] ==
"compactkit_summary"``; it is merged into, never summarised as a user turn.

Install with ``pip install 'compactkit[langchain]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, cast

from compactkit.integrations._extras import require

require("langchain", extra="langchain", integration="compactkit.integrations.langchain")

from langchain.agents.middleware import AgentMiddleware, AgentState  # noqa: E402
from langchain.agents.middleware.internal_call_transformer import (  # noqa: E402
    InternalCallTransformer,
)
from langchain.agents.middleware.types import ModelRequest, ModelResponse  # noqa: E402
from langchain.tools import ToolRuntime  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    AnyMessage,
    BaseMessage,
    RemoveMessage,
)
from langchain_core.tools import BaseTool, StructuredTool  # noqa: E402
from langgraph.graph.message import REMOVE_ALL_MESSAGES  # noqa: E402

from compactkit.budget import TokenCounter  # noqa: E402
from compactkit.budget.profiles import ProfileRegistry, default_registry  # noqa: E402
from compactkit.compressors.base import CompressorLike  # noqa: E402
from compactkit.compressors.sections import without_provenance  # noqa: E402
from compactkit.errors import ConfigError  # noqa: E402
from compactkit.governance.policy import CompactPolicy, TriggerLike  # noqa: E402
from compactkit.governance.projector import ContextProjector, Projection  # noqa: E402
from compactkit.integrations import _langchain_convert as convert  # noqa: E402
from compactkit.integrations._governed import OPTIONS, Governors, Mode  # noqa: E402
from compactkit.integrations._langchain_cold import quick_start, read_cold  # noqa: E402
from compactkit.integrations._langchain_llm import LangChainLLM, summary_compressor  # noqa: E402
from compactkit.integrations._langchain_options import (  # noqa: E402
    ClearToolOutputs,
    CountMessages,
    MessagesCounter,
)
from compactkit.integrations._langchain_recall import recall_tools_over  # noqa: E402
from compactkit.integrations._mirror import Converted, Mirror, Mirrors, require_newest  # noqa: E402
from compactkit.items import Message, Tool  # noqa: E402
from compactkit.items.snapshot import DEFAULT_SUMMARY_ROLE, MemorySnapshot, SummaryRole  # noqa: E402
from compactkit.runtime.budget_tools import COMPACT_TOOL_DESCRIPTION  # noqa: E402
from compactkit.runtime.events import CompactionRequest, EventHandler  # noqa: E402
from compactkit.runtime.governor import GovernedStep  # noqa: E402
from compactkit.runtime.recall_tools import DEFAULT_RECALL_TOKENS  # noqa: E402

__all__ = ["ClearToolOutputs", "CompactkitMiddleware", "LangChainLLM", "langchain_recall_tools"]

# profiles.toml is read now, not by the first middleware built inside a running event loop; a
# bad COMPACTKIT_PROFILES file is raised, with its fix, where the registry is used.
with contextlib.suppress(ConfigError):
    default_registry()


class CompactkitMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Governs every model call of a LangChain agent: under budget, tool calls kept with their
    results; optionally compacting the state.

    Args:
        model: The model name as sent to the provider (it picks the counter and budget), or
            the chat model itself (``ChatOpenAI(...)``: its model name is used).
        mode: ``"project"`` (default) changes only what the model sees; ``"compact"`` also
            compacts the state when the policy fires.
        budget: The usable input budget in tokens (default: the model profile's). With
            ``mode="compact"`` it also sizes the default policy (compact over 80 %, down to 50 %).
        trigger: When to compact (``mode="compact"``): tokens, a share of the budget, or a
            trigger.
        target: Down to what (``mode="compact"``); without it a ``trigger`` gets one below it.
        compressor: What compacts (``mode="compact"``; default the ladder: masking, then the
            deterministic digest). Pass a ``SummaryCompressor`` for an LLM summary.
        policy: When to compact and down to what (``mode="compact"``).
        projector: Replaces the default projector (then do not pass ``budget``).
        summary_role: The role of the summary message (default ``user``: framed as data).
        registry: Where to look the model up.
        on_event: Called with every event: projections, compactions (failures too), messages
            passed through untouched.
        before_compaction: Asked before every compaction; returning ``False`` vetoes it.
        summarizer: A chat model that writes the summary (``SummarizationMiddleware``'s
            ``model=``): a ``SummaryCompressor`` over ``LangChainLLM(summarizer)``. Needs
            ``mode="compact"``; not with ``compressor=``.
        summary_prompt: The summarizer's instructions in place of compactkit's (with
            ``summarizer=``); a ``{messages}`` placeholder receives the conversation part.
        keep: What a compaction keeps verbatim (with ``summarizer=``): ``("messages", N)``,
            the newest N messages, or ``("tokens", N)``, the newest messages within N tokens;
            never a tool result without the message that called it.
        token_counter: Counts a list of messages (LangChain's ``count_tokens_approximately``
            or your own) in place of the model's tokenizer, for the budget, the triggers and
            ``keep``; compactkit then calls its counts approximate.
        clear_tool_outputs: ``ClearToolOutputs(trigger=, keep=, placeholder=,
            exclude_tools=)``: over ``trigger`` tokens, older tool results are replaced by the
            placeholder in what the model sees (``ContextEditingMiddleware``'s shape).
        recall: ``True`` registers the ``recall(query)`` and ``expand(ref)`` tools
            (``langchain_recall_tools(middleware)``): the agent can search what this middleware's
            compactions folded out of its thread.
        budget_visible: ``True`` ends every model call's messages with the budget status line
            (``context 61% used; compaction at 80%``; counted in the budget, never in the
            state) and registers the ``compact_context()`` tool, which asks for a compaction
            of the thread at its next model call (docs/control.md).
        cold_start: How the first model call in a process reads a long thread (its mirror is
            empty after a restart or in a new worker). ``"full"`` (default) reads it whole,
            as a compaction would: the summary lists the files, commands, errors and
            decisions of everything folded. ``"quick"`` reads only the end a compaction keeps
            and digests just the user's and system messages before it (goal, rules,
            requests): ~10x faster on a 10,000-message thread, but that first summary lacks
            the files, errors and decisions of the unread part (docs/integrations.md). Needs
            ``mode="project"`` with the default compressor and no ``on_event``,
            ``before_compaction`` or ``budget_visible``.

    Raises:
        ConfigError: the options contradict each other, or the model is unknown.

    One middleware may serve many threads (it keeps a mirror per ``thread_id``) and both
    ``invoke`` and ``ainvoke``. The summarizer's calls are tagged internal and no-stream, as
    LangChain's own middleware tags them, so a chat UI never shows the summary as if the
    assistant said it.
    """

    transformers = (InternalCallTransformer,)  # keeps internal calls out of ``run.messages``

    def __init__(
        self,
        model: str | BaseChatModel,
        *,
        mode: Mode = "project",
        budget: int | None = None,
        trigger: TriggerLike | int | float | None = None,
        target: int | float | None = None,
        compressor: CompressorLike | None = None,
        policy: CompactPolicy | None = None,
        projector: ContextProjector | None = None,
        summary_role: SummaryRole = DEFAULT_SUMMARY_ROLE,
        registry: ProfileRegistry | None = None,
        on_event: EventHandler | None = None,
        before_compaction: Callable[[CompactionRequest], bool] | None = None,
        summarizer: BaseChatModel | None = None,
        summary_prompt: str | None = None,
        keep: tuple[str, int] | None = None,
        token_counter: CountMessages | None = None,
        clear_tool_outputs: ClearToolOutputs | None = None,
        recall: bool = False,
        budget_visible: bool = False,
        cold_start: Literal["full", "quick"] = "full",
        **unknown: object,
    ) -> None:
        if unknown:
            raise ConfigError.unknown_options("CompactkitMiddleware", unknown, _OPTIONS)
        super().__init__()
        self.mode: Mode = mode
        counter = None if token_counter is None else MessagesCounter(token_counter)
        if counter is not None and projector is not None:
            raise ConfigError(
                "token_counter= sizes the default projector; with projector= given, build it "
                "with your counter instead"
            )
        compressor = summary_compressor(mode, compressor, summarizer, summary_prompt, keep, counter)
        if clear_tool_outputs is not None and not isinstance(clear_tool_outputs, ClearToolOutputs):
            raise ConfigError(
                f"clear_tool_outputs must be a ClearToolOutputs(trigger=, keep=, placeholder=, "
                f"exclude_tools=), got {type(clear_tool_outputs).__name__}"
            )
        self.clear_tool_outputs = clear_tool_outputs
        self._reads_cold = quick_start(
            cold_start,
            mode=mode,
            compressor=compressor,
            on_event=on_event,
            before_compaction=before_compaction,
            budget_visible=budget_visible,
        )
        self.governors = Governors.build(
            model,
            format="langchain",
            mode=mode,
            budget=budget,
            trigger=trigger,
            target=target,
            registry=registry,
            projector=projector,
            policy=policy,
            compressor=compressor,
            summary_role=summary_role,
            on_event=on_event,
            before_compaction=before_compaction,
            counter=counter,
            budget_visible=budget_visible,
        )
        self._mirrors: Mirrors[BaseMessage] = Mirrors(self._to_items)
        self._tools: tuple[tuple[object, ...], list[Tool]] = ((), [])
        self._system: tuple[object, list[Message]] = (None, [])
        self.tools: list[BaseTool] = langchain_recall_tools(self) if recall else []
        if budget_visible:
            self.tools.append(self._compact_tool())

    # -- the non-destructive projection, every model call ---------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], ModelResponse],
    ) -> ModelResponse | AIMessage:
        """Call the model with the projected messages; the state keeps all of them."""
        mirror, snapshot, instructions, tools = self._prepare(request)
        with without_provenance():  # a mirror: no references (docs/recall.md)
            step = self.governors.projecting.step(
                mirror.memory, instructions=instructions, tools=tools
            )
        projected = self._projected(mirror, snapshot, step, instructions)
        response = handler(request.override(messages=self._cleared(projected, step)))
        self._observe(response, step.projection)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest,
        handler: Callable[[ModelRequest], Awaitable[ModelResponse]],
    ) -> ModelResponse | AIMessage:
        """``wrap_model_call`` for ``ainvoke``/``astream`` (counting runs off the event loop)."""
        mirror, snapshot, instructions, tools = await asyncio.to_thread(self._prepare, request)
        with without_provenance():  # a mirror: no references (docs/recall.md)
            step = await self.governors.projecting.astep(
                mirror.memory, instructions=instructions, tools=tools
            )
        projected = self._projected(mirror, snapshot, step, instructions)
        response = await handler(request.override(messages=self._cleared(projected, step)))
        self._observe(response, step.projection)
        return response

    # -- compaction into the state (mode="compact") -------------------------------------------

    def before_model(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """Compact the state when the policy fires (``mode="compact"``); else nothing."""
        governor = self.governors.compacting
        if governor is None:
            return None
        mirror, usage = self._sync_state(state, runtime)
        instructions, tools = _last_call(mirror)
        with without_provenance():  # a mirror: no references (docs/recall.md)
            step = governor.step(mirror.memory, instructions=instructions, tools=tools, usage=usage)
        return self._state_update(mirror, step)

    async def abefore_model(self, state: AgentState[Any], runtime: Any) -> dict[str, Any] | None:
        """``before_model`` for ``ainvoke``/``astream``."""
        governor = self.governors.compacting
        if governor is None:
            return None
        mirror, usage = await asyncio.to_thread(self._sync_state, state, runtime)
        instructions, tools = _last_call(mirror)
        with without_provenance():  # a mirror: no references (docs/recall.md)
            step = await governor.astep(
                mirror.memory, instructions=instructions, tools=tools, usage=usage
            )
        return self._state_update(mirror, step)

    # -- helpers -------------------------------------------------------------------------------

    def _compact_tool(self) -> BaseTool:
        """``compact_context()`` over the thread the call runs in."""
        governor = self.governors.compacts

        def request(runtime: object) -> str:
            mirror = self._mirrors.get(_thread(runtime))
            return governor.request_compaction(mirror.memory)

        def compact_context(runtime: ToolRuntime[Any, Any]) -> str:
            return request(runtime)

        async def acompact_context(runtime: ToolRuntime[Any, Any]) -> str:
            return request(runtime)

        return StructuredTool.from_function(
            compact_context,
            coroutine=acompact_context,
            name="compact_context",
            description=COMPACT_TOOL_DESCRIPTION,
        )

    def _to_items(self, message: BaseMessage, warn: Callable[[str], None]) -> Converted:
        return convert.to_items(message, warn)

    def _prepare(
        self, request: ModelRequest
    ) -> tuple[Mirror[BaseMessage], MemorySnapshot, list[Message], list[Tool]]:
        mirror = self._mirrors.get(_thread(request.runtime))
        instructions = self._instructions(request.system_message)
        tools = self._tool_schemas(request.tools, request.response_format)
        with mirror.lock:
            snapshot = self._read_cold(mirror, request.messages, instructions, tools)
            if snapshot is None:
                snapshot = mirror.sync(request.messages, self.governors.passthrough)
        # before_model cannot see these, and the compaction target must leave room for them.
        mirror.context = (instructions, tools)
        return mirror, snapshot, instructions, tools

    def _read_cold(
        self,
        mirror: Mirror[BaseMessage],
        messages: Sequence[BaseMessage],
        instructions: list[Message],
        tools: list[Tool],
    ) -> MemorySnapshot | None:
        """A long thread's first read in this process: the memory a compaction leaves, read
        from the thread's end (``_langchain_cold.py``); ``None``: sync it whole."""
        if not self._reads_cold or mirror.sources:
            return None
        empty = mirror.memory.snapshot()
        if empty.items or empty.summary:
            return None
        cold = read_cold(messages, self.governors.projecting, instructions, tools)
        if cold is None:
            return None
        # The mirror reads the kept part as it reads any thread (call ids made unique for the
        # memory the same way), then holds the summary and stands for the whole thread.
        kept = mirror.sync(cold.kept, self.governors.passthrough)
        mirror.memory.restore(MemorySnapshot(summary=cold.summary, items=tuple(kept.items)))
        mirror.adopt(messages)
        return mirror.memory.snapshot()

    def _projected(
        self,
        mirror: Mirror[BaseMessage],
        snapshot: MemorySnapshot,
        step: GovernedStep,
        instructions: Sequence[Message],
    ) -> list[AnyMessage]:
        require_newest(snapshot, step.projection)
        items = step.items[len(instructions) :]  # the system prompt stays request.system_message
        role = self.governors.summary_role
        memo = mirror.memo
        if len(memo) > 2 * len(items) + 1_000:  # runs that left the window
            memo.clear()
        # Between compactions a prompt is the previous one plus what was appended (the
        # projector plans it so, for prompt caching): convert only the new tail.
        sent, previous = mirror.sent
        known = len(sent)
        if known and len(items) >= known and items[:known] == sent:
            messages = [
                *previous,
                *convert.to_messages(items[known:], summary_role=role, memo=memo),
            ]
        else:
            messages = convert.to_messages(items, summary_role=role, memo=memo)
        mirror.sent = (tuple(items), messages)
        return cast(list[AnyMessage], list(messages))  # a copy: the cache is not theirs to edit

    def _cleared(self, messages: list[AnyMessage], step: GovernedStep) -> list[AnyMessage]:
        if self.clear_tool_outputs is None:
            return messages
        cleared = self.clear_tool_outputs.apply(list(messages), step.projection.tokens)
        return cast(list[AnyMessage], cleared)

    def _sync_state(
        self, state: AgentState[Any], runtime: Any
    ) -> tuple[Mirror[BaseMessage], int | None]:
        messages = state["messages"]
        mirror = self._mirrors.get(_thread(runtime))
        with mirror.lock:
            mirror.sync(messages, self.governors.passthrough)
        return mirror, _last_usage(messages)

    def _state_update(
        self, mirror: Mirror[BaseMessage], step: GovernedStep
    ) -> dict[str, Any] | None:
        if not step.compacted:
            return None
        with mirror.lock:
            snapshot = mirror.memory.snapshot()
            messages = convert.to_messages(
                snapshot.render_items(summary_role=self.governors.summary_role),
                summary_role=self.governors.summary_role,
            )
            for message in messages:  # add_messages needs ids; the kept messages have theirs
                if message.id is None and convert.is_summary(message):
                    message.id = f"compactkit-summary-{snapshot.version}"
            mirror.adopt(messages)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages]}

    def _instructions(self, system: BaseMessage | None) -> list[Message]:
        if system is None:
            return []
        cached, items = self._system
        if cached is system:
            return items
        converted = convert.to_items(system, lambda reason: None)
        items = [item for item in converted if isinstance(item, Message)]
        self._system = (system, items)
        return items

    def _tool_schemas(self, tools: Sequence[Any], response_format: Any = None) -> list[Tool]:
        """The schemas the model call carries: the request's tools and what its response
        format adds (``convert.output_tools``)."""
        key = (*tools, response_format)
        cached, schemas = self._tools
        if len(cached) == len(key) and all(a is b for a, b in zip(cached, key, strict=True)):
            return schemas
        schemas = [*convert.to_tools(key[:-1]), *convert.output_tools(response_format)]
        self._tools = (key, schemas)
        return schemas

    def _observe(self, response: object, projection: Projection) -> None:
        message = response
        if isinstance(response, ModelResponse):
            message = next((m for m in reversed(response.result) if isinstance(m, AIMessage)), None)
        usage = message.usage_metadata if isinstance(message, AIMessage) else None
        if usage:
            self.governors.observe_usage(usage.get("input_tokens"), projection)


def langchain_recall_tools(
    source: object,
    *,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    counter: TokenCounter | None = None,
    limit: int = 5,
) -> list[BaseTool]:
    """The ``recall(query)`` and ``expand(ref)`` tools as LangChain tools.

    Args:
        source: A ``CompactkitMiddleware``: the tools search the archive of the thread they
            run in (what that middleware's compactions folded, by ``thread_id``); or a memory
            that offers recall (``SQLMemory``, ``InMemoryMemory``) to search its archive.
        max_tokens: The most tokens one result adds to the prompt.
        counter: Counts those tokens (default: ``counter_for("gpt-4o")``).
        limit: Hits one recall call returns at most.

    Results are quoted data, capped at ``max_tokens``, exactly as ``compactkit.recall_tools``
    returns them.

    Raises:
        RecallUnsupportedError: ``source`` is neither and offers no recall.
        ConfigError: ``max_tokens`` is below 50.
    """
    over = source._mirrors if isinstance(source, CompactkitMiddleware) else source
    return recall_tools_over(over, _thread, max_tokens=max_tokens, counter=counter, limit=limit)


def _last_call(mirror: Mirror[BaseMessage]) -> tuple[list[Message], list[Tool]]:
    """The system prompt and tools the thread's last model call sent (none before the first)."""
    if isinstance(mirror.context, tuple):
        return cast(tuple[list[Message], list[Tool]], mirror.context)
    return [], []


def _thread(runtime: object) -> str | None:
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    return thread if isinstance(thread, str) else None


def _last_usage(messages: Sequence[BaseMessage]) -> int | None:
    for message in reversed(messages):
        if isinstance(message, AIMessage):
            usage = message.usage_metadata
            tokens = usage.get("input_tokens") if usage else None
            return tokens if isinstance(tokens, int) and tokens >= 0 else None
    return None


_OPTIONS = (
    *OPTIONS,
    "summarizer",
    "summary_prompt",
    "keep",
    "token_counter",
    "clear_tool_outputs",
    "recall",
    "cold_start",
)
"""Every option ``CompactkitMiddleware`` takes beyond ``model`` (the shared ones first)."""
