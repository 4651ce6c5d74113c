"""The deterministic digest: fold old history into a sectioned summary of exact facts (no LLM).

``compressor`` holds ``DigestCompressor`` (how much to fold, how the target is shared between
the summary and the verbatim tail); ``_extract`` reads the facts out of folded items
(``digest_items``), with ``_files`` for what tool calls and shell commands do to files and
``_merging`` for growing a summary part by part; ``_sizer`` counts a summary's tokens entry by
entry.
"""

from compactkit.compressors.digest._extract import digest_items
from compactkit.compressors.digest.compressor import DigestCompressor

__all__ = ["DigestCompressor", "digest_items"]
