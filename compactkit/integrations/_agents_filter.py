"""``CompactkitInputFilter``: the per-model-call hook for the OpenAI Agents SDK (a
``RunConfig.call_model_input_filter``), and the options both of ``openai_agents``' hooks share.
Public from ``compactkit.integrations.openai_agents``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from compactkit.integrations._extras import require

require("agents", extra="openai-agents", integration="compactkit.integrations.openai_agents")

from agents import (  # noqa: E402
    Agent,
    AgentOutputSchema,
    AgentOutputSchemaBase,
    FunctionTool,
    Handoff,
    ModelResponse,
    RunContextWrapper,
    RunHooks,
    function_tool,
    handoff,
)
from agents.run_config import CallModelData, ModelInputData  # noqa: E402

from compactkit.budget.profiles import ProfileRegistry  # noqa: E402
from compactkit.compressors.base import CompressorLike  # noqa: E402
from compactkit.errors import ConfigError  # noqa: E402
from compactkit.governance.policy import CompactPolicy, TriggerLike  # noqa: E402
from compactkit.integrations.messages import CompactedMessages, MessageCompactor  # noqa: E402
from compactkit.items import Tool  # noqa: E402
from compactkit.items.snapshot import SummaryRole  # noqa: E402
from compactkit.runtime.budget_tools import compact_context_function  # noqa: E402
from compactkit.runtime.events import Event  # noqa: E402
from compactkit.runtime.governor import Governor  # noqa: E402

SHARED_OPTIONS = (
    "budget",
    "trigger",
    "target",
    "compressor",
    "summary_role",
    "registry",
    "compaction",
    "policy",
    "governor",
    "on_event",
)


def governor_for(
    model: str,
    governor: Governor | None,
    *,
    budget: int | None = None,
    trigger: TriggerLike | int | float | None = None,
    target: int | float | None = None,
    registry: ProfileRegistry | None,
    compaction: bool,
    policy: CompactPolicy | None,
    compressor: CompressorLike | None,
    summary_role: SummaryRole | None,
    on_event: Callable[[Event], None] | None,
    budget_visible: bool = False,
) -> Governor:
    if governor is not None:
        if not isinstance(governor, Governor):
            raise ConfigError(f"governor must be a Governor, got {type(governor).__name__}")
        shared = (budget, trigger, target, registry, policy, compressor, summary_role)
        if any(o is not None for o in shared) or not compaction:
            raise ConfigError(
                "governor= is already configured: do not pass budget=, trigger=, target=, "
                "registry=, policy=, compressor=, summary_role= or compaction= with it"
            )
        if budget_visible and governor.status is None:
            raise ConfigError(
                "budget_visible=True needs the governor to add the status line: build it with "
                "Governor.for_model(model, budget_visible=True)"
            )
        return governor
    return Governor.for_model(
        model,
        budget=budget,
        trigger=trigger,
        target=target,
        registry=registry,
        policy=policy,
        compressor=compressor,
        compaction=compaction,
        summary_role=summary_role,
        on_event=on_event,
        budget_visible=budget_visible,
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
        budget_visible: End every call's input with the budget status line (``context 61%
            used; compaction at 80%``; counted in the budget, never stored in the session);
            give the agent ``filter.tools()`` for the ``compact_context()`` tool, which asks for
            a compaction at the next call (docs/control.md).

    Each call costs O(new items) while the input extends the previous call's, as it does along
    a run and across runs of one session; one filter per conversation keeps it so (a filter
    shared between conversations stays correct, and re-reads the input when it switches).
    """

    def __init__(
        self,
        model: str,
        *,
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
        budget_visible: bool = False,
        **unknown: object,
    ) -> None:
        if unknown:
            raise ConfigError.unknown_options(
                "CompactkitInputFilter", unknown, [*SHARED_OPTIONS, "budget_visible"]
            )
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
            budget_visible=budget_visible,
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

    def tools(self) -> list[FunctionTool]:
        """The ``compact_context()`` tool, as the SDK's tool: the agent asks for a compaction
        of the conversation this filter governs, run at its next model call when the policy
        can make progress (``Governor.request_compaction``; the answer says what happens).
        Pass it with the agent's own: ``Agent(tools=[*my_tools, *filter.tools()])``."""
        function = compact_context_function(self.governor, self._compactor.governed_memory)
        return [function_tool(function, name_override="compact_context")]

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
        """The schemas the SDK sends with this agent's model call: its function tools, a tool
        per handoff, and its output type's JSON schema (sent as the response format; counted
        as one function's schema, no count of that form being published)."""
        tools = list(getattr(agent, "tools", None) or ())
        handoffs = list(getattr(agent, "handoffs", None) or ())
        output_type = getattr(agent, "output_type", None)
        held = [*tools, *handoffs, output_type]
        key = tuple(id(part) for part in held)
        cached = self._tools
        if cached is not None and cached[0] == key:
            return cached[2]
        converted = [
            Tool(name=t.name, description=t.description or None, parameters=t.params_json_schema)
            for t in tools
            if isinstance(t, FunctionTool)  # hosted tools are sized by the provider
        ]
        for target in handoffs:
            made = target if isinstance(target, Handoff) else handoff(target)
            converted.append(
                Tool(
                    name=made.tool_name,
                    description=made.tool_description or None,
                    parameters=made.input_json_schema or None,
                )
            )
        if output_type is not None and output_type is not str:
            schema = (
                output_type
                if isinstance(output_type, AgentOutputSchemaBase)
                else AgentOutputSchema(output_type)
            )
            if not schema.is_plain_text():
                converted.append(Tool(name=schema.name(), parameters=schema.json_schema()))
        self._tools = (key, held, converted)
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
