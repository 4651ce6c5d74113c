"""``MessageCompactor`` and its result, ``CompactedMessages``: the stateful form of governing a
plain message list (public from ``compactkit.integrations.messages``, which also holds the
stateless ``compact_messages``). It remembers the conversation it governed, so each call on a
growing list converts, counts and indexes only the new messages (reading them into its memory
is ``_compactor_read.ListReader``; this module prepares a call and builds its result)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from copy import deepcopy
from typing import TYPE_CHECKING, Any

from compactkit.budget.profiles import ProfileRegistry
from compactkit.compressors import without_provenance
from compactkit.compressors.base import CompressorLike
from compactkit.errors import ConfigError
from compactkit.governance.policy import CompactPolicy, TriggerLike
from compactkit.governance.projector import ContextProjector, Projection
from compactkit.integrations._cold import shift_report
from compactkit.integrations._compacted import (
    COMPACTOR_OPTIONS,
    CompactedMessages,
    Prepared,
    Seen,
    check_governor,
)
from compactkit.integrations._compactor_read import ListReader
from compactkit.integrations._originals import kept
from compactkit.integrations._seen import SeenList
from compactkit.integrations._wire import MessageFormat, WireConverter
from compactkit.items import Message, Tool
from compactkit.items.snapshot import SummaryRole
from compactkit.memory.base import AgentMemory
from compactkit.runtime.events import Event, ProjectionEvent
from compactkit.runtime.governor import GovernedStep, Governor

if TYPE_CHECKING:  # the preview loads with its first use (it pulls in the summarizer)
    from compactkit.compressors.preview import CompactionPreview
    from compactkit.runtime.background import BackgroundCompaction  # (asyncio: with its use)

__all__ = ["COMPACTOR_OPTIONS", "CompactedMessages", "MessageCompactor"]


class MessageCompactor(ListReader):
    """Governs one growing conversation: call it with the whole list before every model call.

    Args:
        model: The model the prompts are for (its profile gives the budget and the counter).
        format: ``"chat"``, ``"responses"`` or ``"anthropic"``; ``None`` detects it from the
            messages (named is faster and never guesses).
        tools: The tools offered on every call (compactkit ``Tool``s or the format's tool
            dicts); a call may override them.
        registry: Where to look the model up (default: the process-wide registry).
        governor: A ready ``Governor`` (then the options below must not be given).
        budget: The usable input budget in tokens (default: the model profile's); it sizes
            both the projection and the compaction policy.
        trigger: When to compact (tokens, a share of the budget, or a trigger).
        target: Down to what (tokens or a share); without it a ``trigger`` gets one below it.
        compaction: ``False``: only project (drop old turns and mask bulky outputs from the
            prompt), never summarise the history.
        policy: When to compact and down to what (default: the model's budget policy).
        compressor: What compacts (default: the ``LadderCompressor``, no LLM).
        summary_role: The role of the summary message (default ``DEFAULT_SUMMARY_ROLE``: ``user``).
        projector: Replaces the default projector.
        on_event: Called with every event (passthrough warnings, compactions, projections).
        background: Compact in the background from a soft threshold on (docs/background.md).

    It costs O(new messages) per call as long as each list extends the one given before, or
    the ``history`` it returned; any other list is read again from the start. One compactor
    serves one conversation: sync calls on it are serialised; await one ``acall`` at a time.
    """

    def __init__(
        self,
        model: str,
        *,
        format: MessageFormat | None = None,
        tools: Sequence[Any] | None = None,
        registry: ProfileRegistry | None = None,
        governor: Governor | None = None,
        budget: int | None = None,
        trigger: TriggerLike | int | float | None = None,
        target: int | float | None = None,
        compaction: bool = True,
        policy: CompactPolicy | None = None,
        compressor: CompressorLike | None = None,
        summary_role: SummaryRole | None = None,
        projector: ContextProjector | None = None,
        on_event: Callable[[Event], None] | None = None,
        background: BackgroundCompaction | None = None,
        **unknown: object,
    ) -> None:
        if unknown:
            raise ConfigError.unknown_options("MessageCompactor", unknown, COMPACTOR_OPTIONS)
        if governor is not None:
            options = (
                *(policy, compressor, summary_role, projector, registry, background),
                *(budget, trigger, target),
            )
            check_governor(governor, options, compaction)
        else:
            governor = Governor.for_model(
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
                on_event=on_event,
                background=background,
            )
        self.model = model
        self.governor = governor
        self.on_event = on_event
        self._format = format
        self._converter = WireConverter(format or "chat")
        self._decided = format is not None
        self._tools_given = tools
        self._tool_cache: tuple[tuple[int, ...], list[Any], list[Tool]] | None = None
        self._instruction_cache: tuple[str, Any, list[Message]] | None = None
        self._lock = threading.Lock()
        self._last_projection: Projection | None = None
        self._reset()

    @property
    def format(self) -> MessageFormat | None:
        """The conversation's format (``None`` until messages decided it)."""
        return self._converter.format if self._decided else None

    def __call__(
        self,
        messages: Sequence[Any],
        *,
        tools: Sequence[Any] | None = None,
        instructions: str | None = None,
        system: Any = None,
        usage: int | None = None,
    ) -> CompactedMessages:
        """Govern ``messages`` for this call.

        Args:
            messages: The whole conversation so far, oldest first.
            tools: This call's tools (default: the compactor's).
            instructions: Responses ``instructions`` (counted; send them as you do now).
            system: Anthropic ``system`` (counted; send ``result.system`` instead).
            usage: The provider's ``prompt_tokens`` for the previous call (calibrates the count
                and feeds the policy's usage trigger).

        Raises:
            BudgetError: what may never be dropped (instructions, the latest user input,
                pending calls, passed-through messages) does not fit the budget.
            ConfigError: ``messages`` is not a list, or an argument is malformed.
        """
        with self._lock:
            prepared = self._prepare(messages, tools, instructions, system)
            version = self._memory.version
            # The mirror's seqs are nobody's to expand, and a new reader of the returned list
            # numbers it afresh: summaries of plain lists carry no references.
            try:
                with without_provenance():
                    step = self.governor.step(
                        self._memory,
                        instructions=prepared.instructions,
                        tools=prepared.tools,
                        usage=usage,
                    )
            except BaseException:
                self._raised(version)
                raise
            return self._finish(messages, prepared, step)

    async def acall(
        self,
        messages: Sequence[Any],
        *,
        tools: Sequence[Any] | None = None,
        instructions: str | None = None,
        system: Any = None,
        usage: int | None = None,
    ) -> CompactedMessages:
        """``__call__`` for async code: an async compressor is awaited, and counting and a sync
        compressor run off the event loop (``Governor.astep``)."""
        prepared = self._prepare(messages, tools, instructions, system)
        version = self._memory.version
        try:
            with without_provenance():  # (see ``__call__``)
                step = await self.governor.astep(
                    self._memory,
                    instructions=prepared.instructions,
                    tools=prepared.tools,
                    usage=usage,
                )
        except BaseException:
            self._raised(version)
            raise
        return self._finish(messages, prepared, step)

    def preview(
        self,
        messages: Sequence[Any],
        *,
        tools: Sequence[Any] | None = None,
        instructions: str | None = None,
        system: Any = None,
    ) -> CompactionPreview:
        """What a compaction of ``messages`` would do now (``Governor.preview``), without
        compacting: the compactor reads the messages as a call would, and changes nothing else.

        Raises:
            ConfigError: as for a call, or the compressor cannot be previewed.
        """
        with self._lock:
            prepared = self._prepare(messages, tools, instructions, system)
            return self.governor.preview(
                self._memory, instructions=prepared.instructions, tools=prepared.tools
            )

    def observe_usage(self, prompt_tokens: int) -> None:
        """Report the provider's ``prompt_tokens`` for the latest call's prompt: it calibrates
        the count (``Governor.observe_usage``) and feeds the policy's usage trigger.

        Raises:
            ConfigError: no call was governed yet, or ``prompt_tokens`` is not a count.
        """
        projection = self._last_projection
        if projection is None:
            raise ConfigError("observe_usage() reports on the latest call: govern a call first")
        self.governor.observe_usage(prompt_tokens, projection)

    def governed_memory(self) -> AgentMemory:
        """The memory this compactor mirrors the conversation into (what its governor steps;
        ``Governor.request_compaction(compactor.governed_memory())`` asks for a compaction of
        it at the next call). With compaction off, a first call on a long list leaves the
        messages no prompt can reach unread: the memory then holds the instructions and the
        reachable end of the list (docs/projector.md)."""
        return self._memory

    def reset(self) -> None:
        """Forget the conversation (the next call reads its list from the start)."""
        with self._lock:
            self._reset()

    def _continues(self, messages: Sequence[Any]) -> bool:
        """Whether ``messages`` continues a list this compactor read: it holds the very last
        message read (not an equal copy: equal lists of two conversations stay apart) and
        starts with the others (O(1), ``SeenList``)."""
        with self._lock:
            return any(seen.messages.continued_by(messages) for seen in self._seen)

    # -- internals -----------------------------------------------------------------------------

    def _prepare(
        self,
        messages: Sequence[Any],
        tools: Sequence[Any] | None,
        instructions: str | None,
        system: Any,
    ) -> Prepared:
        if type(messages) is not list and (  # (a list: no ABC check, every call)
            isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence)
        ):
            raise ConfigError(
                f"messages must be a list of messages, got {type(messages).__name__}"
                + ("; wrap a single message in a list" if isinstance(messages, dict) else "")
            )
        if instructions is not None and system is not None:
            raise ConfigError("pass instructions= (Responses) or system= (Anthropic), not both")
        prepared = Prepared(instructions=[], tools=[])
        self._ingest(messages, prepared.events)
        if system is not None and not self._decided:
            # Only Anthropic has a top-level system prompt; the plain text messages read so far
            # read the same in every format.
            self._converter.format, self._decided = "anthropic", True
        converter = self._converter
        if system is not None:
            if converter.format != "anthropic":
                raise ConfigError(
                    f"system= is Anthropic's top-level prompt, but these are {converter.format} "
                    "messages: put the system message first in the list (chat) or pass "
                    "instructions= (responses)"
                )
            prepared.instructions = self._instructions(("system", system))
        elif instructions is not None:
            if not isinstance(instructions, str):
                raise ConfigError(f"instructions must be a string, got {instructions!r:.80}")
            prepared.instructions = self._instructions(("instructions", instructions))
        prepared.tools = self._tools(tools if tools is not None else self._tools_given)
        return prepared

    def _instructions(self, key: tuple[str, Any]) -> list[Message]:
        kind, value = key
        cached = self._instruction_cache  # (compared with a copy: blocks refreshed in place)
        if cached is not None and cached[0] == kind and cached[1] == value:
            return cached[2]
        if kind == "system":
            items = self._converter.system_items(value)
            messages = [item for item in items if isinstance(item, Message)]
        else:
            messages = [Message(role="system", content=value)] if value else []
        self._instruction_cache = (kind, deepcopy(value), messages)
        return messages

    def _tools(self, tools: Sequence[Any] | None) -> list[Tool]:
        if not tools:
            return []
        key = tuple(id(tool) for tool in tools)
        cached = self._tool_cache
        if cached is not None and cached[0] == key:
            return cached[2]
        converted = self._converter.tools(tools)
        self._tool_cache = (key, list(tools), converted)  # the list keeps the ids valid
        return converted

    def _raised(self, version: int) -> None:
        """A step that raised (a ``BudgetError`` after a compaction, say): when it changed the
        memory first, the lists read no longer hold exactly what the memory holds, so the next
        call returns the history rendered from the memory (its summary and kept messages, as
        after a compaction) instead of the list given, whose prompt would carry a summary the
        list has not."""
        if self._memory.version == version:
            return
        for seen in self._seen:
            seen.exact = False
        # (as after a compaction: the folded messages' entries go, in a new map)
        self._originals = kept(self._originals, self._memory.snapshot().items)

    def _finish(
        self, messages: Sequence[Any], prepared: Prepared, step: GovernedStep
    ) -> CompactedMessages:
        converter = self._converter
        # Responses: the instructions go as the request's instructions, not as items.
        skip = len(prepared.instructions) if converter.format == "responses" else 0
        compacted = step.compacted  # (a scan of the step's events: read once)
        whole = compacted or not self._seen[0].exact  # the history is returned rendered
        snapshot = self._memory.snapshot() if whole else None
        if compacted:
            # The folded messages' entries go: the kept ones are those of the items still
            # active, in a new map (a new object: no earlier conversion resumes with it), made
            # before this call's conversions, which the next call then resumes.
            self._originals = kept(self._originals, snapshot.items)  # type: ignore[union-attr]
        system, send = converter.from_items(step.items, self._originals, skip=skip)
        history: list[Any]
        if snapshot is not None:
            # Anthropic's summary stays in the messages (a user block), so the list is whole.
            role: SummaryRole = (
                "user" if converter.format == "anthropic" else self.governor.projector.summary_role
            )
            rendered = snapshot.render_items(summary_role=role)
            like = converter.converted_like(rendered, self._originals, like="send", slot="history")
            history = (
                like
                if like is not None
                else converter.from_items(rendered, self._originals, slot="history")[1]
            )
            self._seen = [Seen(SeenList(messages), exact=False), Seen(SeenList(history))]
        else:
            history = messages if isinstance(messages, list) else list(messages)
        projection = step.projection
        self._last_projection = projection
        report, events = projection.report, step.events
        if self._unread is not None:
            report = shift_report(report, *self._unread)
            events = tuple(
                dataclasses.replace(event, omitted=report.omitted, notes=report.notes)
                if isinstance(event, ProjectionEvent)
                else event
                for event in events
            )
        return CompactedMessages(
            send=send,
            history=history,
            report=report,
            format=converter.format,
            tokens=projection.tokens,
            budget=projection.budget,
            system=system if converter.format == "anthropic" else None,
            compacted=compacted,
            compaction=step.compaction,
            events=(*prepared.events, *events),
        )
