"""The request contract (docs/agent.md, "The contract"), checked on what reached a model.

Every entry point's requests are captured where they leave compactkit (the HTTP body the
``openai`` SDK sent, the messages a LangChain chat model or a pydantic-ai ``FunctionModel`` was
called with, the items a ``Governor`` step or ``compact_messages`` handed back) and turned into
compactkit items by the formats' own readers; ``RequestChecker`` then holds rows a-g on each.
A module of its own (not a conftest): the suites of every entry point share it.
"""

from __future__ import annotations

import json
import lzma
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compactkit.budget import counter_for
from compactkit.formats.chat import chat_to_items, tools_from_chat
from compactkit.formats.responses import responses_to_items, tools_from_responses
from compactkit.formats.validate import validate_items
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool
from compactkit.items.snapshot import is_summary_message, unseal_summary

CUT_MARKER = "[cut by compactkit: "


def body_items(body: dict[str, Any]) -> tuple[list[Item], list[Tool]]:
    """The items and tools of an OpenAI request body (Chat Completions or Responses)."""
    if "messages" in body:
        return chat_to_items(body["messages"]), tools_from_chat(body.get("tools") or [])
    items: list[Item] = []
    if body.get("instructions"):
        items.append(Message(role="system", content=body["instructions"]))
    items += responses_to_items(body.get("input") or [])
    return items, tools_from_responses(body.get("tools") or [])


def request_tokens(body: dict[str, Any], model: str) -> int:
    """An OpenAI request body's tokens, as compactkit's counter for ``model`` bills it."""
    items, tools = body_items(body)
    return counter_for(model).count(items, tools=tools).tokens


def newest_tool_output(body: dict[str, Any]) -> tuple[str, str]:
    """The call id and text of the last item of a request, which must be a tool output whose
    call the request also carries."""
    items, _ = body_items(body)
    last = items[-1]
    assert isinstance(last, FunctionCallOutput), f"the request ends with {last!r:.120}"
    calls = {item.call_id for item in items if isinstance(item, FunctionCall)}
    assert last.call_id in calls, f"the newest output {last.call_id!r} was sent without its call"
    return last.call_id, last.text


def text_of(item: Item) -> str:
    """The text a model reads of ``item`` (a call's name and arguments for a call)."""
    if isinstance(item, FunctionCall):
        return f"{item.name}({item.arguments})"
    if isinstance(item, FunctionCallOutput | Message):
        return item.text
    return ""


@dataclass
class RequestChecker:
    """Holds contract rows a-g on each request of one conversation, in order.

    The scenario tells it what it did: ``instructions`` (sent first), the ``task`` tag (in the
    first user message), every ``rule`` tag as the user gives it, and the newest group after
    each step (``newest``: the texts of the outputs the model asked for last, or the newest user
    input). ``check(items, tools)`` then asserts every row on the request.
    """

    model: str
    budget: int
    instructions: str | None = None
    task: str | None = None
    rules: list[str] = field(default_factory=list)
    newest: list[str] = field(default_factory=list)
    """What the newest group's outputs (or the newest user input) say, verbatim."""
    cut_allowed: bool = False
    """The newest output alone is larger than the budget: it may be cut (with the marker)."""
    folded: bool = False
    checked: int = 0

    def check(self, items: Sequence[Item], tools: Sequence[Tool] = (), *, where: str = "") -> None:
        """Assert rows a-g on one request (``items`` as sent, ``tools`` offered)."""
        where = f"request {self.checked} {where}".strip()
        items = list(items)
        texts = [text_of(item) for item in items]
        summaries = [item for item in items if is_summary_message(item)]
        joined = "\n".join(texts)
        # (a) fits the budget, counted as the provider bills it, tools included.
        tokens = counter_for(self.model).count(items, tools=tools).tokens
        assert tokens <= self.budget, f"{where}: {tokens:,} tokens over the budget {self.budget:,}"
        # (b) the newest group verbatim, and last.
        if self.newest:
            tail = texts[-len(self.newest) - 1 :] if len(texts) > len(self.newest) else texts
            for expected in self.newest:
                if self.cut_allowed and expected not in texts:
                    cut = [t for t in tail if CUT_MARKER in t]
                    assert cut, f"{where}: the newest output was neither sent nor cut"
                    assert cut[-1][:100] == expected[:100], f"{where}: a cut lost the head"
                else:
                    assert expected in tail, f"{where}: the newest output is missing or changed"
            newest = items[-1]
            assert isinstance(newest, FunctionCallOutput | Message), f"{where}: ends with {newest}"
        # (c) every rule verbatim, or in the summary.
        for rule in self.rules:
            assert rule in joined, f"{where}: the rule {rule!r} is missing"
        # (d) the task.
        if self.task is not None:
            assert self.task in joined, f"{where}: the task {self.task!r} is missing"
        # (e) no call without its output, no output without its call (pending calls aside).
        _, problems = validate_items(items, format="responses", mode="repair")
        pending = self._pending(items)
        bad = [p for p in problems if not (p.kind == "missing_output" and p.call_id in pending)]
        assert not bad, f"{where}: {'; '.join(map(str, bad))}"
        # (f) once anything was folded, the summary, exactly once.
        assert len(summaries) <= 1, f"{where}: the summary was sent {len(summaries)} times"
        if summaries:
            self.folded = True
            assert unseal_summary(text_of(summaries[0])) is not None
        elif self.folded:
            raise AssertionError(f"{where}: the summary is missing after a fold")
        # (g) the instructions first, unchanged.
        if self.instructions is not None:
            first = items[0]
            assert isinstance(first, Message) and first.role in ("system", "developer"), (
                f"{where}: the request does not start with the instructions"
            )
            assert first.text == self.instructions, f"{where}: the instructions were changed"
        self.checked += 1

    @staticmethod
    def _pending(items: Sequence[Item]) -> set[str]:
        answered = {item.call_id for item in items if isinstance(item, FunctionCallOutput)}
        calls = [item for item in items if isinstance(item, FunctionCall)]
        # Only the last response's calls may still wait for their outputs.
        return {call.call_id for call in calls[-4:] if call.call_id not in answered}


REAL_SESSION = (
    Path(__file__).resolve().parents[1]
    / "evals"
    / "benchmarks"
    / "data"
    / "mini-swe-agent-deepseek.jsonl.xz"
)
"""The bundled real session (mini-SWE-agent runs, Chat Completions messages, one per line)."""


def real_prefix(count: int, path: Path = REAL_SESSION) -> list[dict[str, Any]]:
    """The first ``count`` messages of a session file (``.jsonl.xz``)."""
    with lzma.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line, _ in zip(lines, range(count), strict=False)]


SWE_AGENT = Path(__file__).resolve().parent / "data" / "swe-agent-trajectories.jsonl.xz"
"""SWE-agent's own 22 trajectories as Chat Completions sessions (tests/data/swe-agent-trajectories.md)."""


def swe_agent_sessions() -> dict[str, list[dict[str, Any]]]:
    """Each SWE-agent trajectory's messages, by its path in SWE-agent's repository."""
    with lzma.open(SWE_AGENT, "rt", encoding="utf-8") as lines:
        return {row["source"]: row["messages"] for row in map(json.loads, lines)}


TASK_HEAD = 60
"""How much of the task's head the summary's goal must hold (SWE-agent's goal entries are the
task clipped at its first sentences: 143 characters for marshmallow-1867's issue)."""


def _words(text: str) -> str:
    return " ".join(text.split())


def _replying(item: Item) -> bool:
    return isinstance(item, FunctionCall) or (
        isinstance(item, Message) and item.role == "assistant"
    )


@dataclass
class SessionChecker:
    """Rows a, b, d, e, f, g and the order on each request of a recorded session replayed.

    ``ref`` is the session as replayed (instructions first); each request stands for
    ``ref[:upto]``, the history before the reply at ``upto``. Row b: the newest item (the
    newest user input or tool output) last, verbatim (an output larger than the budget may be
    cut with the marker, its head kept), with the other outputs of the newest assistant turn;
    row d: the task (the first user message) verbatim, or its head (``TASK_HEAD`` characters,
    whitespace collapsed: the goal entry is the task clipped at a sentence) in the summary;
    row e: no pairing problem the recorded session does not have itself; order: every item but
    the summary is one of the session's, in the session's order.
    """

    ref: list[Item]
    model: str
    budget: int
    checked: int = 0
    folded: bool = False

    def __post_init__(self) -> None:
        first = self.ref[0]
        assert isinstance(first, Message) and first.role == "system"
        self.instructions = first.text
        self.task = next(i.text for i in self.ref if isinstance(i, Message) and i.role == "user")
        _, problems = validate_items(self.ref, format="responses", mode="repair")
        self.recorded = {(p.kind, p.call_id) for p in problems}

    def check(self, items: Sequence[Item], tools: Sequence[Tool], upto: int) -> None:
        where = f"request {self.checked} (before item {upto})"
        items = list(items)
        texts = [text_of(item) for item in items]
        tokens = counter_for(self.model).count(items, tools=tools).tokens
        assert tokens <= self.budget, f"{where}: {tokens:,} tokens over the budget {self.budget:,}"
        self._newest(texts, upto, where)
        assert isinstance(items[-1], FunctionCallOutput | Message), f"{where}: ends with a call"
        summaries = [item for item in items if is_summary_message(item)]
        joined = _words("\n".join(texts))
        assert _words(self.task)[:TASK_HEAD] in joined, f"{where}: the task is missing"
        _, problems = validate_items(items, format="responses", mode="repair")
        bad = [p for p in problems if (p.kind, p.call_id) not in self.recorded]
        assert not bad, f"{where}: {'; '.join(map(str, bad))}"
        assert len(summaries) <= 1, f"{where}: the summary was sent {len(summaries)} times"
        if summaries:
            self.folded = True
            assert unseal_summary(text_of(summaries[0])) is not None, f"{where}: summary sealed"
        assert summaries or not self.folded, f"{where}: the summary is missing after a fold"
        first = items[0]
        assert isinstance(first, Message) and first.role in ("system", "developer"), where
        assert first.text == self.instructions, f"{where}: the instructions were changed"
        self._order(items, where)
        self.checked += 1

    def _newest(self, texts: list[str], upto: int, where: str) -> None:
        last = max(k for k in range(upto) if k == 0 or _replying(self.ref[k]))
        group = self.ref[last + 1 : upto]
        if not group:
            return
        newest = text_of(group[-1])
        if texts[-1] != newest:
            size = counter_for(self.model).count_text(newest)
            cut = CUT_MARKER in texts[-1] and texts[-1][:100] == newest[:100]
            assert cut and size > self.budget, (
                f"{where}: the newest {type(group[-1]).__name__} ({size:,} tokens) is not last "
                "verbatim"
            )
        tail = texts[-len(group) - 1 :]
        for item in group[:-1]:
            if isinstance(item, FunctionCallOutput):
                assert text_of(item) in tail, f"{where}: an output of the newest turn is missing"

    def _order(self, items: list[Item], where: str) -> None:
        at = 1
        for item in items[1:]:
            if is_summary_message(item):
                continue
            found = next((k for k in range(at, len(self.ref)) if _same(item, self.ref[k])), None)
            assert found is not None, (
                f"{where}: {text_of(item)[:60]!r} is out of order or not recorded"
            )
            at = found + 1


def _same(item: Item, recorded: Item) -> bool:
    """Whether ``item`` as sent is ``recorded`` (a cut output keeps its call and its head)."""
    if isinstance(item, FunctionCall) and isinstance(recorded, FunctionCall):
        return (item.call_id, item.name) == (recorded.call_id, recorded.name)
    if isinstance(item, FunctionCallOutput) and isinstance(recorded, FunctionCallOutput):
        return item.call_id == recorded.call_id
    if isinstance(item, Message) and isinstance(recorded, Message):
        if recorded.role == "system" and item.role == "user":
            # pydantic-ai sends a system prompt after the first message as user text, so tagged
            return item.text == f"<system>{recorded.text}</system>"
        cut = CUT_MARKER in item.text and item.text[:100] == recorded.text[:100]
        return item.role == recorded.role and (item.text == recorded.text or cut)
    return False
