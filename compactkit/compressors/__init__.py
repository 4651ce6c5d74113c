"""Compressors: turn a memory snapshot into a smaller one (see ``MemoryCompressor``).

Deterministic ones: ``WindowedCompressor`` (keep the newest, forget the rest),
``MaskingCompressor`` (old tool outputs become placeholders), ``DigestCompressor`` (fold old
history into a sectioned digest of exact facts) and ``LadderCompressor`` (cheap → expensive until
a token target fits). ``SummaryDocument`` is the sectioned summary they all write and merge into.
"""

from compactkit.compressors.base import MemoryCompressor
from compactkit.compressors.digest import DigestCompressor, digest_items
from compactkit.compressors.ladder import LadderCompressor
from compactkit.compressors.masking import MASK_PREFIX, MaskingCompressor, is_masked, mask_output
from compactkit.compressors.report import FactClass, FactCount, FactReport
from compactkit.compressors.sections import (
    SECTIONS,
    SUMMARY_TITLE,
    SectionKey,
    SectionSpec,
    SummaryDocument,
)
from compactkit.compressors.window import WindowedCompressor

__all__ = [
    "MASK_PREFIX",
    "SECTIONS",
    "SUMMARY_TITLE",
    "DigestCompressor",
    "FactClass",
    "FactCount",
    "FactReport",
    "LadderCompressor",
    "MaskingCompressor",
    "MemoryCompressor",
    "SectionKey",
    "SectionSpec",
    "SummaryDocument",
    "WindowedCompressor",
    "digest_items",
    "is_masked",
    "mask_output",
]
