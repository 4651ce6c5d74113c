"""Compressors: turn a memory snapshot into a smaller one (see ``MemoryCompressor``)."""

from compactkit.compressors.base import MemoryCompressor

__all__ = ["MemoryCompressor"]
