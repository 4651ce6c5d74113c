"""The token prices of what no text encoding counts: images (OpenAI's documented tile formula),
raw parts such as audio and files, and the opaque payloads of encrypted reasoning and provider
compactions (estimated by size). Both counters use them; they are kept apart from
``tokens.py`` so that module holds the counters and the billing rules for text."""

from __future__ import annotations

import json
import math

from compactkit.items import ImagePart, ProviderCompaction, RawPart, Reasoning


def image_tokens(part: ImagePart) -> int:
    """OpenAI's documented image cost for GPT-4o-class models.

    ``low`` detail costs 85 tokens. Otherwise the image is scaled to fit 2048x2048, then its
    shortest side to 768, and costs 85 + 170 per 512-pixel tile. Without known dimensions a
    1024x1024 image (765 tokens) is assumed.
    """
    if part.detail == "low":
        return 85
    width: float = part.width or 1024
    height: float = part.height or 1024
    scale = min(1.0, 2048 / max(width, height))
    width, height = width * scale, height * scale
    scale = min(1.0, 768 / min(width, height))
    tiles = math.ceil(width * scale / 512) * math.ceil(height * scale / 512)
    return 85 + 170 * tiles


def raw_tokens(part: RawPart) -> int:
    # Unmodelled parts (audio, files): a rough size-based estimate, labelled approximate.
    return math.ceil(len(json.dumps(part.data, separators=(",", ":"))) / 4)


def opaque_tokens(item: Reasoning | ProviderCompaction) -> int:
    # Encrypted reasoning and provider compactions are re-sent but their billing is
    # undocumented: estimate by size.
    encrypted = item.payload.get("encrypted_content") or item.payload.get("data") or ""
    return math.ceil(len(str(encrypted)) / 4)
