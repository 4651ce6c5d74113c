"""LLM mode: a reader answers the probes from the compacted context only; a judge grades them.

Questions follow Factory's probe types, one per probe type present in the case (a probe with its
own ``question`` is asked on its own); the expected answer is built from the probes. The judge
grades each answer 0-5 on six dimensions (``DIMENSIONS``) and gives its reason; the reasons are
kept in the report. Both prompts are versioned (``READER_PROMPT_VERSION``,
``JUDGE_PROMPT_VERSION``) and part of the cache key. Any ``LLM`` works — ``OpenAIChatLLM``
against any OpenAI-compatible endpoint, or the fakes in ``compactkit.testing``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from compactkit.compressors import LLM
from compactkit.evals._meter import MeteredLLM
from compactkit.evals.schema import (
    ArtifactProbe,
    ConstraintProbe,
    ContinuationProbe,
    DecisionProbe,
    Probe,
    RecallProbe,
    ToolStateProbe,
    UpdateProbe,
)
from compactkit.evals.scoring import item_lines
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, is_summary_message

__all__ = [
    "DIMENSIONS",
    "JUDGE_PROMPT_VERSION",
    "READER_PROMPT_VERSION",
    "Grade",
    "Judge",
    "JudgeResult",
    "questions",
]

READER_PROMPT_VERSION = "reader-v1"
JUDGE_PROMPT_VERSION = "judge-v1"
DIMENSIONS = (
    "accuracy",
    "context_awareness",
    "artifact_trail",
    "completeness",
    "continuity",
    "instruction_following",
)
"""Factory's six grading dimensions, each scored 0-5."""

_QUESTIONS = {
    "constraint": "Quote, word for word, every instruction or constraint the user gave that is still in force.",
    "recall": "List the exact error messages, identifiers (commit shas, ticket and order numbers, URLs, ids) and measured numbers that came up.",
    "artifact": "Which files have been read, created, modified or deleted in this session, and how?",
    "decision": "What was decided and why, and which approaches were tried and abandoned?",
    "continuation": "Where does the work stand right now, and what is the next step?",
    "update": "What are the current values of: {names}?",
    "tool_state": "Which tool calls are still waiting for their results?",
}

_READER = """\
You are an AI agent resuming your own work. Everything you remember of the session is in \
<context> (older parts may have been replaced by a summary). Answer each question from the \
context only; when the context does not say, answer "unknown" — never guess. Reply with JSON \
only: {"answers": [{"id": "<question id>", "answer": "<your answer>"}]}"""

_JUDGE = """\
You grade how well an agent remembers its session after its context was compacted. For each \
question you get the expected answer (the ground truth) and the agent's answer. Score the answer \
0-5 on each dimension: accuracy (technically correct, exact strings right), context_awareness \
(reflects the current state, not superseded values), artifact_trail (knows which files were \
read/changed and how), completeness (covers everything expected), continuity (could continue \
the work without re-reading or redoing), instruction_following (respects the user's \
constraints). Reply with JSON only: {"grades": [{"id": "<question id>", "scores": \
{"accuracy": 0-5, ...all six...}, "reason": "<one or two sentences>"}]}"""


@dataclass(frozen=True)
class Question:
    """One question put to the reader."""

    id: str
    text: str
    expected: str


def _expected(probe: Probe) -> str:
    if isinstance(probe, ConstraintProbe):
        return probe.text
    if isinstance(probe, RecallProbe):
        return probe.fact
    if isinstance(probe, ArtifactProbe):
        return f"{probe.path} ({probe.action}{'; ' + probe.how if probe.how else ''})"
    if isinstance(probe, DecisionProbe):
        return ("abandoned: " if probe.dead_end else "") + probe.decision
    if isinstance(probe, ContinuationProbe):
        return probe.text
    if isinstance(probe, UpdateProbe):
        old = ", ".join(probe.superseded)
        return f"{probe.name} = {probe.current} (superseded: {old})"
    assert isinstance(probe, ToolStateProbe)
    return f"{probe.name} call {probe.call_id}"


def questions(probes: Sequence[Probe]) -> list[Question]:
    """The questions for ``probes``: one per probe type present, plus each custom question."""
    out: list[Question] = []
    grouped: dict[str, list[Probe]] = {}
    for index, probe in enumerate(probes):
        if probe.question:
            out.append(Question(probe.id or f"q{index}", probe.question, _expected(probe)))
        else:
            grouped.setdefault(probe.type, []).append(probe)
    for kind, group in grouped.items():
        names = ", ".join(p.name for p in group if isinstance(p, UpdateProbe))
        text = _QUESTIONS[kind].format(names=names)
        expected = "\n".join(f"- {_expected(p)}" for p in group)
        out.append(Question(kind, text, expected))
    return out


class Grade(BaseModel):
    """The judge's verdict on one answer."""

    model_config = ConfigDict(frozen=True)

    id: str
    """The question id (a probe type, or a probe's id)."""
    question: str
    """What was asked."""
    expected: str
    """The ground truth."""
    answer: str
    """The reader's answer."""
    scores: dict[str, float]
    """0-5 per dimension."""
    reason: str
    """The judge's reason."""


class JudgeResult(BaseModel):
    """The LLM-mode verdict on one compacted context."""

    model_config = ConfigDict(frozen=True)

    grades: tuple[Grade, ...] = ()
    """One per question."""
    dimensions: dict[str, float] = {}
    """Mean score per dimension over the questions."""
    overall: float | None = None
    """Mean over all dimensions (0-5); ``None`` when grading failed."""
    error: str | None = None
    """Why grading failed (an unusable reply, a failed request)."""


def render_context(items: Sequence[Item]) -> str:
    """The compacted context as the reader sees it: one labelled block per item."""
    blocks = []
    for item in items:
        label: str
        if isinstance(item, Message):
            label = "summary" if is_summary_message(item) else item.role
        elif isinstance(item, FunctionCall):
            label = f"tool call {item.call_id}"
        elif isinstance(item, FunctionCallOutput):
            label = f"tool output {item.call_id}"
        else:
            label = "reasoning"
        blocks.append(f"[{label}]\n" + "\n".join(item_lines(item)))
    return "\n\n".join(blocks)


_JSON = re.compile(r"\{.*\}", re.S)


def _json(reply: str, key: str) -> list[dict[str, object]]:
    match = _JSON.search(reply)
    if match is None:
        raise ValueError(f"the reply holds no JSON object: {reply[:120]!r}")
    value = json.loads(match.group(0))
    entries = value.get(key) if isinstance(value, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"the reply's JSON has no {key!r} list")
    return [e for e in entries if isinstance(e, dict)]


class Judge:
    """Reader + judge over any ``LLM``.

    Args:
        reader: Answers the questions from the compacted context.
        judge: Grades the answers (default: the reader's model).
    """

    def __init__(self, reader: LLM, judge: LLM | None = None) -> None:
        self.reader = MeteredLLM(reader)
        self.judge = MeteredLLM(judge or reader)

    @property
    def fingerprint(self) -> str:
        """What identifies this judge in the cache key."""
        return f"{READER_PROMPT_VERSION}/{JUDGE_PROMPT_VERSION}/{self.reader!r}/{self.judge!r}"

    def grade(self, probes: Sequence[Probe], context: Sequence[Item]) -> JudgeResult:
        """Ask, answer and grade; never raises for a failed request or an unusable reply."""
        asked = questions(probes)
        listing = "\n".join(f"[{q.id}] {q.text}" for q in asked)
        try:
            reply = self.reader.complete(
                [
                    {"role": "system", "content": _READER},
                    {
                        "role": "user",
                        "content": f"<context>\n{render_context(context)}\n</context>\n\n"
                        f"<questions>\n{listing}\n</questions>",
                    },
                ]
            )
            answers = {str(a.get("id")): str(a.get("answer", "")) for a in _json(reply, "answers")}
            graded = "\n\n".join(
                f"[{q.id}] {q.text}\nExpected:\n{q.expected}\nAnswer:\n{answers.get(q.id, '(no answer)')}"
                for q in asked
            )
            verdict = self.judge.complete(
                [{"role": "system", "content": _JUDGE}, {"role": "user", "content": graded}]
            )
            raw = {str(g.get("id")): g for g in _json(verdict, "grades")}
        except Exception as exc:  # a failed or unusable reply is a result, not a crash
            return JudgeResult(error=f"{type(exc).__name__}: {exc}")
        grades = []
        for q in asked:
            entry = raw.get(q.id, {})
            scores_in = entry.get("scores")
            scores = {
                d: _score(scores_in.get(d)) if isinstance(scores_in, dict) else 0.0
                for d in DIMENSIONS
            }
            grades.append(
                Grade(
                    id=q.id,
                    question=q.text,
                    expected=q.expected,
                    answer=answers.get(q.id, ""),
                    scores=scores,
                    reason=str(entry.get("reason", "no grade given")),
                )
            )
        dims = {d: sum(g.scores[d] for g in grades) / len(grades) for d in DIMENSIONS}
        return JudgeResult(
            grades=tuple(grades), dimensions=dims, overall=sum(dims.values()) / len(dims)
        )


def _score(value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    return min(5.0, max(0.0, number))
