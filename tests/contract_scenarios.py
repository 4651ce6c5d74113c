"""The scenarios of the request-contract suite, and the scripted model that plays them.

A ``Brain`` is the model every entry point talks to (through HTTP, a LangChain chat model, a
pydantic-ai ``FunctionModel`` or a ``Governor`` loop): given a request as compactkit items, it
checks the contract on it (``RequestChecker``) and decides the reply — tool calls while the
scenario's run has steps left, then a text answer. The user gives a rule at step 0 (in the task)
and another with the second run's input at the middle step; each run ends with an answer.
"""

from __future__ import annotations

import json
import lzma
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from contract_support import RequestChecker

from compactkit.budget import budget_for, counter_for
from compactkit.items import FunctionCallOutput, Item, Tool

MODEL = "gpt-4"  # an 8,192-token window: 6,021 usable input tokens
BUDGET = budget_for(MODEL).usable_input
COUNTER = counter_for(MODEL)
INSTRUCTIONS = "You are a careful coding agent. Be brief."
TASK_TAG = "TASK-5150"
RULES = ("Always answer in French (rule RULE-0A).", "Never edit setup.py (rule RULE-20B).")
TASK = f"{TASK_TAG}: read every part of the report, one call at a time. {RULES[0]}"


@dataclass(frozen=True)
class Scenario:
    """One conversation: ``steps`` tool rounds over two runs (the second starts with a rule)."""

    name: str
    steps: int = 40
    parallel: int = 1
    """Calls per round."""
    sizes: tuple[int, int] = (1_000, 3_000)
    """Output sizes in tokens (drawn per call)."""
    huge_at: int | None = None
    """A round whose (single) output is larger than the whole budget."""
    failing_summarizer: bool = False
    fault: str | None = None
    """A misbehaving LLM summarizer (``FAULTS``), with the digest as its fallback: the
    guaranteed-progress contract (docs/control.md) must hold through it."""
    resumed: bool = False
    """The second run continues the session from its store, in a new object."""
    real: bool = False
    """The tool returns real outputs, in order: what a real agent's bash calls printed
    (``REAL_OUTPUTS``), untrimmed; one larger than a request can hold may be cut."""

    @property
    def middle(self) -> int:
        return self.steps // 2


SCENARIOS = [
    Scenario("long-tool-loop"),  # 40 rounds: rules at step 0 and 20
    Scenario("parallel-calls", steps=10, parallel=3, sizes=(300, 900)),
    Scenario("output-over-budget", steps=8, huge_at=3),
    Scenario("failing-summarizer", steps=12, failing_summarizer=True),
    Scenario("resumed-from-store", steps=10, resumed=True),
    Scenario("real-outputs", steps=32, real=True),
]

FAULTS = {
    "bigger-than-its-source": "a summary far larger than the span it replaces",
    "empty": "an empty answer",
    "refusal": "a refusal instead of a summary",
    "ten-500s": "ten consecutive HTTP 500s (transient), then good answers",
    "small-window": "a summarizer window smaller than the span (it is cut into chunks)",
    "refusal-unreachable-fallback": (
        "a refusal, and a digest fallback aiming at a target (2,500 tokens) the newest group "
        "alone exceeds while the budget has room: the goal and rules must stay"
    ),
}
"""Summarizer faults of the guaranteed-progress suite (issue 29), each played at every entry
point."""

FAULT_SCENARIOS = [Scenario(f"fault-{name}", steps=12, fault=name) for name in FAULTS]


REAL_OUTPUTS = (
    Path(__file__).resolve().parent.parent
    / "evals"
    / "benchmarks"
    / "data"
    / "mini-swe-agent-deepseek.jsonl.xz"
)
"""Real agent trajectories (mini-SWE-agent on SWE-bench; source and licence in the README
beside it): the ``real`` scenario's tool outputs are theirs."""


@cache
def real_outputs(count: int = 64) -> tuple[str, ...]:
    """The first ``count`` non-empty tool outputs of the real trajectories, in order."""
    found: list[str] = []
    with lzma.open(REAL_OUTPUTS, "rt", encoding="utf-8") as lines:
        for line in lines:
            message = json.loads(line)
            if message["role"] == "tool" and message["content"].strip():
                found.append(message["content"])
                if len(found) == count:
                    break
    return tuple(found)


def too_big(text: str) -> bool:
    """Whether an output cannot be sent whole beside the instructions, task, rules and a
    summary: it may then be cut (with the marker), as ``huge_at``'s is."""
    return COUNTER.count_text(text) > BUDGET - 1_500


def output(n: int, scenario: Scenario) -> str:
    """What ``read(n)`` returns: varied facts of a drawn size (or a real output), ending in a
    unique marker."""
    if scenario.real:
        return real_outputs()[n % len(real_outputs())] + f"\nPART-{n:04d}"
    rng = random.Random(n)
    tokens = 9_000 if n == scenario.huge_at else rng.randint(*scenario.sizes)
    lines: list[str] = []
    size = 0
    while size < tokens:
        k = rng.randrange(10**6)
        lines.append(f"src/pkg{k % 97}/mod_{k}.py:{k % 400}: value {k} (ticket T-{k % 9999})")
        size += COUNTER.count_text(lines[-1]) + 1
    return "\n".join(lines) + f"\nPART-{n:04d}"


@dataclass
class Reply:
    """What the model answers: calls ``(name, arguments, call id)`` or a text."""

    calls: list[tuple[str, dict[str, int], str]] = field(default_factory=list)
    text: str | None = None


@dataclass
class Brain:
    """The scripted model of one conversation (see the module docstring)."""

    scenario: Scenario
    budget: int = BUDGET
    instructions: str | None = INSTRUCTIONS
    checker: RequestChecker = field(init=False)
    rounds: int = 0
    answered: int = 0
    requests: int = 0
    where: str = ""
    summarizer_calls: int = 0
    """Calls the scenario's LLM summarizer received (``failing_summarizer``, ``fault``)."""
    summarizer_log: list[int] = field(default_factory=list)
    """For each summarizer call, the model requests made before it (calls between two model
    requests belong to one governance step)."""

    def __post_init__(self) -> None:
        self.checker = RequestChecker(
            MODEL,
            self.budget,
            instructions=self.instructions,
            task=TASK_TAG,
            rules=["RULE-0A"],
            newest=[TASK],
        )

    @property
    def second_input(self) -> str:
        return f"Go on with the other half. {RULES[1]}"

    def reply(self, items: Sequence[Item], tools: Sequence[Tool] = ()) -> Reply:
        """Check the request, then answer it."""
        self.checker.check(items, tools, where=f"{self.scenario.name} {self.where}")
        self.requests += 1
        end_of_run = self.scenario.middle if self.answered == 0 else self.scenario.steps
        if self.rounds >= end_of_run:
            self.answered += 1
            self.checker.newest = [self.second_input]  # what the user says next
            self.checker.cut_allowed = False
            if self.answered == 1:
                self.checker.rules.append("RULE-20B")
            return Reply(text=f"Fini, partie {self.answered}.")
        first = self.rounds * self.scenario.parallel
        numbers = range(first, first + self.scenario.parallel)
        self.rounds += 1
        self.checker.newest = [output(n, self.scenario) for n in numbers]
        self.checker.cut_allowed = self.scenario.huge_at in numbers or any(
            too_big(text) for text in self.checker.newest
        )
        return Reply(calls=[("read", {"n": n}, f"call_{n}") for n in numbers])

    def tool(self, n: int) -> str:
        """The ``read`` tool."""
        return output(n, self.scenario)

    def done(self) -> None:
        """Assert the whole conversation was played."""
        assert self.answered == 2, f"{self.scenario.name}: {self.answered} answers"
        assert self.rounds == self.scenario.steps
        if self.scenario.real:  # the real outputs outgrew the budget, or it proved nothing
            assert self.checker.folded, f"{self.where}: nothing was folded"
        if self.scenario.failing_summarizer:  # it did fail mid-run, or the scenario proved nothing
            assert self.summarizer_calls > 2, f"{self.where}: the summarizer never failed"


def newest_outputs(items: Sequence[Item]) -> list[str]:
    """The texts of the tool outputs at the end of a request."""
    out: list[str] = []
    for item in reversed(items):
        if not isinstance(item, FunctionCallOutput):
            break
        out.append(item.text)
    return out


def as_chat(reply: Reply) -> dict[str, Any]:
    """``reply`` as a Chat Completions assistant message."""
    import json

    if reply.text is not None:
        return {"role": "assistant", "content": reply.text}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(a)}}
            for name, a, cid in reply.calls
        ],
    }
