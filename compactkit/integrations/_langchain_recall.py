"""``recall`` and ``expand`` as LangChain tools, over one memory or over the archive of the
thread a middleware governs (``compactkit.integrations.langchain.recall_tools`` picks)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import BaseTool, StructuredTool

from compactkit.budget import TokenCounter
from compactkit.integrations._mirror import Mirrors
from compactkit.runtime.recall_tools import check_recall_tokens, recall_functions

__all__ = ["recall_tools_over"]

_Functions = tuple[Callable[[str], str], Callable[[str], str]]


def recall_tools_over(
    source: object,
    thread_of: Callable[[object], str | None],
    *,
    max_tokens: int,
    counter: TokenCounter | None,
    limit: int,
) -> list[BaseTool]:
    """The two tools over ``source``: a ``Mirrors`` (the archive of the thread a call runs
    in, ``thread_of(runtime)``) or a memory that offers recall."""
    check_recall_tokens(max_tokens)
    fixed = (
        None
        if isinstance(source, Mirrors)
        else recall_functions(source, max_tokens=max_tokens, counter=counter, limit=limit)
    )

    def call(runtime: object, which: int, argument: str) -> str:
        if fixed is not None:
            return fixed[which](argument)
        assert isinstance(source, Mirrors)
        mirror = source.get(thread_of(runtime))
        with mirror.lock:  # the middleware syncs and compacts this memory under the same lock
            functions = recall_functions(
                mirror.memory, max_tokens=max_tokens, counter=counter, limit=limit
            )
            return functions[which](argument)

    def recall(query: str, runtime: ToolRuntime[Any, Any]) -> str:
        """Search what was folded out of this conversation (earlier messages, tool calls and
        tool outputs) for these words; returns the best matches with references like #412.

        Args:
            query: Words, identifiers, error text or numbers to look for.
        """
        return call(runtime, 0, query)

    async def arecall(query: str, runtime: ToolRuntime[Any, Any]) -> str:
        return await asyncio.to_thread(call, runtime, 0, query)

    def expand(ref: str, runtime: ToolRuntime[Any, Any]) -> str:
        """Return the exact items a reference names: #412 for one item, #412-418 for a range
        (references appear in recall results and in the summary).

        Args:
            ref: The reference, for example #412 or #412-418.
        """
        return call(runtime, 1, ref)

    async def aexpand(ref: str, runtime: ToolRuntime[Any, Any]) -> str:
        return await asyncio.to_thread(call, runtime, 1, ref)

    return [
        StructuredTool.from_function(recall, coroutine=arecall, parse_docstring=True),
        StructuredTool.from_function(expand, coroutine=aexpand, parse_docstring=True),
    ]
