"""What fits: token counters and model profiles.

Owns exact offline token counting (``tokens``) and the per-model context windows, output
reserves and budget policies (``profiles`` and the bundled, cited ``profiles.toml``). Imports
only ``items`` and ``errors``.
"""

from compactkit.budget._encodings import LINE_ADDITIVE, line_pieces
from compactkit.budget.profile import (
    Counting,
    MessageRules,
    Prices,
    PromptCaching,
    ToolSchemaRules,
)
from compactkit.budget.profiles import (
    DEFAULT_RESERVED_OUTPUT,
    PROFILES_ENV,
    Budget,
    BudgetPolicy,
    ModelProfile,
    ProfileRegistry,
    budget_for,
    default_registry,
    get_profile,
)
from compactkit.budget.tokens import (
    EstimateCounter,
    TiktokenCounter,
    TokenCount,
    TokenCounter,
    counter_for,
    get_encoding,
    image_tokens,
)

__all__ = [
    "DEFAULT_RESERVED_OUTPUT",
    "LINE_ADDITIVE",
    "PROFILES_ENV",
    "Budget",
    "BudgetPolicy",
    "Counting",
    "EstimateCounter",
    "MessageRules",
    "ModelProfile",
    "ProfileRegistry",
    "Prices",
    "PromptCaching",
    "TiktokenCounter",
    "TokenCount",
    "TokenCounter",
    "ToolSchemaRules",
    "budget_for",
    "counter_for",
    "default_registry",
    "get_encoding",
    "get_profile",
    "image_tokens",
    "line_pieces",
]
