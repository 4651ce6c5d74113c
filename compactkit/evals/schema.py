"""The eval case schema (version 1): a transcript plus typed probes of what must survive.

A *case* is one agent conversation (in any of the three transcript formats) and the facts a
compacted context must still hold for the agent to go on. Each probe is one labelled fact:

============  =================================================================  ===================
type          what it checks                                                     retention class
============  =================================================================  ===================
constraint    the user's instruction ``text``, verbatim                           ``constraint``
recall        an exact ``fact`` (an error line, an identifier, a number)         ``error``,
                                                                                  ``identifier``,
                                                                                  ``recall``
artifact      a file the agent touched (``path``) and how (``action``)            ``artifact_modified``
                                                                                  (created, modified,
                                                                                  deleted) or
                                                                                  ``artifact_read``
decision      what was decided and why, or a dead end: every ``must_include``    ``decision``
continuation  the current state or the next step: every ``must_include``         ``continuation``
update        a value that changed: only ``current`` is current                  ``update``
tool_state    a call still waiting for its output (``call_id``)                   ``tool_state``
============  =================================================================  ===================

What is *current* and what is *superseded* is defined here, by the probe, never by how a
compressor words its summary: an ``update`` probe names the fact (``name`` and ``aliases``), its
``current`` value and its ``superseded`` values; the scorer (``compactkit.evals.scoring``) decides
which value the compacted context presents as current by reading it in order.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "CLASSES",
    "SCHEMA_VERSION",
    "ArtifactProbe",
    "Case",
    "ConstraintProbe",
    "ContinuationProbe",
    "DecisionProbe",
    "Probe",
    "ProbeType",
    "RecallProbe",
    "ToolStateProbe",
    "UpdateProbe",
    "probe_class",
]

SCHEMA_VERSION: Literal[1] = 1
"""The version of the case schema this compactkit reads and writes."""

ProbeType: TypeAlias = Literal[
    "constraint", "recall", "artifact", "decision", "continuation", "update", "tool_state"
]

CLASSES: tuple[str, ...] = (
    "constraint",
    "artifact_modified",
    "artifact_read",
    "error",
    "identifier",
    "recall",
    "decision",
    "continuation",
    "update",
    "tool_state",
)
"""The retention classes reported per compressor, in report order."""


class _Probe(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str | None = None
    """A stable name for the probe (defaults to its type and position)."""
    question: str | None = None
    """The question the LLM reader is asked (default: derived from the probe)."""
    at: int | None = Field(default=None, ge=0)
    """The index, in the case's transcript items, of the item that first shows the fact (set
    by the mechanical probes of imported logs; ``None`` for hand-written probes)."""


def _non_empty(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


class ConstraintProbe(_Probe):
    """An instruction of the user's that must survive verbatim."""

    type: Literal["constraint"] = "constraint"
    text: str
    """The instruction, exactly as the user wrote it."""

    _check = field_validator("text")(_non_empty)


class RecallProbe(_Probe):
    """An exact fact: an error line, an identifier, a number with its unit."""

    type: Literal["recall"] = "recall"
    fact: str
    """The exact text that must be in the compacted context."""
    kind: Literal["error", "identifier", "number", "task", "command", "other"] = "other"
    """What the fact is; ``error`` and ``identifier`` are their own retention classes, the
    others (the task, a command run, a number) are reported as ``recall``."""
    resolved: bool | None = None
    """Errors: whether a later run of the same tool on the same target succeeded."""

    _check = field_validator("fact")(_non_empty)


class ArtifactProbe(_Probe):
    """A file the agent read, created, modified or deleted (the tool-call ground truth)."""

    type: Literal["artifact"] = "artifact"
    path: str
    """The file's path as the agent wrote it."""
    action: Literal["read", "created", "modified", "deleted"]
    """The strongest thing done to it (deleted > created > modified > read)."""
    how: str | None = None
    """How it was changed, in words (for the LLM judge; not checked deterministically)."""

    _check = field_validator("path")(_non_empty)


class DecisionProbe(_Probe):
    """A decision with its reason, or an abandoned approach (``dead_end``)."""

    type: Literal["decision"] = "decision"
    decision: str
    """What was decided (or tried and abandoned), in words."""
    why: str | None = None
    """The reason, in words."""
    must_include: tuple[str, ...] = Field(min_length=1)
    """Exact phrases the compacted context must hold for the decision to count as kept."""
    dead_end: bool = False
    """Whether this is an approach that was abandoned."""


class ContinuationProbe(_Probe):
    """Where the work stands, or what comes next."""

    type: Literal["continuation"] = "continuation"
    aspect: Literal["state", "next_step"]
    """Which of the two this probe checks."""
    text: str
    """The state or the step, in words."""
    must_include: tuple[str, ...] = Field(min_length=1)
    """Exact phrases the compacted context must hold."""


class UpdateProbe(_Probe):
    """A fact whose value changed: only the newest value is current."""

    type: Literal["update"] = "update"
    name: str
    """How the fact is named (``max_retries``, ``delivery address``)."""
    aliases: tuple[str, ...] = ()
    """Other names the conversation uses for it."""
    current: str
    """The newest value."""
    superseded: tuple[str, ...] = Field(min_length=1)
    """Older values, oldest first; presenting one of them as current is an error."""

    _check = field_validator("name", "current")(_non_empty)


class ToolStateProbe(_Probe):
    """A tool call still waiting for its output when the conversation ends."""

    type: Literal["tool_state"] = "tool_state"
    call_id: str
    """The pending call's id."""
    name: str
    """The tool's name."""


Probe: TypeAlias = Annotated[
    ConstraintProbe
    | RecallProbe
    | ArtifactProbe
    | DecisionProbe
    | ContinuationProbe
    | UpdateProbe
    | ToolStateProbe,
    Field(discriminator="type"),
]


def probe_class(probe: Probe) -> str:
    """The retention class a probe is reported under (one of ``CLASSES``)."""
    if isinstance(probe, RecallProbe):
        return probe.kind if probe.kind in ("error", "identifier") else "recall"
    if isinstance(probe, ArtifactProbe):
        return "artifact_read" if probe.action == "read" else "artifact_modified"
    return probe.type


class Case(BaseModel):
    """One eval case: a transcript and the probes its compacted context must answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    """The schema version the case was written for."""
    id: str
    """Unique within its suite."""
    description: str = ""
    """What the case is about."""
    domain: str | None = None
    """``coding``, ``data``, ``support`` or your own label."""
    style: str | None = None
    """The agent style (``typed``, ``bash``, ``editor``, ``react`` or your own label)."""
    tags: tuple[str, ...] = ()
    """Free labels for filtering."""
    transcript: Any = None
    """The conversation inline, in any transcript format (see ``compactkit.load_transcript``)."""
    transcript_file: str | None = None
    """Or a transcript file, relative to the suite file."""
    format: Literal["chat", "responses", "anthropic"] | None = None
    """The transcript's format (default: detected)."""
    model: str = "gpt-4o"
    """The model whose token counting and profile apply."""
    target_tokens: int | None = Field(default=None, gt=0)
    """The whole-request size compressors must reach (default: a tenth of the transcript)."""
    probes: tuple[Probe, ...] = Field(min_length=1)
    """What the compacted context must still hold."""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        return _non_empty(value)

    @model_validator(mode="after")
    def _one_transcript(self) -> Case:
        if (self.transcript is None) == (self.transcript_file is None):
            raise ValueError("give exactly one of 'transcript' (inline) or 'transcript_file'")
        return self
