"""A labelled character-based estimate, for models without a local tokenizer."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from compactkit.budget._counting import _BaseCounter
from compactkit.budget._inputs import check_text, check_tools
from compactkit.budget._parts import image_tokens, opaque_tokens, raw_tokens
from compactkit.errors import ConfigError
from compactkit.items import (
    FunctionCall,
    FunctionCallOutput,
    ImagePart,
    Item,
    Message,
    RawPart,
    Tool,
)


class EstimateCounter(_BaseCounter):
    """A labelled estimate for models without a local tokenizer: characters / ratio.

    Args:
        chars_per_token: Average characters per token for the model family.
        model: The model counted for.
        tokens_per_message: Overhead charged per item.
    """

    def __init__(
        self,
        chars_per_token: float = 3.5,
        *,
        model: str | None = None,
        tokens_per_message: int = 3,
    ) -> None:
        if chars_per_token <= 0:
            raise ConfigError(f"chars_per_token must be positive, got {chars_per_token!r}")
        super().__init__()
        self.chars_per_token = chars_per_token
        self.model = model
        self.tokens_per_message = tokens_per_message

    @property
    def encoding_name(self) -> None:
        """Always ``None``: this is an estimate."""
        return None

    def count_text(self, text: str) -> int:
        """Estimated tokens of ``text`` (rounded up)."""
        check_text(text)
        return math.ceil(len(text) / self.chars_per_token)

    def count_overhead(self, tools: Sequence[Tool] = ()) -> int:
        """Reply priming plus the serialised tool schemas."""
        check_tools(tools)
        schemas = [t.model_dump(mode="json", exclude_none=True) for t in tools]
        return 3 + (self.count_text(json.dumps(schemas)) if tools else 0)

    def _price(self, item: Item) -> int:
        if isinstance(item, FunctionCall):
            text = item.name + item.arguments
        elif isinstance(item, Message | FunctionCallOutput):
            content = item.content if isinstance(item, Message) else item.output
            text = item.text
            if not isinstance(content, str):
                extra = sum(image_tokens(p) for p in content if isinstance(p, ImagePart))
                extra += sum(raw_tokens(p) for p in content if isinstance(p, RawPart))
                return self.tokens_per_message + self.count_text(text) + extra
        else:
            return self.count_text(item.text) + opaque_tokens(item)
        return self.tokens_per_message + self.count_text(text)

    def _approximation(self, item: Item) -> str | None:
        return "no local tokenizer for this model: character-based estimate"

    def _tools_approximation(self, tools: Sequence[Tool]) -> list[str]:
        return ["no local tokenizer for this model: character-based estimate"] if tools else []
