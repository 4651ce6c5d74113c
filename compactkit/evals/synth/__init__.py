"""Seeded synthetic agent sessions with planted, labelled facts of every probe class.

``generate(SynthSpec(domain="coding", style="bash", size_tokens=80_000, seed=3))`` returns a
``Case``: the transcript (in the spec's format) and one probe per planted fact — the user's
constraints, every file read / created / modified / deleted (from the tool calls themselves),
every error line, identifier and number, the decisions and dead ends, the values that changed,
the current state and next step, and a pending call. Between them sit bulky outputs (logs,
listings, tables, one huge single output), parallel calls and non-ASCII text.

Three domains (``coding``, ``data``, ``support``) and four agent styles (``typed``, ``bash``,
``editor``, ``react``; see ``compactkit.evals.synth._styles``). The same spec always gives the
same bytes; sizes are approximate (within a few percent, the last episode and the ending may
overshoot).
"""

from __future__ import annotations

import random
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from compactkit.evals.schema import Case
from compactkit.evals.synth._coding import Coding
from compactkit.evals.synth._data import Data
from compactkit.evals.synth._domain import Domain
from compactkit.evals.synth._plot import Plot
from compactkit.evals.synth._styles import STYLES, StyleName
from compactkit.evals.synth._support import Support
from compactkit.formats import Transcript, dump_transcript

__all__ = ["DOMAINS", "STYLES", "DomainName", "StyleName", "SynthSpec", "generate"]

DomainName: TypeAlias = Literal["coding", "data", "support"]
DOMAINS: tuple[DomainName, ...] = ("coding", "data", "support")
_DOMAINS: dict[str, type[Domain]] = {"coding": Coding, "data": Data, "support": Support}


class SynthSpec(BaseModel):
    """What to generate; every field is part of the seed, so one spec is one transcript."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    domain: DomainName = "coding"
    """The kind of work: ``coding``, ``data`` (analysis) or ``support`` (customer tickets)."""
    style: StyleName = "typed"
    """How the agent acts: ``typed`` tools, one ``bash`` tool, an ``editor`` tool, ``react`` text."""
    size_tokens: int = Field(default=30_000, ge=2_000, le=1_000_000)
    """The transcript's approximate size in request tokens (o200k_base)."""
    seed: int = 0
    """Different seeds give different sessions of the same shape."""
    format: Literal["chat", "responses", "anthropic"] = "chat"
    """The transcript format written into the case."""
    target_tokens: int | None = Field(default=None, gt=0)
    """The case's compression target (default: a twelfth of the size, at least 800)."""
    id: str | None = None
    """The case id (default: ``domain-style-size-sSEED``)."""


def generate(spec: SynthSpec) -> Case:
    """The case ``spec`` describes (deterministic: same spec, same case)."""
    rng = random.Random(
        f"compactkit-synth-v1:{spec.domain}:{spec.style}:{spec.size_tokens}:{spec.seed}"
    )
    builder = Plot(_DOMAINS[spec.domain](), spec.style, spec.size_tokens, rng).write()
    transcript = dump_transcript(Transcript(builder.items, builder.tools, "chat"), to=spec.format)
    size = f"{spec.size_tokens // 1000}k"
    return Case(
        id=spec.id or f"{spec.domain}-{spec.style}-{size}-s{spec.seed}",
        description=f"synthetic {spec.domain} session, {spec.style} agent, ~{size} tokens",
        domain=spec.domain,
        style=spec.style,
        tags=("synthetic",),
        transcript=transcript,
        format=spec.format,
        target_tokens=spec.target_tokens or max(800, spec.size_tokens // 12),
        probes=tuple(builder.probes),
    )
