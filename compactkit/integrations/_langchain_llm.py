"""``LangChainLLM``: a LangChain chat model as compactkit's summarizer, and the summary compressor
``CompactkitMiddleware(summarizer=...)`` builds over it. Public from
``compactkit.integrations.langchain``; kept apart from the middleware's per-call governance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from compactkit.integrations._extras import require

require("langchain", extra="langchain", integration="compactkit.integrations.langchain")

from langchain.agents.middleware.internal_call_transformer import (  # noqa: E402
    internal_call_metadata,
)
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage  # noqa: E402
from langchain_core.messages.utils import convert_to_messages  # noqa: E402
from langchain_core.runnables import RunnableConfig  # noqa: E402
from langgraph.constants import TAG_NOSTREAM  # noqa: E402

from compactkit.compressors.base import CompressorLike  # noqa: E402
from compactkit.compressors.summary import SummaryCompressor  # noqa: E402
from compactkit.compressors.summary.llm import ChatMessage  # noqa: E402
from compactkit.errors import ConfigError  # noqa: E402
from compactkit.integrations._governed import Mode  # noqa: E402
from compactkit.integrations._langchain_options import (  # noqa: E402
    KeepMessages,
    MessagesCounter,
    check_keep,
)

__all__ = ["LangChainLLM", "summary_compressor"]


class LangChainLLM:
    """A LangChain chat model as compactkit's summarizer (the ``LLM`` protocol), so that
    ``SummaryCompressor(LangChainLLM(llm))`` writes compactkit's summary with your model.

    Its calls are tagged as LangChain's ``SummarizationMiddleware`` tags its own: metadata
    ``lc_source="summarization"`` and the internal-call mark, tag ``nostream``; so the summary's
    tokens never reach an agent's ``stream_mode="messages"`` or ``astream_events`` output.

    Args:
        model: Any ``BaseChatModel`` (``ChatOpenAI``, ``ChatAnthropic``, …). Its own retries
            add to the ``SummaryCompressor``'s (set ``max_retries=0`` on it to leave them to
            compactkit's circuit breaker).
        summary_prompt: Instructions in place of compactkit's (its system message); a
            ``{messages}`` placeholder receives compactkit's request (the summary so far, the
            conversation part, its exact facts) and the whole is sent as one human message.
            A prose answer is kept as the summary's current state, the exact facts re-added.
    """

    def __init__(self, model: BaseChatModel, *, summary_prompt: str | None = None) -> None:
        if not isinstance(model, BaseChatModel):
            raise ConfigError(
                f"LangChainLLM takes a LangChain chat model (BaseChatModel), got "
                f"{type(model).__name__}"
            )
        if summary_prompt is not None and (
            not isinstance(summary_prompt, str) or not summary_prompt.strip()
        ):
            raise ConfigError(f"summary_prompt must be non-empty text, got {summary_prompt!r}")
        self.model = model
        self.summary_prompt = summary_prompt

    def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The model's answer to ``messages`` (role/content dicts), as text."""
        return _answer(self.model.invoke(self._request(messages), config=_summary_config()))

    async def acomplete(self, messages: Sequence[ChatMessage]) -> str:
        """``complete`` for async code."""
        reply = await self.model.ainvoke(self._request(messages), config=_summary_config())
        return _answer(reply)

    def _request(self, messages: Sequence[ChatMessage]) -> list[BaseMessage]:
        prompt = self.summary_prompt
        if prompt is None:
            return convert_to_messages([dict(m) for m in messages])
        data = "\n\n".join(str(m["content"]) for m in messages if m["role"] != "system")
        if "{messages}" in prompt:
            return [HumanMessage(content=prompt.replace("{messages}", data))]
        return convert_to_messages(
            [{"role": "system", "content": prompt}, {"role": "user", "content": data}]
        )


def _summary_config() -> RunnableConfig:
    """The config of a summary call: LangChain's own for its summarization middleware."""
    return {
        "metadata": {"lc_source": "summarization", **internal_call_metadata()},
        "tags": [TAG_NOSTREAM],
    }


def summary_compressor(
    mode: Mode,
    compressor: CompressorLike | None,
    summarizer: BaseChatModel | None,
    summary_prompt: str | None,
    keep: object,
    counter: MessagesCounter | None,
) -> CompressorLike | None:
    """The compressor ``summarizer=``, ``summary_prompt=`` and ``keep=`` describe, if any."""
    if summarizer is None:
        if summary_prompt is not None or keep is not None:
            raise ConfigError(
                "summary_prompt= and keep= configure the summary summarizer= writes: pass "
                "summarizer=<chat model> (or configure your compressor= itself)"
            )
        return compressor
    if compressor is not None:
        raise ConfigError(
            "summarizer= builds the compressor: pass either summarizer= or compressor=, not both"
        )
    if mode != "compact":
        raise ConfigError(
            "summarizer= writes a summary into the state: pass mode='compact' with it"
        )
    options: dict[str, Any] = {} if counter is None else {"counter": counter}
    kind, size = check_keep(keep) if keep is not None else (None, 0)
    if kind == "tokens":
        options["keep_tokens"] = size
    built = SummaryCompressor(LangChainLLM(summarizer, summary_prompt=summary_prompt), **options)
    return KeepMessages(built, size) if kind == "messages" else built


def _answer(reply: object) -> str:
    # Not text (a tool call, an empty reply) is a failed request for the compressor, not a crash.
    return reply.text if isinstance(reply, AIMessage) and reply.text else cast(str, reply)
