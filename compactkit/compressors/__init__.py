"""Compressors: turn a memory snapshot into a smaller one (see ``MemoryCompressor``).

Deterministic ones: ``WindowedCompressor`` (keep the newest, forget the rest),
``MaskingCompressor`` (old tool outputs become placeholders), ``DigestCompressor`` (fold old
history into a sectioned digest of exact facts) and ``LadderCompressor`` (cheap → expensive until
a token target fits). ``SummaryDocument`` is the sectioned summary they all write and merge into.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compactkit._lazy import lazy_exports

if TYPE_CHECKING:  # what the lazy names below are, for type checkers and IDEs
    from compactkit.compressors.base import CompressorLike, MemoryCompressor
    from compactkit.compressors.digest import DigestCompressor, digest_items
    from compactkit.compressors.function import FunctionCompressor, Takes, as_memory_compressor
    from compactkit.compressors.ladder import LadderCompressor
    from compactkit.compressors.masking import (
        MASK_PREFIX,
        MaskingCompressor,
        is_masked,
        mask_output,
    )
    from compactkit.compressors.provider import (
        ANTHROPIC_COMPACT_BETA,
        ProviderCompactor,
        export_portable,
    )
    from compactkit.compressors.report import FactClass, FactCount, FactReport
    from compactkit.compressors.sections import (
        REFS_NOTE,
        SECTIONS,
        SUMMARY_TITLE,
        SectionKey,
        SectionSpec,
        SummaryDocument,
        without_provenance,
        without_refs,
    )
    from compactkit.compressors.shrink import (
        shortest_summary,
        shrink_summary,
        user_words_summary,
    )
    from compactkit.compressors.summary import (
        LLM,
        PROMPT_VERSION,
        ChatMessage,
        CircuitBreaker,
        OpenAIChatLLM,
        RetryPolicy,
        SummaryCompressor,
        SummaryPlan,
        summary_prompt,
    )
    from compactkit.compressors.window import WindowedCompressor

# Loaded with their module on first use (PEP 562): importing the package costs nothing, and a
# caller that needs one part does not load the others.
_LAZY: dict[str, str] = {
    "ANTHROPIC_COMPACT_BETA": "compactkit.compressors.provider",
    "ProviderCompactor": "compactkit.compressors.provider",
    "export_portable": "compactkit.compressors.provider",
    "DigestCompressor": "compactkit.compressors.digest",
    "FactClass": "compactkit.compressors.report",
    "FactCount": "compactkit.compressors.report",
    "FactReport": "compactkit.compressors.report",
    "FunctionCompressor": "compactkit.compressors.function",
    "Takes": "compactkit.compressors.function",
    "as_memory_compressor": "compactkit.compressors.function",
    "LadderCompressor": "compactkit.compressors.ladder",
    "MASK_PREFIX": "compactkit.compressors.masking",
    "MaskingCompressor": "compactkit.compressors.masking",
    "MemoryCompressor": "compactkit.compressors.base",
    "CompressorLike": "compactkit.compressors.base",
    "REFS_NOTE": "compactkit.compressors.sections",
    "SECTIONS": "compactkit.compressors.sections",
    "SUMMARY_TITLE": "compactkit.compressors.sections",
    "SectionKey": "compactkit.compressors.sections",
    "SectionSpec": "compactkit.compressors.sections",
    "SummaryDocument": "compactkit.compressors.sections",
    "without_provenance": "compactkit.compressors._refs",  # (sections loads its parsers)
    "without_refs": "compactkit.compressors.sections",
    "WindowedCompressor": "compactkit.compressors.window",
    "shortest_summary": "compactkit.compressors.shrink",
    "shrink_summary": "compactkit.compressors.shrink",
    "user_words_summary": "compactkit.compressors.shrink",
    "digest_items": "compactkit.compressors.digest",
    "is_masked": "compactkit.compressors.masking",
    "mask_output": "compactkit.compressors.masking",
    "LLM": "compactkit.compressors.summary",
    "PROMPT_VERSION": "compactkit.compressors.summary",
    "ChatMessage": "compactkit.compressors.summary",
    "CircuitBreaker": "compactkit.compressors.summary",
    "OpenAIChatLLM": "compactkit.compressors.summary",
    "RetryPolicy": "compactkit.compressors.summary",
    "SummaryCompressor": "compactkit.compressors.summary",
    "SummaryPlan": "compactkit.compressors.summary",
    "summary_prompt": "compactkit.compressors.summary",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)


__all__ = [
    "ANTHROPIC_COMPACT_BETA",
    "LLM",
    "MASK_PREFIX",
    "PROMPT_VERSION",
    "REFS_NOTE",
    "SECTIONS",
    "SUMMARY_TITLE",
    "ChatMessage",
    "CircuitBreaker",
    "CompressorLike",
    "DigestCompressor",
    "FactClass",
    "FactCount",
    "FactReport",
    "FunctionCompressor",
    "LadderCompressor",
    "MaskingCompressor",
    "MemoryCompressor",
    "OpenAIChatLLM",
    "ProviderCompactor",
    "RetryPolicy",
    "SectionKey",
    "SectionSpec",
    "SummaryCompressor",
    "SummaryDocument",
    "SummaryPlan",
    "Takes",
    "WindowedCompressor",
    "as_memory_compressor",
    "digest_items",
    "export_portable",
    "is_masked",
    "mask_output",
    "shortest_summary",
    "shrink_summary",
    "summary_prompt",
    "user_words_summary",
    "without_provenance",
    "without_refs",
]
