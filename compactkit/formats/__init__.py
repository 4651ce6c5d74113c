"""Adapters between compactkit items and the providers' wire formats, and their validators.

One module per format (``chat``, ``responses``, ``anthropic``), each converting both ways and
refusing — or, when lossy, dropping and reporting — what its format cannot express; ``validate``
checks a prompt against the target format's tool-call rules. See docs/formats.md.
"""

from compactkit.formats._common import describe, shown
from compactkit.formats._sdk import is_sdk_object, sdk_format, sdk_inputs, to_plain
from compactkit.formats.anthropic import (
    AnthropicPrompt,
    anthropic_to_items,
    items_to_anthropic,
    tools_from_anthropic,
    tools_to_anthropic,
)
from compactkit.formats.anthropic_cache import CachedAnthropicPrompt, add_cache_breakpoints
from compactkit.formats.chat import (
    ChatProblem,
    chat_to_items,
    items_to_chat,
    tools_from_chat,
    tools_to_chat,
    validate_chat,
)
from compactkit.formats.responses import (
    items_to_responses,
    responses_to_items,
    tools_from_responses,
    tools_to_responses,
)
from compactkit.formats.transcript import (
    FORMATS,
    Dropped,
    Format,
    Transcript,
    dump_transcript,
    load_transcript,
    parse_transcript,
)
from compactkit.formats.validate import (
    ProblemKind,
    PromptProblem,
    validate_anthropic,
    validate_items,
    validate_responses,
)

__all__ = [
    "FORMATS",
    "AnthropicPrompt",
    "CachedAnthropicPrompt",
    "ChatProblem",
    "Dropped",
    "Format",
    "ProblemKind",
    "PromptProblem",
    "Transcript",
    "add_cache_breakpoints",
    "anthropic_to_items",
    "chat_to_items",
    "describe",
    "dump_transcript",
    "is_sdk_object",
    "items_to_anthropic",
    "items_to_chat",
    "items_to_responses",
    "load_transcript",
    "parse_transcript",
    "responses_to_items",
    "sdk_format",
    "sdk_inputs",
    "shown",
    "to_plain",
    "tools_from_anthropic",
    "tools_from_chat",
    "tools_from_responses",
    "tools_to_anthropic",
    "tools_to_chat",
    "tools_to_responses",
    "validate_anthropic",
    "validate_chat",
    "validate_items",
    "validate_responses",
]
