"""pydantic-ai agents: ``CompactkitCapability`` (and ``CompactkitHistory`` for ``ProcessHistory``).

::

    agent = Agent(model, capabilities=[CompactkitCapability("gpt-4o-mini")])

Before every model request (``before_model_request``) the run's messages are mirrored into a
compactkit memory (only new messages are converted and counted), the shared governance step
projects them under the model's budget — the instructions and tool schemas counted, every
``ToolCallPart`` kept with its ``ToolReturnPart`` — and only the request is replaced
(``mode="project"``, the default): ``result.all_messages()`` keeps everything. When the policy
fires the mirror is compacted and its summary (held by the capability) is sent instead of the
oldest turns, so the user's task and rules are never simply dropped.

``mode="compact"`` also compacts: when the policy fires, the oldest turns are folded into
compactkit's summary and the run's persistent history (``RunContext.messages``) is rewritten to
the summary (a ``ModelRequest`` whose ``metadata`` carries it) plus the kept messages.

A prompt that would lose the newest tool returns (they do not fit even masked) raises
``BudgetError`` instead of letting the model call its tools again forever.

``CompactkitHistory`` is the same governance as a history processor for
``capabilities=[ProcessHistory(history.process_with_context)]`` (the step's tool schemas
counted; ``history.process`` / ``history.aprocess`` cannot see them); pydantic-ai makes a
processor's output the history, so it suits ``mode="compact"``.

Install with ``pip install 'compactkit[pydantic-ai]'``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from compactkit.compressors.sections import without_provenance
from compactkit.integrations._extras import require

require("pydantic_ai", extra="pydantic-ai", integration="compactkit.integrations.pydantic_ai")

from pydantic_ai.capabilities import AbstractCapability  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
)
from pydantic_ai.models import Model, ModelRequestContext, ModelRequestParameters  # noqa: E402
from pydantic_ai.tools import RunContext  # noqa: E402
from pydantic_ai.toolsets import FunctionToolset  # noqa: E402

from compactkit.budget import TokenCounter  # noqa: E402
from compactkit.budget.profiles import ProfileRegistry  # noqa: E402
from compactkit.compressors.base import CompressorLike  # noqa: E402
from compactkit.errors import ConfigError  # noqa: E402
from compactkit.governance.policy import CompactPolicy, TriggerLike  # noqa: E402
from compactkit.governance.projector import ContextProjector, Projection  # noqa: E402
from compactkit.integrations import _pydantic_ai_convert as convert  # noqa: E402
from compactkit.integrations._governed import OPTIONS, Governors, Mode  # noqa: E402
from compactkit.integrations._mirror import Mirror, Mirrors, require_newest  # noqa: E402
from compactkit.items import Message, Tool  # noqa: E402
from compactkit.items.snapshot import DEFAULT_SUMMARY_ROLE, SummaryRole  # noqa: E402
from compactkit.memory.in_memory import InMemoryMemory  # noqa: E402
from compactkit.runtime.budget_tools import COMPACT_TOOL_DESCRIPTION  # noqa: E402
from compactkit.runtime.events import CompactionRequest, EventHandler  # noqa: E402
from compactkit.runtime.governor import GovernedStep  # noqa: E402
from compactkit.runtime.recall_tools import (  # noqa: E402
    DEFAULT_RECALL_TOKENS,
    check_recall_tokens,
    recall_functions,
)

__all__ = ["CompactkitCapability", "CompactkitHistory", "pydantic_ai_recall_toolset"]


class CompactkitHistory:
    """compactkit's governance of a pydantic-ai history, as a step any hook can call.

    Args:
        model: The model name as sent to the provider (it picks the counter and budget), or
            the pydantic-ai ``Model`` itself (its ``model_name`` is used).
        mode: ``"project"`` (default) returns only the prompt; ``"compact"`` also compacts
            the history it is given when the policy fires.
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
        on_event: Called with every event: projections, compactions (failures too), parts
            passed through untouched.
        before_compaction: Asked before every compaction; returning ``False`` vetoes it.
        budget_visible: End every prompt ``govern`` returns with the budget status line (for
            ``CompactkitCapability(budget_visible=True)``; a history processor's prompt becomes
            the history, so ``process`` refuses it: the line is never stored).

    Raises:
        ConfigError: the options contradict each other, or the model is unknown.
    """

    def __init__(
        self,
        model: str | Model,
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
        budget_visible: bool = False,
        **unknown: object,
    ) -> None:
        if unknown:
            raise ConfigError.unknown_options("CompactkitHistory", unknown, OPTIONS)
        self.mode: Mode = mode
        self.budget_visible = bool(budget_visible)
        self.governors = Governors.build(
            model,
            format="pydantic_ai",
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
            budget_visible=budget_visible,
        )
        self._mirrors: Mirrors[ModelMessage] = Mirrors(convert.to_items)
        self._instructions: tuple[str | None, list[Message]] = (None, [])
        self._tools: tuple[tuple[object, ...], list[Tool]] = ((), [])

    def memory(self, conversation_id: str | None = None) -> InMemoryMemory:
        """The compactkit memory mirroring conversation ``conversation_id`` (a run's
        ``RunContext.conversation_id``): what its compactions folded is its archive."""
        return self._mirrors.get(conversation_id).memory

    def process(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """A sync history processor: ``ProcessHistory(history.process)``. Returns the prompt;
        pydantic-ai makes it the history. A processor without the run's context cannot see the
        tool schemas the request will carry: ``process_with_context`` counts them."""
        return self._process(messages, [])

    async def aprocess(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """An async history processor: ``ProcessHistory(history.aprocess)`` (no tool schemas
        counted: see ``aprocess_with_context``)."""
        return await self._aprocess(messages, [])

    def process_with_context(
        self, ctx: RunContext[Any], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        """``process`` taking the run's context, as ``ProcessHistory(history.process_with_context)``
        calls it: the step's tool schemas (function and output tools) are counted in the budget,
        as the capability counts them."""
        return self._process(messages, self._step_tools(ctx))

    async def aprocess_with_context(
        self, ctx: RunContext[Any], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        """The async ``process_with_context``."""
        return await self._aprocess(messages, self._step_tools(ctx))

    def _process(self, messages: list[ModelMessage], tools: list[Tool]) -> list[ModelMessage]:
        self._check_processor()
        mirror, governor, instructions = self._begin(messages, None, None)
        with without_provenance():  # a mirror: no references (docs/recall.md)
            step = governor.step(
                mirror.memory, instructions=instructions, tools=tools, usage=_usage(messages)
            )
        return self._finish(mirror, step, instructions)[0]

    async def _aprocess(
        self, messages: list[ModelMessage], tools: list[Tool]
    ) -> list[ModelMessage]:
        self._check_processor()
        mirror, governor, instructions = await asyncio.to_thread(self._begin, messages, None, None)
        with without_provenance():  # a mirror: no references (docs/recall.md)
            step = await governor.astep(
                mirror.memory, instructions=instructions, tools=tools, usage=_usage(messages)
            )
        return self._finish(mirror, step, instructions)[0]

    async def govern(
        self,
        messages: list[ModelMessage],
        *,
        key: str | None = None,
        parameters: ModelRequestParameters | None = None,
    ) -> tuple[list[ModelMessage], list[ModelMessage] | None, Projection]:
        """Govern one model request: the messages to send, the new history when it was
        compacted (else ``None``), and the projection (for ``observe_usage``)."""
        mirror, governor, instructions = await asyncio.to_thread(
            self._begin, messages, key, parameters
        )
        tools = self._tool_schemas(parameters)
        with without_provenance():  # a mirror: no references (docs/recall.md)
            step = await governor.astep(
                mirror.memory, instructions=instructions, tools=tools, usage=_usage(messages)
            )
        prompt, history = self._finish(mirror, step, instructions)
        compacted = step.compacted and self.mode == "compact"
        return prompt, history if compacted else None, step.projection

    def observe_usage(self, response: ModelResponse, projection: Projection) -> None:
        """Calibrate the counts with the tokens the provider reported for ``response``."""
        self.governors.observe_usage(response.usage.input_tokens, projection)

    def request_compaction(self, conversation_id: str | None = None) -> str:
        """Ask for a compaction of conversation ``conversation_id`` at its next request (what
        the ``compact_context`` tool calls); the plain answer (``Governor.request_compaction``)."""
        memory = self._mirrors.get(conversation_id).memory
        return self.governors.compacts.request_compaction(memory)

    # -- helpers -------------------------------------------------------------------------------

    def _check_processor(self) -> None:
        if self.budget_visible:
            raise ConfigError(
                "budget_visible=True adds a status line to each prompt, and a history "
                "processor's prompt becomes the history (the line would be stored): use "
                "CompactkitCapability(model, budget_visible=True) instead"
            )

    def _begin(
        self,
        messages: Sequence[ModelMessage],
        key: str | None,
        parameters: ModelRequestParameters | None,
    ) -> tuple[Mirror[ModelMessage], Any, list[Message]]:
        mirror = self._mirrors.get(key)
        with mirror.lock:
            mirror.sync(messages, self.governors.passthrough)
        governor = self.governors.compacting or self.governors.projecting
        return mirror, governor, self._instruction_items(messages, parameters)

    def _finish(
        self, mirror: Mirror[ModelMessage], step: GovernedStep, instructions: list[Message]
    ) -> tuple[list[ModelMessage], list[ModelMessage]]:
        role = self.governors.summary_role
        with mirror.lock:
            snapshot = mirror.memory.snapshot()
            require_newest(snapshot, step.projection)
            history: list[ModelMessage] = []
            if step.compacted and self.mode == "compact":
                rendered = snapshot.render_items(summary_role=role)
                history = convert.to_messages(rendered, summary_role=role)
                mirror.adopt(history)
        items = step.items[len(instructions) :]
        # Between compactions a prompt is the previous one plus what was appended (the
        # projector plans it so, for prompt caching): convert only the new tail.
        sent, previous = mirror.sent
        known = len(sent)
        if known and len(items) >= known and items[:known] == sent:
            prompt = [*previous, *convert.to_messages(items[known:], summary_role=role)]
        else:
            prompt = convert.to_messages(items, summary_role=role)
        mirror.sent = (tuple(items), prompt)
        return list(prompt), history

    def _instruction_items(
        self, messages: Sequence[ModelMessage], parameters: ModelRequestParameters | None
    ) -> list[Message]:
        # What pydantic-ai sends as instructions: the structured parts of this request, else
        # the latest request's rendered instructions.
        text: str | None = None
        if parameters is not None and parameters.instruction_parts:
            text = InstructionPart.join(parameters.instruction_parts)
        else:
            for message in reversed(messages):
                if isinstance(message, ModelRequest):
                    text = message.instructions
                    break
        cached, items = self._instructions
        if text == cached:
            return items
        items = [Message(role="system", content=text)] if text else []
        self._instructions = (text, items)
        return items

    def _tool_schemas(self, parameters: ModelRequestParameters | None) -> list[Tool]:
        if parameters is None:
            return []
        return self._schemas((*parameters.function_tools, *parameters.output_tools))

    def _step_tools(self, ctx: RunContext[Any]) -> list[Tool]:
        """The tools of the run step ``ctx`` belongs to (function and output tools: what the
        model request carries); none when the run has no prepared tool manager."""
        manager = getattr(ctx, "tool_manager", None)
        try:
            definitions = tuple(manager.tool_defs) if manager is not None else ()
        except ValueError:  # (a manager not prepared for a run step: no tools yet)
            definitions = ()
        return self._schemas(definitions) if definitions else []

    def _schemas(self, definitions: tuple[Any, ...]) -> list[Tool]:
        """The ``Tool``s of ``definitions``, converted once while they stay equal (pydantic-ai
        builds new ``ToolDefinition`` objects every step: the same ``Tool`` objects keep the
        counter's per-tool count)."""
        cached, schemas = self._tools
        if cached == definitions:  # (a tuple compares identity first, then the dataclasses)
            return schemas
        schemas = convert.to_tools(definitions)
        self._tools = (definitions, schemas)
        return schemas


class CompactkitCapability(AbstractCapability[Any]):
    """Governs every model request of a pydantic-ai agent: under budget, tool calls kept with
    their returns; optionally compacting the run's history.

    Takes the arguments of ``CompactkitHistory`` (``model``, ``mode``, ``budget``, ``compressor``,
    ``policy``, ``projector``, ``summary_role``, ``registry``, ``on_event``,
    ``before_compaction``), and ``recall=True`` (the ``recall``/``expand`` tools) and
    ``budget_visible=True`` (every request ends with the budget status line, counted in the
    budget and never stored; the ``compact_context()`` tool asks for a compaction of the
    conversation at its next request; docs/control.md). Works under ``run``, ``run_sync`` and ``run_stream``; one capability
    may serve many conversations (a mirror per ``conversation_id``).
    """

    def __init__(
        self,
        model: str | Model,
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
        recall: bool = False,
        budget_visible: bool = False,
        **unknown: object,
    ) -> None:
        if unknown:
            raise ConfigError.unknown_options("CompactkitCapability", unknown, [*OPTIONS, "recall"])
        self.recall = bool(recall)
        self.budget_visible = bool(budget_visible)
        self.history = CompactkitHistory(
            model,
            mode=mode,
            budget=budget,
            trigger=trigger,
            target=target,
            compressor=compressor,
            policy=policy,
            projector=projector,
            summary_role=summary_role,
            registry=registry,
            on_event=on_event,
            before_compaction=before_compaction,
            budget_visible=budget_visible,
        )
        self._projections: OrderedDict[int, tuple[ModelRequestContext, Projection]] = OrderedDict()

    def get_toolset(self) -> FunctionToolset[Any] | None:
        """With ``recall=True``: the ``recall`` and ``expand`` tools over each conversation's
        archive (``pydantic_ai_recall_toolset(self)``); with ``budget_visible=True``: the
        ``compact_context`` tool."""
        recall = pydantic_ai_recall_toolset(self) if self.recall else None
        if not self.budget_visible:
            return recall
        history = self.history

        async def compact_context(ctx: RunContext[Any]) -> str:
            return await asyncio.to_thread(history.request_compaction, ctx.conversation_id)

        compact_context.__doc__ = COMPACT_TOOL_DESCRIPTION
        tools = [*recall.tools.values()] if recall is not None else []
        return FunctionToolset([*tools, compact_context])

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Replace the request's messages with the governed prompt (and, when it compacted in
        ``mode="compact"``, the run's history with the compacted one)."""
        prompt, history, projection = await self.history.govern(
            list(request_context.messages),
            key=ctx.conversation_id,
            parameters=request_context.model_request_parameters,
        )
        if history is not None:
            ctx.messages[:] = history
        governed = dataclasses.replace(request_context, messages=prompt)
        self._projections[id(governed)] = (governed, projection)
        while len(self._projections) > 64:
            self._projections.popitem(last=False)
        return governed

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        """Calibrate the counts with the usage the provider reported."""
        entry = self._projections.pop(id(request_context), None)
        if entry is not None and entry[0] is request_context:
            self.history.observe_usage(response, entry[1])
        return response

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not spec-serializable (it holds a governor and callbacks)."""
        return None


def pydantic_ai_recall_toolset(
    source: object,
    *,
    max_tokens: int = DEFAULT_RECALL_TOKENS,
    counter: TokenCounter | None = None,
    limit: int = 5,
) -> FunctionToolset[Any]:
    """The ``recall(query)`` and ``expand(ref)`` tools as a pydantic-ai toolset.

    Args:
        source: A ``CompactkitCapability`` or ``CompactkitHistory``: the tools search the
            archive of the conversation they run in (what that capability's compactions
            folded, keyed by ``RunContext.conversation_id``); or a memory that offers recall
            (``SQLMemory``, ``InMemoryMemory``) to search that memory's archive.
        max_tokens: The most tokens one result adds to the prompt.
        counter: Counts those tokens (default: ``counter_for("gpt-4o")``).
        limit: Hits one recall call returns at most.

    Results are quoted data, capped at ``max_tokens``, exactly as ``compactkit.recall_tools``
    returns them.

    Raises:
        RecallUnsupportedError: ``source`` is neither and offers no recall.
        ConfigError: ``max_tokens`` is below 50.
    """
    check_recall_tokens(max_tokens)
    history = source.history if isinstance(source, CompactkitCapability) else source
    fixed = (
        None
        if isinstance(history, CompactkitHistory)
        else recall_functions(source, max_tokens=max_tokens, counter=counter, limit=limit)
    )

    def call(ctx: RunContext[Any], which: int, argument: str) -> str:
        if fixed is not None:
            return fixed[which](argument)
        assert isinstance(history, CompactkitHistory)
        mirror = history._mirrors.get(ctx.conversation_id)
        with mirror.lock:  # the capability syncs and compacts this memory under the same lock
            functions = recall_functions(
                mirror.memory, max_tokens=max_tokens, counter=counter, limit=limit
            )
            return functions[which](argument)

    async def recall(ctx: RunContext[Any], query: str) -> str:
        """Search what was folded out of this conversation (earlier messages, tool calls and
        tool outputs) for these words; returns the best matches with references like #412.

        Args:
            ctx: The run's context.
            query: Words, identifiers, error text or numbers to look for.
        """
        return await asyncio.to_thread(call, ctx, 0, query)

    async def expand(ctx: RunContext[Any], ref: str) -> str:
        """Return the exact items a reference names: #412 for one item, #412-418 for a range
        (references appear in recall results and in the summary).

        Args:
            ctx: The run's context.
            ref: The reference, for example #412 or #412-418.
        """
        return await asyncio.to_thread(call, ctx, 1, ref)

    return FunctionToolset([recall, expand])


def _usage(messages: Sequence[ModelMessage]) -> int | None:
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            tokens = message.usage.input_tokens
            return tokens if isinstance(tokens, int) and tokens > 0 else None
    return None
