"""The format-neutral prompt validator: each provider's tool-call rules, checked on items.

``validate_items(items, format=…)`` checks a prompt (as compactkit items) against the rules of
the format it is about to be sent in, and either repairs it or raises. The rules:

* all formats: call ids are unique; every function call is answered by exactly one output and
  every output answers a call; provider reasoning is never left without the call or message of
  its response (reasoning of another format is left to the adapter, which drops or refuses it);
* ``chat``: the outputs of an assistant message's calls follow that message directly;
* ``responses``: an output comes after its call (anywhere after);
* ``anthropic`` (messages of one role are merged, so turns alternate): every call of an
  assistant turn is answered in the very next user turn, and there the tool results come before
  any text.

``repair`` moves a misplaced output next to its call, drops duplicate and orphan outputs,
unanswered and duplicate calls, and reasoning left alone. A valid prompt comes back unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from compactkit.errors import ConfigError, FormatError
from compactkit.formats._common import check_mode, item_list, shown, wire_list
from compactkit.formats.anthropic import anthropic_to_items, items_to_anthropic
from compactkit.formats.responses import responses_to_items
from compactkit.items import (
    FunctionCall,
    FunctionCallOutput,
    Item,
    Message,
    ProviderCompaction,
    Reasoning,
)

__all__ = [
    "ProblemKind",
    "PromptProblem",
    "validate_anthropic",
    "validate_items",
    "validate_responses",
]

ProblemKind: TypeAlias = Literal[
    "orphan_output",
    "missing_output",
    "duplicate_call_id",
    "duplicate_output",
    "detached_reasoning",
    "result_not_first",
    "consecutive_role",
]
Target: TypeAlias = Literal["chat", "responses", "anthropic"]

_WHAT: dict[ProblemKind, str] = {
    "orphan_output": "tool output answers no call where the format needs one",
    "missing_output": "call has no output where the format needs it",
    "duplicate_call_id": "call id used twice",
    "duplicate_output": "call answered more than once",
    "detached_reasoning": "reasoning is not followed by the call or message of its response",
    "result_not_first": "tool result comes after text in its user turn",
    "consecutive_role": "two messages in a row have the same role",
}


@dataclass(frozen=True)
class PromptProblem:
    """One rule of the target API that a prompt breaks."""

    kind: ProblemKind
    """Which rule (see the module docstring)."""
    index: int
    """Index of the offending item (or wire message, for ``validate_anthropic``) in the input."""
    call_id: str | None = None
    """The call id concerned, when there is one."""
    unit: Literal["item", "message"] = "item"
    """What ``index`` counts."""

    def __str__(self) -> str:
        call = f" (call id {shown(self.call_id)})" if self.call_id is not None else ""
        return f"{self.unit} {self.index}: {_WHAT[self.kind]}{call}"


def validate_items(
    items: Sequence[Item], *, format: Target, mode: Literal["raise", "repair"] = "raise"
) -> tuple[list[Item], list[PromptProblem]]:
    """Check items against the rules of ``format`` (see the module docstring).

    Returns:
        The items (repaired in ``repair`` mode; the input as a list when valid) and the
        problems found.

    Raises:
        FormatError: in ``raise`` mode, when there is any problem; it lists them all.
    """
    items = item_list(items, "validate_items")
    if format not in ("chat", "responses", "anthropic"):
        raise ConfigError(f"format must be 'chat', 'responses' or 'anthropic', got {shown(format)}")
    check_mode(mode)
    order, problems = _plan_repair(items, format)
    if mode == "raise":
        _raise_problems(problems, format)
    return [items[i] for i in order], problems


def validate_responses(
    input_items: Sequence[Mapping[str, Any]], *, mode: Literal["raise", "repair"] = "raise"
) -> tuple[list[dict[str, Any]], list[PromptProblem]]:
    """Check Responses input items against the API's rules; repair them or raise.

    Every ``function_call`` needs exactly one ``function_call_output`` after it, every output
    needs its call before it, call ids are unique, and a ``reasoning`` item must be followed by
    an item of its response (a function call or an assistant message). ``repair`` moves an
    output found before its call to after it, drops duplicate and orphan outputs, unanswered or
    duplicate calls, and reasoning left without the item it belongs to.

    Returns:
        The items (the input as a list when valid) and the problems found.

    Raises:
        FormatError: in ``raise`` mode, when there is any problem; it lists them all.
    """
    check_mode(mode)
    input_items = wire_list(input_items, "validate_responses", "Responses input items")
    order, problems = _plan_repair(responses_to_items(input_items), "responses")
    if mode == "raise":
        _raise_problems(problems, "responses")
    return [dict(input_items[i]) for i in order], problems


def validate_anthropic(
    messages: Sequence[Mapping[str, Any]], *, mode: Literal["raise", "repair"] = "raise"
) -> tuple[list[dict[str, Any]], list[PromptProblem]]:
    """Check Anthropic messages against the API's rules; repair them or raise.

    Roles must alternate; every ``tool_use`` must be answered by a ``tool_result`` in the very
    next user message, before any text there; a ``tool_result`` must answer a ``tool_use`` of
    the message right before it; tool ids are unique; thinking blocks stay with the content of
    their turn. ``repair`` merges same-role neighbours, moves results to where they belong,
    drops unanswered calls, orphan results and thinking left alone.

    Returns:
        The messages (rebuilt in ``repair`` mode; the input as a list when valid) and the
        problems, indexed by message.

    Raises:
        FormatError: in ``raise`` mode, when there is any problem; it lists them all.
    """
    check_mode(mode)
    messages = wire_list(messages, "validate_anthropic", "Anthropic messages")
    problems: list[PromptProblem] = []
    items: list[Item] = []
    origin: list[int] = []
    for index, message in enumerate(messages):
        try:
            converted = anthropic_to_items([message])
        except FormatError as exc:
            raise FormatError(f"message {index}: {str(exc).removeprefix('message 0: ')}") from None
        if index and message.get("role") == messages[index - 1].get("role"):
            problems.append(PromptProblem("consecutive_role", index, unit="message"))
        items += converted
        origin += [index] * len(converted)
    order, item_problems = _plan_repair(items, "anthropic")
    problems += [
        PromptProblem(p.kind, origin[p.index], p.call_id, unit="message") for p in item_problems
    ]
    problems.sort(key=lambda p: p.index)
    if mode == "raise":
        _raise_problems(problems, "anthropic")
    if not problems:
        return [dict(m) for m in messages], []
    return items_to_anthropic([items[i] for i in order]).messages, problems


def _raise_problems(problems: Sequence[PromptProblem], format: str) -> None:
    """Raise ``FormatError`` listing ``problems``, if there are any."""
    if problems:
        listing = "; ".join(str(p) for p in problems)
        raise FormatError(
            f"{format} prompt breaks the tool-call rules: {listing}. "
            "Fix the transcript, or validate with mode='repair'"
        )


def _plan_repair(items: Sequence[Item], format: Target) -> tuple[list[int], list[PromptProblem]]:
    """The indices of ``items`` to keep, in their repaired order, and the problems found."""
    planner = _Planner(items, format)
    order = planner.plan()
    order = planner.drop_detached_reasoning(order)
    if not planner.problems:
        return list(range(len(items))), []
    return order, sorted(planner.problems, key=lambda p: p.index)


class _Planner:
    def __init__(self, items: Sequence[Item], format: Target) -> None:
        self.items = items
        self.format = format
        self.problems: list[PromptProblem] = []
        self.used: set[int] = set()  # outputs already given to a call
        self.seen_calls: set[str] = set()
        self.kept_calls: set[str] = set()
        self.outputs: dict[str, list[int]] = {}
        for index, item in enumerate(items):
            if isinstance(item, FunctionCallOutput):
                self.outputs.setdefault(item.call_id, []).append(index)

    def problem(self, kind: ProblemKind, index: int, call_id: str | None = None) -> None:
        self.problems.append(PromptProblem(kind, index, call_id))

    def plan(self) -> list[int]:
        if self.format == "responses":
            return self._plan_anywhere()
        order: list[int] = []
        n = len(self.items)
        i = 0
        while i < n:
            if not self._opens_turn(i):
                if isinstance(self.items[i], FunctionCallOutput):
                    self._unplaced_output(i)
                else:
                    order.append(i)
                i += 1
                continue
            stop = i
            while stop < n and self._in_call_turn(stop):
                stop += 1
            reply = stop
            while reply < n and self._in_reply_turn(reply):
                reply += 1
            order += self._plan_turn(range(i, stop), range(stop, reply))
            i = reply
        return order

    # chat: a call turn is a run of function calls (reasoning between them rides along), its
    # reply the tool outputs right after. anthropic: an assistant turn and the user turn after.

    def _opens_turn(self, i: int) -> bool:
        item = self.items[i]
        if self.format == "chat":
            return isinstance(item, FunctionCall)
        return _side(item) == "assistant"

    def _in_call_turn(self, i: int) -> bool:
        item = self.items[i]
        if self.format == "chat":
            return isinstance(item, (FunctionCall, Reasoning))
        return _side(item) in ("assistant", None)

    def _in_reply_turn(self, i: int) -> bool:
        item = self.items[i]
        if self.format == "chat":
            return isinstance(item, FunctionCallOutput)
        return _side(item) in ("user", None)

    def _plan_turn(self, turn: range, reply: range) -> list[int]:
        adjacent: dict[str, int] = {}
        for j in reply:
            output = self.items[j]
            if isinstance(output, FunctionCallOutput):
                adjacent.setdefault(output.call_id, j)
        kept: list[int] = []
        answers: list[int] = []
        for i in turn:
            call = self.items[i]
            if not isinstance(call, FunctionCall):
                kept.append(i)
                continue
            if not self._new_call(i, call):
                continue
            answer = adjacent.get(call.call_id)
            if answer is None or answer in self.used:
                self.problem("missing_output", i, call.call_id)
                later = [j for j in self.outputs.get(call.call_id, []) if j > i]
                answer = next((j for j in later if j not in self.used), None)
            if answer is None:
                continue
            self.used.add(answer)
            self.kept_calls.add(call.call_id)
            answers.append(answer)
            kept.append(i)
        rest: list[int] = []
        text_seen = False
        for j in reply:
            item = self.items[j]
            if not isinstance(item, FunctionCallOutput):
                text_seen = text_seen or isinstance(item, Message)
                rest.append(j)
            elif j in answers and text_seen:
                self.problem("result_not_first", j, item.call_id)
            elif j not in self.used:
                self._unplaced_output(j)
        return kept + answers + rest

    def _plan_anywhere(self) -> list[int]:
        kept_calls: set[int] = set()
        after_call: dict[int, int] = {}  # an output found before its call -> that call
        for i, call in enumerate(self.items):
            if not isinstance(call, FunctionCall) or not self._new_call(i, call):
                continue
            candidates = [j for j in self.outputs.get(call.call_id, []) if j not in self.used]
            answer = next((j for j in candidates if j > i), None)
            if answer is None:
                self.problem("missing_output", i, call.call_id)
                answer = next(iter(candidates), None)
                if answer is None:
                    continue
                after_call[answer] = i
            self.used.add(answer)
            self.kept_calls.add(call.call_id)
            kept_calls.add(i)
        order: list[int] = []
        for i, item in enumerate(self.items):
            if isinstance(item, FunctionCallOutput):
                if i not in self.used:
                    self._unplaced_output(i)
                elif i not in after_call:
                    order.append(i)
            elif not isinstance(item, FunctionCall) or i in kept_calls:
                order.append(i)
                order += [j for j, c in after_call.items() if c == i]
        return order

    def _new_call(self, i: int, call: FunctionCall) -> bool:
        if call.call_id in self.seen_calls:
            self.problem("duplicate_call_id", i, call.call_id)
            return False
        self.seen_calls.add(call.call_id)
        return True

    def _unplaced_output(self, i: int) -> None:
        output = self.items[i]
        assert isinstance(output, FunctionCallOutput)
        kind: ProblemKind = (
            "duplicate_output" if output.call_id in self.kept_calls else "orphan_output"
        )
        self.problem(kind, i, output.call_id)

    def drop_detached_reasoning(self, order: list[int]) -> list[int]:
        """Drop reasoning of the target format that no call or assistant message follows."""
        kept: list[int] = []
        pending: list[int] = []  # reasoning waiting for the item it belongs to
        for i in order:
            item = self.items[i]
            if isinstance(item, Reasoning):
                pending.append(i)
                continue
            belongs = isinstance(item, FunctionCall) or (
                isinstance(item, Message) and item.role == "assistant"
            )
            kept += pending if belongs else self._detached(pending)
            pending = []
            kept.append(i)
        return kept + self._detached(pending)

    def _detached(self, reasoning: list[int]) -> list[int]:
        """Report the target's reasoning among ``reasoning``; keep another format's for the
        adapter, which refuses or drops it."""
        kept: list[int] = []
        for i in reasoning:
            item = self.items[i]
            if isinstance(item, Reasoning) and item.format == self.format:
                self.problem("detached_reasoning", i)
            else:
                kept.append(i)
        return kept


def _side(item: Item) -> Literal["assistant", "user"] | None:
    """Which Anthropic turn an item belongs to; ``None`` for system messages (not in turns)."""
    if isinstance(item, (FunctionCall, Reasoning, ProviderCompaction)):
        return "assistant"  # (Anthropic's compaction block is part of an assistant message)
    if isinstance(item, FunctionCallOutput):
        return "user"
    if item.role in ("assistant", "user"):
        return item.role
    return None
