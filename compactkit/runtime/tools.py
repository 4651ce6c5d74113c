"""Tools: plain Python functions (sync or async) the model may call.

``FunctionTool.from_function(fn)`` (or the ``@tool`` decorator) reads the function's type hints
into a pydantic model: its JSON schema is what the model sees, and it validates the arguments
the model sends. The description is the docstring's text before its sections; Google-style
``Args:`` entries become the parameters' descriptions.

Running a call never raises: invalid JSON, invalid arguments, an unknown tool, a raising tool
and a timeout all become an error output (``is_error=True``) the model reads, and the loop goes
on. A sync tool in an async run runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from compactkit.errors import ConfigError
from compactkit.items import FunctionCall, Tool

__all__ = ["FunctionTool", "ToolOutcome", "tool"]

INTERRUPTED = (
    "Error: this call was interrupted before it returned (the session stopped between the call "
    "and its output); its effect is unknown. Call the tool again if you still need its result."
)

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Returns|Yields|Raises|Example|Examples|Note|Notes):\s*$"
)
_ARG = re.compile(r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_POOL = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="compactkit-tool")


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one tool call, as it is stored."""

    call_id: str
    """The call it answers."""
    name: str
    """The tool name the model sent."""
    output: str
    """What the model reads: the tool's result, or the error."""
    is_error: bool = False
    """Whether ``output`` is an error."""
    duration_s: float = 0.0
    """Wall time of the call."""


@dataclass(frozen=True)
class FunctionTool:
    """A Python function the model may call.

    Args:
        function: The function (sync or async).
        name: The name the model sees (default: the function's name).
        description: What the model is told it does (default: from the docstring).
        parameters: The JSON schema of the arguments (default: from the type hints).
        timeout: Seconds before a call is abandoned as an error output (``None``: the
            agent's ``tool_timeout``). A timed-out sync function cannot be stopped: it finishes
            in its worker thread, and its result is discarded.
        rerun_on_resume: Whether a call interrupted by a crash may be run again when the
            session resumes (safe for read-only tools); otherwise the model is told it was
            interrupted.
    """

    function: Callable[..., Any]
    name: str
    description: str
    parameters: dict[str, Any]
    timeout: float | None = None
    rerun_on_resume: bool = False
    arguments_model: type[BaseModel] = field(repr=False, default=BaseModel)

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any] | FunctionTool,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        rerun_on_resume: bool = False,
    ) -> FunctionTool:
        """Read a function's signature, type hints and docstring into a tool.

        Raises:
            ConfigError: ``function`` is not callable, takes ``*args``/``**kwargs``, or a type
                hint cannot be turned into a JSON schema.
        """
        if isinstance(function, FunctionTool):
            return function
        if not callable(function):
            raise ConfigError(f"a tool must be a function, got {function!r:.80}")
        tool_name = name or getattr(function, "__name__", None)
        if not tool_name or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool_name):
            raise ConfigError(
                f"tool name {tool_name!r} must be 1-64 letters, digits, '_' or '-': pass name="
            )
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"timeout must be positive seconds or None, got {timeout!r}")
        summary, arg_docs = _parse_docstring(inspect.getdoc(function) or "")
        model = _arguments_model(function, tool_name, arg_docs)
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return cls(
            function=function,
            name=tool_name,
            description=description if description is not None else summary,
            parameters=schema,
            timeout=timeout,
            rerun_on_resume=rerun_on_resume,
            arguments_model=model,
        )

    @property
    def is_async(self) -> bool:
        """Whether the function is a coroutine function."""
        return inspect.iscoroutinefunction(self.function)

    def schema(self) -> Tool:
        """The tool as compactkit's ``Tool`` (what is sent and counted)."""
        return Tool(
            name=self.name, description=self.description or None, parameters=self.parameters
        )

    def parse(self, arguments: str) -> dict[str, Any]:
        """Validate the model's JSON ``arguments``; ``ValueError`` says what is wrong."""
        try:
            raw = json.loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            raise ValueError(
                f"the arguments are not valid JSON ({exc}): {arguments[:200]!r}"
            ) from None
        if not isinstance(raw, dict):
            raise ValueError(f"the arguments must be a JSON object, got {arguments[:200]!r}")
        try:
            validated = self.arguments_model.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, error['loc'])) or 'arguments'}: {error['msg']}"
                for error in exc.errors()
            )
            raise ValueError(f"invalid arguments: {problems}") from None
        return {key: getattr(validated, key) for key in type(validated).model_fields}


@overload
def tool(function: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    rerun_on_resume: bool = False,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    rerun_on_resume: bool = False,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a function a ``FunctionTool``; use bare (``@tool``) or with options
    (``@tool(timeout=10, rerun_on_resume=True)``)."""

    def wrap(fn: Callable[..., Any]) -> FunctionTool:
        return FunctionTool.from_function(
            fn, name=name, description=description, timeout=timeout, rerun_on_resume=rerun_on_resume
        )

    return wrap if function is None else wrap(function)


def as_tools(tools: Sequence[Callable[..., Any] | FunctionTool]) -> dict[str, FunctionTool]:
    """Tools by name; a bare function is read with ``FunctionTool.from_function``.

    Raises:
        ConfigError: two tools share a name.
    """
    if isinstance(tools, Mapping) or callable(tools):
        raise ConfigError("tools= takes a list of functions or FunctionTools")
    out: dict[str, FunctionTool] = {}
    for item in tools:
        converted = FunctionTool.from_function(item)
        if converted.name in out:
            raise ConfigError(f"two tools are named {converted.name!r}: pass name= to one of them")
        out[converted.name] = converted
    return out


# -- running calls ------------------------------------------------------------------------------


def run_call(
    call: FunctionCall, tools: Mapping[str, FunctionTool], default_timeout: float | None
) -> ToolOutcome:
    """Run one call in the calling thread's world (sync run); never raises for the call."""
    started = time.perf_counter()
    found = _lookup(call, tools)
    if isinstance(found, str):
        return _error(call, found, started)
    function_tool, kwargs = found
    timeout = function_tool.timeout if function_tool.timeout is not None else default_timeout
    try:
        if function_tool.is_async:
            value = asyncio.run(_awaited(function_tool.function(**kwargs), timeout))
        elif timeout is None:
            value = function_tool.function(**kwargs)
        else:
            value = _POOL.submit(function_tool.function, **kwargs).result(timeout=timeout)
    except (TimeoutError, concurrent.futures.TimeoutError):
        return _error(call, f"the tool {call.name!r} timed out after {timeout} s", started)
    except Exception as exc:
        return _error(call, f"the tool {call.name!r} raised {type(exc).__name__}: {exc}", started)
    return _success(call, value, started)


async def arun_call(
    call: FunctionCall, tools: Mapping[str, FunctionTool], default_timeout: float | None
) -> ToolOutcome:
    """Run one call without blocking the event loop (a sync tool runs in a worker thread)."""
    started = time.perf_counter()
    found = _lookup(call, tools)
    if isinstance(found, str):
        return _error(call, found, started)
    function_tool, kwargs = found
    timeout = function_tool.timeout if function_tool.timeout is not None else default_timeout
    try:
        if function_tool.is_async:
            value = await _awaited(function_tool.function(**kwargs), timeout)
        else:
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(_POOL, lambda: function_tool.function(**kwargs))
            value = await asyncio.wait_for(future, timeout)
    except (TimeoutError, asyncio.TimeoutError):
        return _error(call, f"the tool {call.name!r} timed out after {timeout} s", started)
    except Exception as exc:
        return _error(call, f"the tool {call.name!r} raised {type(exc).__name__}: {exc}", started)
    return _success(call, value, started)


def interrupted(call: FunctionCall) -> ToolOutcome:
    """The error output of a call a crash left without output and that is not re-run."""
    return ToolOutcome(call.call_id, call.name, INTERRUPTED, is_error=True)


async def _awaited(awaitable: Awaitable[Any], timeout: float | None) -> Any:
    return await asyncio.wait_for(awaitable, timeout)


def _lookup(
    call: FunctionCall, tools: Mapping[str, FunctionTool]
) -> tuple[FunctionTool, dict[str, Any]] | str:
    function_tool = tools.get(call.name)
    if function_tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return f"there is no tool named {call.name!r} (available: {known})"
    try:
        return function_tool, function_tool.parse(call.arguments)
    except ValueError as exc:
        return f"{exc} (tool {call.name!r}); call it again with arguments matching its schema"


def _success(call: FunctionCall, value: Any, started: float) -> ToolOutcome:
    return ToolOutcome(
        call_id=call.call_id,
        name=call.name,
        output=_as_text(value),
        duration_s=time.perf_counter() - started,
    )


def _error(call: FunctionCall, message: str, started: float) -> ToolOutcome:
    return ToolOutcome(
        call_id=call.call_id,
        name=call.name,
        output=f"Error: {message}",
        is_error=True,
        duration_s=time.perf_counter() - started,
    )


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if value is None:
        return ""
    try:
        return json.dumps(value, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


# -- reading functions --------------------------------------------------------------------------


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The text before the first section, and the ``Args:`` entries."""
    lines = doc.splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            summary.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            entry = _ARG.match(line)
            if entry and (current is None or len(line) - len(line.lstrip()) <= 4):
                current = entry.group(1).lstrip("*")
                args[current] = entry.group(2).strip()
            elif current is not None and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), args


def _arguments_model(
    function: Callable[..., Any], name: str, docs: Mapping[str, str]
) -> type[BaseModel]:
    try:
        signature = inspect.signature(function)
        hints = get_type_hints(function)
    except (TypeError, ValueError, NameError) as exc:
        raise ConfigError(f"cannot read the signature of tool {name!r}: {exc}") from exc
    fields: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ConfigError(
                f"tool {name!r} takes *{parameter.name}: a tool's parameters must be named, "
                "so the model knows what to send"
            )
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (
            annotation,
            Field(default, description=docs.get(parameter.name) or None),
        )
    try:
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        model.model_json_schema()
    except Exception as exc:
        raise ConfigError(
            f"tool {name!r}: its type hints cannot become a JSON schema ({exc}); use JSON types "
            "(str, int, float, bool, list, dict, pydantic models, Literal)"
        ) from exc
    return model
