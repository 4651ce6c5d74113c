"""The runner's recall mode: a probe is *recoverable* when the compacted context holds it, or
one ``recall`` call whose query is the probe's own words finds an item that holds it.

Deterministic, no LLM. The archive is the transcript as an in-process memory would hold it
after the compaction: every transcript item (seqs 1..n) in its history, those the compacted
context still holds verbatim active, the compacted summary as its summary — so ``recall`` searches exactly what ``InMemoryMemory.recall`` would after this
compaction. Probes whose fact is a phrase (``recall``: the fact, ``artifact``: the path,
``constraint``: the text) are searched; the others count as recoverable only when kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from compactkit.evals.schema import ArtifactProbe, ConstraintProbe, RecallProbe
from compactkit.evals.scoring import ProbeScore, item_lines, normalize
from compactkit.items import Item, MemorySnapshot
from compactkit.memory import InMemoryMemory

__all__ = ["RECALL_LIMIT", "recoverable"]

RECALL_LIMIT = 5
"""Hits the one recall call per probe returns (what an agent's recall tool shows by default)."""


def recoverable(
    scores: Sequence[ProbeScore], transcript: Sequence[Item], compacted: MemorySnapshot
) -> dict[str, tuple[int, int]]:
    """Per class, ``(recoverable, total)`` for the scored probes of one run."""
    memory = InMemoryMemory()
    history = [item.model_copy(update={"seq": k}) for k, item in enumerate(transcript, 1)]
    in_context = {_key(item) for item in compacted.items}
    active = [item for item in history if _key(item) in in_context]
    memory.restore(MemorySnapshot(summary=compacted.summary, items=active), history=history)
    out: dict[str, tuple[int, int]] = {}
    for score in scores:
        found = score.kept or _found(memory, score)
        kept, total = out.get(score.cls, (0, 0))
        out[score.cls] = (kept + int(found), total + 1)
    return out


def _key(item: Item) -> str:
    return item.model_dump_json(exclude={"seq", "pinned"})


def _found(memory: InMemoryMemory, score: ProbeScore) -> bool:
    probe = score.probe
    if isinstance(probe, RecallProbe):
        words = probe.fact
    elif isinstance(probe, ArtifactProbe):
        words = probe.path
    elif isinstance(probe, ConstraintProbe):
        words = probe.text
    else:
        return False
    wanted = normalize(words)
    try:
        hits = memory.recall(words, limit=RECALL_LIMIT)
    except ValueError:  # a fact without words (punctuation only) cannot be searched for
        return False
    texts = ("\n".join(item_lines(h.item)) if h.item is not None else h.text for h in hits)
    return any(wanted in normalize(text) for text in texts)
